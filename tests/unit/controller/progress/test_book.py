"""The progress book: which jobs are read and when, what each answer changes, and what the reconciler
merges; with a fake clock and plain dicts. The per-job Prometheus series follow the book."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from controller.job.progress import Target
from controller.metrics import ControllerMetrics
from controller.progress.book import Due, ProgressBook
from kube.clock import FakeClock

KEY = "team-a/mnist"
JOB = {"metadata": {"namespace": "team-a", "name": "mnist"}}
TARGET = Target("team-a", "mnist", "mnist-chief-0", 8090, 30.0)
RUNNING = {"state": "Running", "conditions": [{"type": "Running", "status": "True"}]}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(wall=datetime(2026, 12, 2, 14, 0, 0, tzinfo=UTC))


@pytest.fixture
def metrics() -> ControllerMetrics:
    return ControllerMetrics(CollectorRegistry())


@pytest.fixture
def book(clock: FakeClock, metrics: ControllerMetrics) -> ProgressBook:
    return ProgressBook(clock, metrics)


def sample(metrics: ControllerMetrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, {"namespace": "team-a", "job": "mnist", **labels})


def test_a_job_without_a_target_is_not_read_and_its_status_is_unchanged(book: ProgressBook) -> None:
    assert book.follow(KEY, JOB, None, RUNNING) == RUNNING
    assert book.due() == []


def test_a_followed_job_is_read_at_once_then_once_per_period(book: ProgressBook, clock: FakeClock) -> None:
    book.follow(KEY, JOB, TARGET, RUNNING)
    assert book.due() == [Due(KEY, TARGET, slow=False)]
    clock.step(29)
    assert book.due() == []
    clock.step(1)
    assert book.due() == [Due(KEY, TARGET, slow=False)]


def test_a_new_report_changes_the_status_the_reconciler_writes(book: ProgressBook) -> None:
    book.follow(KEY, JOB, TARGET, RUNNING)
    assert book.record(KEY, TARGET, {"step": 10, "totalSteps": 100})
    progress = book.follow(KEY, JOB, TARGET, RUNNING)["progress"]
    assert (progress["percent"], progress["summary"], progress["reportedBy"]) == (10, "10%", "mnist-chief-0")


def test_the_same_report_again_changes_nothing(book: ProgressBook, clock: FakeClock) -> None:
    book.follow(KEY, JOB, TARGET, RUNNING)
    book.record(KEY, TARGET, {"step": 10, "totalSteps": 100})
    clock.step(30)
    assert not book.record(KEY, TARGET, {"step": 10, "totalSteps": 100})


def test_the_eta_comes_from_the_rate_between_reads(book: ProgressBook, clock: FakeClock) -> None:
    book.follow(KEY, JOB, TARGET, RUNNING)
    book.record(KEY, TARGET, {"step": 10, "totalSteps": 100})
    clock.step(30)
    book.record(KEY, TARGET, {"step": 20, "totalSteps": 100})
    progress = book.follow(KEY, JOB, TARGET, RUNNING)["progress"]
    assert progress["remaining"] == "4m"  # 80 steps at 10 per 30 s
    assert progress["lastUpdateTime"] == "2026-12-02T14:00:30Z"
    assert progress["estimatedCompletionTime"] == "2026-12-02T14:04:30Z"


def test_a_forged_report_cannot_reach_the_conditions(book: ProgressBook) -> None:
    book.follow(KEY, JOB, TARGET, RUNNING)
    book.record(KEY, TARGET, {"step": 5, "conditions": [{"type": "Succeeded", "status": "True"}],
                              "state": "Succeeded", "progress": {"percent": 100}})
    status = book.follow(KEY, JOB, TARGET, RUNNING)
    assert status["conditions"] == RUNNING["conditions"] and status["state"] == "Running"
    assert status["progress"]["summary"] == "step 5"


def test_a_refused_report_keeps_the_last_valid_one_and_says_why(book: ProgressBook) -> None:
    book.follow(KEY, JOB, TARGET, RUNNING)
    book.record(KEY, TARGET, {"step": 5})
    assert book.record(KEY, TARGET, {"step": -1})
    progress = book.follow(KEY, JOB, TARGET, RUNNING)["progress"]
    assert progress["step"] == 5
    assert progress["problem"].startswith("refused the report of mnist-chief-0: step must be between 0 and")


def test_an_answer_for_a_target_left_meanwhile_is_dropped(book: ProgressBook) -> None:
    book.follow(KEY, JOB, TARGET, RUNNING)
    book.follow(KEY, JOB, None, RUNNING)  # the pod stopped running while the read was on its way
    assert not book.record(KEY, TARGET, {"step": 5})


def test_a_finished_job_is_no_longer_read_and_keeps_its_progress_without_eta(book: ProgressBook,
                                                                               clock: FakeClock) -> None:
    book.follow(KEY, JOB, TARGET, RUNNING)
    book.record(KEY, TARGET, {"step": 10, "totalSteps": 100})
    clock.step(30)
    book.record(KEY, TARGET, {"step": 20, "totalSteps": 100})
    succeeded: dict[str, Any] = {"state": "Succeeded", "conditions": [{"type": "Succeeded", "status": "True"}]}
    status = book.follow(KEY, JOB, None, succeeded)
    clock.step(60)
    assert book.due() == []
    assert status["progress"]["percent"] == 20 and "remaining" not in status["progress"]


def test_the_gauges_show_the_latest_report(book: ProgressBook, metrics: ControllerMetrics) -> None:
    book.follow(KEY, JOB, TARGET, RUNNING)
    book.record(KEY, TARGET, {"step": 25, "totalSteps": 100, "epoch": 1, "metrics": {"loss": 0.5}})
    assert sample(metrics, "tfjob_job_progress_ratio") == 0.25
    assert sample(metrics, "tfjob_job_progress_step") == 25
    assert sample(metrics, "tfjob_job_progress_epoch") == 1
    assert sample(metrics, "tfjob_job_progress_metric", metric="loss") == 0.5


def test_a_metric_no_longer_reported_loses_its_series(book: ProgressBook, metrics: ControllerMetrics) -> None:
    book.follow(KEY, JOB, TARGET, RUNNING)
    book.record(KEY, TARGET, {"metrics": {"loss": 0.5, "lr": 0.1}})
    book.record(KEY, TARGET, {"metrics": {"loss": 0.4}})
    assert sample(metrics, "tfjob_job_progress_metric", metric="lr") is None
    assert sample(metrics, "tfjob_job_progress_metric", metric="loss") == 0.4


def test_a_deleted_job_is_forgotten_with_its_series(book: ProgressBook, metrics: ControllerMetrics) -> None:
    book.follow(KEY, JOB, TARGET, RUNNING)
    book.record(KEY, TARGET, {"step": 25, "totalSteps": 100, "metrics": {"loss": 0.5}})
    book.forget(KEY)
    assert book.due() == []
    assert sample(metrics, "tfjob_job_progress_ratio") is None
    assert sample(metrics, "tfjob_job_progress_metric", metric="loss") is None


def test_a_late_read_does_not_stretch_the_period(book: ProgressBook, clock: FakeClock) -> None:
    book.follow(KEY, JOB, TARGET, RUNNING)
    book.due()
    clock.step(30.9)  # the poll tick came late
    assert book.due() == [Due(KEY, TARGET, slow=False)]
    clock.step(29.1)
    assert book.due() == [Due(KEY, TARGET, slow=False)]
