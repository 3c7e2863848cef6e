"""Metrics hooks for the work queue, with client-go's metric names.

client-go keeps metrics out of the queue behind a small ``MetricsProvider`` interface: the
provider hands out one gauge, counter or histogram per queue name, and the queue only calls
``inc``/``dec``/``set``/``observe``. This module ports that shape:

* the metric protocols and ``MetricsProvider`` (method names are client-go's in snake_case);
* ``NoopMetricsProvider``, the default, which records nothing;
* ``PrometheusMetricsProvider``, backed by ``prometheus_client`` and labelled by queue ``name``,
  exporting ``workqueue_depth``, ``workqueue_adds_total``, ``workqueue_queue_duration_seconds``,
  ``workqueue_work_duration_seconds``, ``workqueue_unfinished_work_seconds``,
  ``workqueue_longest_running_processor_seconds`` and ``workqueue_retries_total``;
* ``QueueMetrics``, the per-queue bookkeeping (add times, processing start times) the queue
  calls while holding its lock.

client-go refreshes the two "unfinished work" gauges from a goroutine every 500 ms. Here they
are computed on demand instead: the queue registers its ``update_unfinished_work`` with the
provider through ``register_refresh``, and the Prometheus provider calls it when the registry
is scraped. No extra thread is needed and the values are exact at scrape time.
"""

import inspect
import threading
import weakref
from collections.abc import Callable, Hashable, Iterator
from typing import Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import REGISTRY

from kube.clock import Clock

# client-go's buckets, prometheus.ExponentialBuckets(10e-9, 10, 10) (10 ns up to 10 s), and then
# 30 s, 1, 2, 5 and 10 minutes. client-go's stop at 10 s, so a quantile never reads above 10 s: an
# alert on keys waiting 30 s (manifests/monitoring/tfjob-operator.rules.yaml) could never fire.
# With a bound at the threshold a quantile is above it exactly when that share of keys waited longer.
DURATION_BUCKETS: tuple[float, ...] = (*(1e-8 * 10**i for i in range(10)), 30.0, 60.0, 120.0, 300.0, 600.0)

DEPTH = "workqueue_depth"
ADDS = "workqueue_adds_total"
QUEUE_LATENCY = "workqueue_queue_duration_seconds"
WORK_DURATION = "workqueue_work_duration_seconds"
UNFINISHED_WORK = "workqueue_unfinished_work_seconds"
LONGEST_RUNNING_PROCESSOR = "workqueue_longest_running_processor_seconds"
RETRIES = "workqueue_retries_total"


class GaugeMetric(Protocol):
    def inc(self) -> None: ...

    def dec(self) -> None: ...


class SettableGaugeMetric(Protocol):
    def set(self, value: float) -> None: ...


class CounterMetric(Protocol):
    def inc(self) -> None: ...


class HistogramMetric(Protocol):
    def observe(self, value: float) -> None: ...


class MetricsProvider(Protocol):
    """Creates the metrics of one named queue (client-go's ``MetricsProvider``)."""

    def new_depth_metric(self, name: str) -> GaugeMetric: ...

    def new_adds_metric(self, name: str) -> CounterMetric: ...

    def new_latency_metric(self, name: str) -> HistogramMetric: ...

    def new_work_duration_metric(self, name: str) -> HistogramMetric: ...

    def new_unfinished_work_seconds_metric(self, name: str) -> SettableGaugeMetric: ...

    def new_longest_running_processor_seconds_metric(self, name: str) -> SettableGaugeMetric: ...

    def new_retries_metric(self, name: str) -> CounterMetric: ...

    def register_refresh(self, refresh: Callable[[], None]) -> None:
        """Ask the provider to call ``refresh`` just before its metrics are read.

        Queues register ``update_unfinished_work`` here so that the unfinished-work gauges are
        computed at scrape time. Providers should hold bound methods weakly so that a queue
        that is no longer used can be garbage collected.
        """
        ...


class _NoopMetric:
    """Satisfies every metric protocol and does nothing."""

    def inc(self) -> None:
        pass

    def dec(self) -> None:
        pass

    def set(self, value: float) -> None:
        pass

    def observe(self, value: float) -> None:
        pass


_NOOP_METRIC = _NoopMetric()


class NoopMetricsProvider:
    """The default provider: queues built with it keep no metrics at all."""

    def new_depth_metric(self, name: str) -> GaugeMetric:
        return _NOOP_METRIC

    def new_adds_metric(self, name: str) -> CounterMetric:
        return _NOOP_METRIC

    def new_latency_metric(self, name: str) -> HistogramMetric:
        return _NOOP_METRIC

    def new_work_duration_metric(self, name: str) -> HistogramMetric:
        return _NOOP_METRIC

    def new_unfinished_work_seconds_metric(self, name: str) -> SettableGaugeMetric:
        return _NOOP_METRIC

    def new_longest_running_processor_seconds_metric(self, name: str) -> SettableGaugeMetric:
        return _NOOP_METRIC

    def new_retries_metric(self, name: str) -> CounterMetric:
        return _NOOP_METRIC

    def register_refresh(self, refresh: Callable[[], None]) -> None:
        pass


class _StoredGauge:
    """A settable gauge whose value is read by ``_OnDemandGauges`` at collect time."""

    def __init__(self) -> None:
        self.value = 0.0

    def set(self, value: float) -> None:
        self.value = value


class _OnDemandGauges:
    """A Prometheus collector for the two gauges that are computed at scrape time.

    Running the refresh callbacks inside ``collect`` (rather than in a separate collector)
    keeps the values fresh however the registry is read, restricted registries included.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._refreshers: list[Callable[[], Callable[[], None] | None]] = []
        self._unfinished: dict[str, _StoredGauge] = {}
        self._longest: dict[str, _StoredGauge] = {}

    def gauge(self, metric: str, name: str) -> _StoredGauge:
        table = self._unfinished if metric == UNFINISHED_WORK else self._longest
        with self._lock:
            return table.setdefault(name, _StoredGauge())

    def add_refresher(self, refresh: Callable[[], None]) -> None:
        getter: Callable[[], Callable[[], None] | None]
        if inspect.ismethod(refresh):
            getter = weakref.WeakMethod(refresh)
        else:

            def getter() -> Callable[[], None]:
                return refresh

        with self._lock:
            self._refreshers.append(getter)

    def describe(self) -> Iterator[Metric]:
        # Declaring the names lets the registry detect clashes and serve restricted scrapes.
        yield GaugeMetricFamily(UNFINISHED_WORK, "", labels=["name"])
        yield GaugeMetricFamily(LONGEST_RUNNING_PROCESSOR, "", labels=["name"])

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            refreshers = list(self._refreshers)
        dead: list[Callable[[], Callable[[], None] | None]] = []
        for getter in refreshers:
            refresh = getter()
            if refresh is None:
                dead.append(getter)
            else:
                # Called without our lock: refresh takes the queue's lock and then sets a
                # _StoredGauge, and we never want to hold both locks in the other order.
                refresh()
        with self._lock:
            # Forget queues that have been garbage collected.
            self._refreshers = [g for g in self._refreshers if all(g is not d for d in dead)]
            unfinished = {name: g.value for name, g in self._unfinished.items()}
            longest = {name: g.value for name, g in self._longest.items()}
        family = GaugeMetricFamily(
            UNFINISHED_WORK,
            "How many seconds of work has been done that is in progress and hasn't been "
            "observed by work_duration. Large values indicate stuck threads. One can deduce "
            "the number of stuck threads by observing the rate at which this increases.",
            labels=["name"],
        )
        for name, value in unfinished.items():
            family.add_metric([name], value)
        yield family
        family = GaugeMetricFamily(
            LONGEST_RUNNING_PROCESSOR,
            "How many seconds has the longest running processor for workqueue been running.",
            labels=["name"],
        )
        for name, value in longest.items():
            family.add_metric([name], value)
        yield family


class PrometheusMetricsProvider:
    """Work queue metrics in a ``prometheus_client`` registry, labelled by queue ``name``.

    ``registry=None`` means the process-wide default registry (what ``start_http_server``
    serves). The metric families are registered once per provider, so create one provider
    per registry and share it between queues.
    """

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        registry = REGISTRY if registry is None else registry
        self._depth = Gauge(DEPTH, "Current depth of workqueue", ["name"], registry=registry)
        self._adds = Counter(ADDS, "Total number of adds handled by workqueue", ["name"], registry=registry)
        self._latency = Histogram(
            QUEUE_LATENCY,
            "How long in seconds an item stays in workqueue before being requested.",
            ["name"],
            buckets=DURATION_BUCKETS,
            registry=registry,
        )
        self._work_duration = Histogram(
            WORK_DURATION,
            "How long in seconds processing an item from workqueue takes.",
            ["name"],
            buckets=DURATION_BUCKETS,
            registry=registry,
        )
        self._retries = Counter(RETRIES, "Total number of retries handled by workqueue", ["name"], registry=registry)
        self._on_demand = _OnDemandGauges()
        registry.register(self._on_demand)

    def new_depth_metric(self, name: str) -> GaugeMetric:
        return self._depth.labels(name=name)

    def new_adds_metric(self, name: str) -> CounterMetric:
        return self._adds.labels(name=name)

    def new_latency_metric(self, name: str) -> HistogramMetric:
        return self._latency.labels(name=name)

    def new_work_duration_metric(self, name: str) -> HistogramMetric:
        return self._work_duration.labels(name=name)

    def new_unfinished_work_seconds_metric(self, name: str) -> SettableGaugeMetric:
        return self._on_demand.gauge(UNFINISHED_WORK, name)

    def new_longest_running_processor_seconds_metric(self, name: str) -> SettableGaugeMetric:
        return self._on_demand.gauge(LONGEST_RUNNING_PROCESSOR, name)

    def new_retries_metric(self, name: str) -> CounterMetric:
        return self._retries.labels(name=name)

    def register_refresh(self, refresh: Callable[[], None]) -> None:
        self._on_demand.add_refresher(refresh)


class QueueMetrics:
    """The metrics of one queue and the timestamps behind them (client-go's queueMetrics).

    Every method but ``retry`` (which only bumps a thread-safe counter) is called with the
    queue's lock held, so the dictionaries need no lock of their own.
    """

    def __init__(self, provider: MetricsProvider, name: str, clock: Clock) -> None:
        self._clock = clock
        self._depth = provider.new_depth_metric(name)
        self._adds = provider.new_adds_metric(name)
        self._latency = provider.new_latency_metric(name)
        self._work_duration = provider.new_work_duration_metric(name)
        self._unfinished_work_seconds = provider.new_unfinished_work_seconds_metric(name)
        self._longest_running_processor = provider.new_longest_running_processor_seconds_metric(name)
        self._retries = provider.new_retries_metric(name)
        self._add_times: dict[Hashable, float] = {}
        self._processing_start_times: dict[Hashable, float] = {}

    def add(self, item: Hashable) -> None:
        self._adds.inc()
        self._depth.inc()
        # Queue latency is measured from the first add that made the item dirty.
        self._add_times.setdefault(item, self._clock.now())

    def get(self, item: Hashable) -> None:
        now = self._clock.now()
        self._depth.dec()
        self._processing_start_times[item] = now
        start = self._add_times.pop(item, None)
        if start is not None:
            self._latency.observe(now - start)

    def done(self, item: Hashable) -> None:
        start = self._processing_start_times.pop(item, None)
        if start is not None:
            self._work_duration.observe(self._clock.now() - start)

    def retry(self) -> None:
        self._retries.inc()

    def update_unfinished_work(self) -> None:
        now = self._clock.now()
        total = 0.0
        oldest = 0.0
        for start in self._processing_start_times.values():
            age = now - start
            total += age
            oldest = max(oldest, age)
        self._unfinished_work_seconds.set(total)
        self._longest_running_processor.set(oldest)


def new_queue_metrics(provider: MetricsProvider, name: str, clock: Clock) -> QueueMetrics | None:
    """The metrics for a queue, or None when there is nothing to record.

    As in client-go, an unnamed queue and the no-op provider record nothing; returning None
    lets the queue skip the bookkeeping on its hot path entirely.
    """
    if not name or isinstance(provider, NoopMetricsProvider):
        return None
    return QueueMetrics(provider, name, clock)
