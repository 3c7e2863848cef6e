"""The poller reads what is due, records it and enqueues only the jobs whose status should change;
a read that fails changes nothing. `poll_once` is driven by hand with a fake clock (no thread)."""

from __future__ import annotations

from typing import Any

import pytest

from controller.job.progress import Target
from controller.progress.book import ProgressBook
from controller.progress.poller import ProgressPoller
from kube import ApiError
from kube.clock import FakeClock

KEY = "team-a/mnist"
JOB = {"metadata": {"namespace": "team-a", "name": "mnist"}}
TARGET = Target("team-a", "mnist", "mnist-chief-0", 8090, 30.0)
RUNNING = {"conditions": [{"type": "Running", "status": "True"}]}


class Trainer:
    """What the reporting pod answers through the proxy: a report, or an error."""

    def __init__(self) -> None:
        self.answer: Any = {}
        self.reads: list[str] = []

    def fetch(self, target: Target) -> Any:
        self.reads.append(target.proxy_path)
        if isinstance(self.answer, ApiError):
            raise self.answer
        return self.answer


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def trainer() -> Trainer:
    return Trainer()


@pytest.fixture
def setup(clock: FakeClock, trainer: Trainer) -> tuple[ProgressPoller, list[str], list[str]]:
    book = ProgressBook(clock)
    book.follow(KEY, JOB, TARGET, RUNNING)
    enqueued: list[str] = []
    results: list[str] = []
    poller = ProgressPoller(book, trainer.fetch, enqueued.append, clock=clock, on_read=results.append)
    return poller, enqueued, results


def test_a_changed_report_enqueues_the_job(setup: tuple[ProgressPoller, list[str], list[str]],
                                           trainer: Trainer) -> None:
    poller, enqueued, results = setup
    trainer.answer = {"step": 1}
    assert poller.poll_once() == [KEY]
    assert (enqueued, results) == ([KEY], ["changed"])
    assert trainer.reads == ["/api/v1/namespaces/team-a/pods/mnist-chief-0:8090/proxy/progress"]


def test_an_unchanged_report_enqueues_nothing(setup: tuple[ProgressPoller, list[str], list[str]],
                                              trainer: Trainer, clock: FakeClock) -> None:
    poller, enqueued, results = setup
    trainer.answer = {"step": 1}
    poller.poll_once()
    clock.step(30)
    assert poller.poll_once() == []
    assert (enqueued, results) == ([KEY], ["changed", "unchanged"])


def test_nothing_is_read_before_the_period_is_over(setup: tuple[ProgressPoller, list[str], list[str]],
                                                   trainer: Trainer, clock: FakeClock) -> None:
    poller, _, _ = setup
    poller.poll_once()
    clock.step(29)
    poller.poll_once()
    assert len(trainer.reads) == 1


def test_an_unreachable_endpoint_changes_nothing(setup: tuple[ProgressPoller, list[str], list[str]],
                                                 trainer: Trainer) -> None:
    poller, enqueued, results = setup
    trainer.answer = ApiError(503, "ServiceUnavailable", "error trying to reach service: connection refused")
    assert poller.poll_once() == []
    assert (enqueued, results) == ([], ["unreachable"])


def test_an_answer_that_is_no_json_object_is_shown_as_a_problem(setup: tuple[ProgressPoller, list[str], list[str]],
                                                                 trainer: Trainer) -> None:
    poller, _, results = setup
    trainer.answer = ApiError(200, "InvalidResponse", "response is not JSON: b'<html>'")
    assert poller.poll_once() == [KEY]
    assert results == ["invalid"]
    status = poller.book.follow(KEY, JOB, TARGET, RUNNING)
    assert status["progress"]["problem"] == "refused the report of mnist-chief-0: response is not JSON: b'<html>'"
