"""Metrics: client-go's metrics_test.go cases against a private Prometheus registry."""

import gc

import pytest
from prometheus_client import CollectorRegistry

from kube.clock import FakeClock
from workqueue import DelayingQueue, NoopMetricsProvider, PrometheusMetricsProvider, Queue


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def provider(registry: CollectorRegistry) -> PrometheusMetricsProvider:
    return PrometheusMetricsProvider(registry)


def sample(registry: CollectorRegistry, metric: str, name: str = "test") -> float | None:
    return registry.get_sample_value(metric, {"name": name})


def test_adds_and_depth_count_items_that_became_dirty(
    registry: CollectorRegistry, provider: PrometheusMetricsProvider, clock: FakeClock
) -> None:
    q: Queue[str] = Queue(name="test", metrics_provider=provider, clock=clock)
    q.add("foo")
    q.add("bar")
    q.add("foo")  # collapsed: not counted
    assert sample(registry, "workqueue_adds_total") == 2
    assert sample(registry, "workqueue_depth") == 2
    q.get()
    assert sample(registry, "workqueue_depth") == 1


def test_queue_duration_is_the_time_from_add_to_get(
    registry: CollectorRegistry, provider: PrometheusMetricsProvider, clock: FakeClock
) -> None:
    q: Queue[str] = Queue(name="test", metrics_provider=provider, clock=clock)
    q.add("foo")
    clock.step(0.5)
    q.add("foo")  # a collapsed add does not restart the clock
    clock.step(0.5)
    q.get()
    assert sample(registry, "workqueue_queue_duration_seconds_count") == 1
    assert sample(registry, "workqueue_queue_duration_seconds_sum") == 1.0


def test_work_duration_is_the_time_from_get_to_done(
    registry: CollectorRegistry, provider: PrometheusMetricsProvider, clock: FakeClock
) -> None:
    q: Queue[str] = Queue(name="test", metrics_provider=provider, clock=clock)
    q.add("foo")
    item, _ = q.get()
    clock.step(2.0)
    q.done(item)
    assert sample(registry, "workqueue_work_duration_seconds_count") == 1
    assert sample(registry, "workqueue_work_duration_seconds_sum") == 2.0


def test_unfinished_work_and_longest_running_processor_are_computed_at_scrape(
    registry: CollectorRegistry, provider: PrometheusMetricsProvider, clock: FakeClock
) -> None:
    q: Queue[str] = Queue(name="test", metrics_provider=provider, clock=clock)
    q.add("foo")
    q.add("bar")
    foo, _ = q.get()
    clock.step(1.0)
    bar, _ = q.get()
    clock.step(2.0)
    assert sample(registry, "workqueue_unfinished_work_seconds") == 5.0
    assert sample(registry, "workqueue_longest_running_processor_seconds") == 3.0
    q.done(foo)
    q.done(bar)
    assert sample(registry, "workqueue_unfinished_work_seconds") == 0.0
    assert sample(registry, "workqueue_longest_running_processor_seconds") == 0.0


def test_retries_count_every_add_after(
    registry: CollectorRegistry, provider: PrometheusMetricsProvider, clock: FakeClock
) -> None:
    q: DelayingQueue[str] = DelayingQueue(name="test", metrics_provider=provider, clock=clock)
    try:
        q.add_after("foo", 0.5)
        q.add_after("foo", 0.0)
        assert sample(registry, "workqueue_retries_total") == 2
    finally:
        q.shut_down()


def test_queues_are_labelled_by_name(
    registry: CollectorRegistry, provider: PrometheusMetricsProvider, clock: FakeClock
) -> None:
    first: Queue[str] = Queue(name="first", metrics_provider=provider, clock=clock)
    second: Queue[str] = Queue(name="second", metrics_provider=provider, clock=clock)
    first.add("foo")
    second.add("foo")
    second.add("bar")
    assert sample(registry, "workqueue_depth", "first") == 1
    assert sample(registry, "workqueue_depth", "second") == 2


def test_unnamed_queue_records_no_metrics(registry: CollectorRegistry, provider: PrometheusMetricsProvider) -> None:
    q: Queue[str] = Queue(metrics_provider=provider)
    q.add("foo")
    assert sample(registry, "workqueue_adds_total", "") is None


def test_noop_provider_leaves_the_queue_working() -> None:
    q: Queue[str] = Queue(name="test", metrics_provider=NoopMetricsProvider())
    q.add("foo")
    item, _ = q.get()
    q.done(item)
    q.update_unfinished_work()
    assert q.len() == 0


def test_provider_does_not_keep_a_discarded_queue_alive(
    registry: CollectorRegistry, provider: PrometheusMetricsProvider, clock: FakeClock
) -> None:
    q: Queue[str] = Queue(name="test", metrics_provider=provider, clock=clock)
    q.add("foo")
    q.get()
    clock.step(1.0)
    assert sample(registry, "workqueue_unfinished_work_seconds") == 1.0
    del q
    gc.collect()
    clock.step(1.0)
    # The queue is gone, so nothing refreshes its gauge: the last scraped value stays.
    assert sample(registry, "workqueue_unfinished_work_seconds") == 1.0


def test_provider_exposes_client_go_metric_names(
    registry: CollectorRegistry, provider: PrometheusMetricsProvider, clock: FakeClock
) -> None:
    q: DelayingQueue[str] = DelayingQueue(name="test", metrics_provider=provider, clock=clock)
    try:
        q.add_after("foo", 0.0)
        item, _ = q.get()
        q.done(item)
    finally:
        q.shut_down()
    names = {s.name for family in registry.collect() for s in family.samples}
    expected = {
        "workqueue_depth",
        "workqueue_adds_total",
        "workqueue_queue_duration_seconds_count",
        "workqueue_work_duration_seconds_count",
        "workqueue_unfinished_work_seconds",
        "workqueue_longest_running_processor_seconds",
        "workqueue_retries_total",
    }
    assert expected <= names
