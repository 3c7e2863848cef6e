"""What an interruption cost a training: the pure rule, then the book that notes it across a replaced
reporting pod and the event that says it once; a fake clock and plain dicts."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from controller.job.draft import Event
from controller.job.progress import Target
from controller.progress.book import ProgressBook
from controller.progress.resume import event, resumed
from kube.clock import FakeClock

AT = datetime(2026, 12, 6, 9, 0, 0, tzinfo=UTC)
KEY = "team-a/mnist"
JOB: dict[str, Any] = {"metadata": {"namespace": "team-a", "name": "mnist"}, "status": {}}
RUNNING = {"conditions": [{"type": "Running", "status": "True"}]}
OLD = Target("team-a", "mnist", "mnist-worker-0", 8090, 30.0, "uid-old/0")
NEW = Target("team-a", "mnist", "mnist-worker-0", 8090, 30.0, "uid-new/0")


# ---- the pure rule -----------------------------------------------------------------------------------

def test_the_first_step_of_a_new_process_says_how_many_steps_were_lost() -> None:
    assert resumed({"step": 100}, "uid-old/0", {"step": 91}, "uid-new/0", AT) == {
        "time": "2026-12-06T09:00:00Z", "step": 91, "stepBefore": 100, "stepsLost": 9}


def test_a_report_of_the_same_process_is_no_resume() -> None:
    assert resumed({"step": 100}, "uid-old/0", {"step": 90}, "uid-old/0", AT) is None


def test_a_container_restarted_in_place_is_a_new_process() -> None:
    assert resumed({"step": 100}, "uid-old/0", {"step": 100}, "uid-old/1", AT) == {
        "time": "2026-12-06T09:00:00Z", "step": 100, "stepBefore": 100, "stepsLost": 0}


def test_a_resume_past_the_last_step_read_lost_nothing_the_operator_saw() -> None:
    assert resumed({"step": 100}, "uid-old/0", {"step": 104}, "uid-new/0", AT)["stepsLost"] == 0  # type: ignore[index]


def test_a_late_first_read_counts_from_the_step_the_new_process_started_at() -> None:
    # The new run started over and had trained 150 steps again by the operator's first read.
    assert resumed({"step": 150}, "uid-old/0", {"step": 150, "startStep": 0}, "uid-new/0", AT) == {
        "time": "2026-12-06T09:00:00Z", "step": 0, "stepBefore": 150, "stepsLost": 150}


def test_a_start_step_past_the_reported_step_is_not_taken() -> None:
    assert resumed({"step": 100}, "uid-old/0", {"step": 91, "startStep": 95}, "uid-new/0", AT)["step"] == 91  # type: ignore[index]


def test_the_event_is_posted_when_the_status_first_shows_the_resume() -> None:
    resume = {"time": "2026-12-06T09:00:00Z", "step": 91, "stepBefore": 100, "stepsLost": 9}
    after = {"progress": {"step": 91, "lastResume": resume}}
    assert event({}, after) == Event("Normal", "TrainingResumed", "Training resumed at step 91 (last step seen "
                                     "before the interruption: 100): 9 step(s) lost.")
    assert event(after, after) is None


# ---- in the book -------------------------------------------------------------------------------------

def book_that_read(*answers: tuple[Target, dict[str, Any]]) -> ProgressBook:
    book = ProgressBook(FakeClock(wall=AT))
    for target, answer in answers:
        book.follow(KEY, JOB, target, RUNNING)
        book.record(KEY, target, answer)
    return book


def test_the_book_shows_the_resume_of_a_replaced_reporting_pod() -> None:
    book = book_that_read((OLD, {"step": 100, "totalSteps": 1000}), (NEW, {"totalSteps": 1000}),
                          (NEW, {"step": 91, "totalSteps": 1000}))
    progress = book.follow(KEY, JOB, NEW, RUNNING)["progress"]
    assert progress["step"] == 91
    assert progress["lastResume"] == {"time": "2026-12-06T09:00:00Z", "step": 91, "stepBefore": 100, "stepsLost": 9}


def test_the_book_shows_no_resume_while_one_process_reports() -> None:
    book = book_that_read((OLD, {"step": 10}), (OLD, {"step": 20}))
    assert "lastResume" not in book.follow(KEY, JOB, OLD, RUNNING)["progress"]


def test_the_book_adds_the_event_once_the_status_shows_the_resume() -> None:
    book = book_that_read((OLD, {"step": 100}), (NEW, {"step": 91}))
    events: list[Event] = []
    merged = book.follow(KEY, JOB, NEW, RUNNING, events)
    assert [e.reason for e in events] == ["TrainingResumed"]
    book.follow(KEY, {**JOB, "status": merged}, NEW, merged, events)
    assert len(events) == 1
