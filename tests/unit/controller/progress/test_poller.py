"""The poller reads what is due, records it and enqueues only the jobs whose status should change;
a read that fails changes nothing; an endpoint that answers too much or too slowly is read less often
and on a lane of its own. `poll_once` is driven by hand with a fake clock, and `poll` waits for the
reads it started."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from controller.job.progress import Target
from controller.progress.book import Due, ProgressBook
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


def poll(poller: ProgressPoller) -> list[str]:
    """One tick, its reads waited for: the keys whose status should change."""
    return [key for key, read in poller.poll_once().items() if read.result(timeout=10)]


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
    assert poll(poller) == [KEY]
    assert (enqueued, results) == ([KEY], ["changed"])
    assert trainer.reads == ["/api/v1/namespaces/team-a/pods/mnist-chief-0:8090/proxy/progress"]


def test_an_unchanged_report_enqueues_nothing(setup: tuple[ProgressPoller, list[str], list[str]],
                                              trainer: Trainer, clock: FakeClock) -> None:
    poller, enqueued, results = setup
    trainer.answer = {"step": 1}
    poll(poller)
    clock.step(30)
    assert poll(poller) == []
    assert (enqueued, results) == ([KEY], ["changed", "unchanged"])


def test_nothing_is_read_before_the_period_is_over(setup: tuple[ProgressPoller, list[str], list[str]],
                                                   trainer: Trainer, clock: FakeClock) -> None:
    poller, _, _ = setup
    poll(poller)
    clock.step(29)
    poll(poller)
    assert len(trainer.reads) == 1


def test_an_unreachable_endpoint_changes_nothing(setup: tuple[ProgressPoller, list[str], list[str]],
                                                 trainer: Trainer) -> None:
    poller, enqueued, results = setup
    trainer.answer = ApiError(503, "ServiceUnavailable", "error trying to reach service: connection refused")
    assert poll(poller) == []
    assert (enqueued, results) == ([], ["unreachable"])


def test_an_answer_that_is_no_json_object_is_shown_as_a_problem(setup: tuple[ProgressPoller, list[str], list[str]],
                                                                 trainer: Trainer) -> None:
    poller, _, results = setup
    trainer.answer = ApiError(200, "InvalidResponse", "response is not JSON: b'<html>'")
    assert poll(poller) == [KEY]
    assert results == ["invalid"]
    status = poller.book.follow(KEY, JOB, TARGET, RUNNING)
    assert status["progress"]["problem"] == "refused the report of mnist-chief-0: response is not JSON: b'<html>'"


def test_a_too_large_answer_is_shown_as_a_problem_and_read_less_often(
        setup: tuple[ProgressPoller, list[str], list[str]], trainer: Trainer, clock: FakeClock) -> None:
    poller, _, results = setup
    trainer.answer = ApiError(0, "AnswerTooLarge", "the answer is larger than 4096 bytes")
    assert poll(poller) == [KEY]
    status = poller.book.follow(KEY, JOB, TARGET, RUNNING)
    assert status["progress"]["problem"] == "refused the report of mnist-chief-0: the answer is larger than 4096 bytes"
    clock.step(30)
    assert poll(poller) == []  # one strike: read again after two periods, not one
    clock.step(30)
    poll(poller)
    assert (len(trainer.reads), results) == (2, ["invalid", "invalid"])


def test_an_endpoint_that_does_not_answer_in_time_changes_nothing_and_is_read_less_often(
        setup: tuple[ProgressPoller, list[str], list[str]], trainer: Trainer, clock: FakeClock) -> None:
    poller, enqueued, results = setup
    trainer.answer = ApiError(0, "ReadTimeoutError", "no complete answer within 5 s")
    for _ in range(3):  # strikes 1, 2, 3: the waits double
        poll(poller)
        clock.step(1000)
    assert poller.book.due()[0].slow
    assert (enqueued, results) == ([], ["slow", "slow", "slow"])


def test_an_answer_in_time_clears_an_endpoints_record(setup: tuple[ProgressPoller, list[str], list[str]],
                                                      trainer: Trainer, clock: FakeClock) -> None:
    poller, _, _ = setup
    trainer.answer = ApiError(0, "ReadTimeoutError", "no complete answer within 5 s")
    poll(poller)
    clock.step(60)
    trainer.answer = {"step": 1}
    poll(poller)
    clock.step(30)  # back to one read per period
    assert poller.book.due() == [Due(KEY, TARGET, slow=False)]


class Blocking:
    """An endpoint per job: each read of a job in `held` waits until it is let go."""

    def __init__(self) -> None:
        self.held: set[str] = set()
        self.let_go = threading.Event()
        self.reads: list[str] = []

    def fetch(self, target: Target) -> Any:
        self.reads.append(target.job)
        if target.job in self.held:
            self.let_go.wait(10)
            raise ApiError(0, "ReadTimeoutError", "no complete answer within 5 s")
        return {"step": 1}


def follow(book: ProgressBook, name: str) -> Target:
    target = Target("team-a", name, f"{name}-chief-0", 8090, 30.0)
    book.follow(f"team-a/{name}", {"metadata": {"namespace": "team-a", "name": name}}, target, RUNNING)
    return target


def test_a_read_that_hangs_delays_no_other_jobs_read(clock: FakeClock) -> None:
    endpoints, enqueued = Blocking(), []
    book = ProgressBook(clock)
    poller = ProgressPoller(book, endpoints.fetch, enqueued.append, clock=clock, parallelism=4)
    for name in ("slow-a", "slow-b", "slow-c", "honest"):
        follow(book, name)
    endpoints.held = {"slow-a", "slow-b", "slow-c"}
    reads = poller.poll_once()
    assert reads["team-a/honest"].result(timeout=10)  # while the three others still hang
    assert enqueued == ["team-a/honest"] and not any(reads[f"team-a/slow-{x}"].done() for x in "abc")
    clock.step(30)
    again = poller.poll_once()  # a job whose read is under way is not read twice
    assert set(again) == {"team-a/honest"}
    endpoints.let_go.set()
    poller.stop()


def test_misbehaving_endpoints_wait_for_each_other_on_their_own_lane(clock: FakeClock) -> None:
    endpoints, enqueued = Blocking(), []
    book = ProgressBook(clock)
    poller = ProgressPoller(book, endpoints.fetch, enqueued.append, clock=clock, parallelism=2, slow_parallelism=1)
    slow_targets = [follow(book, name) for name in ("slow-a", "slow-b")]
    for target in slow_targets:  # both were too slow before
        book.slow(f"team-a/{target.job}", target)
    clock.step(1000)
    follow(book, "honest")
    endpoints.held = {"slow-a", "slow-b"}
    reads = poller.poll_once()
    assert reads["team-a/honest"].result(timeout=10)
    assert endpoints.reads.count("slow-a") + endpoints.reads.count("slow-b") <= 1  # one slow lane
    endpoints.let_go.set()
    assert not any(read.result(timeout=10) for key, read in reads.items() if key != "team-a/honest")
    poller.stop()
