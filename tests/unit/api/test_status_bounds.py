"""Whatever text a pod, the scheduler or a trainer sends, the status the operator writes stays within
the CRD's limits: properties over every path that puts outside text into a status or an event, with
strings of any Unicode up to 1 MB, checked against the CRDs' own schemas."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.events import event_body
from controller.job import pending
from controller.job.kinds import TENSORFLOWJOB, TFJOB
from controller.job.progress import Target
from controller.progress.book import ProgressBook
from kube.clock import FakeClock
from tfjob_api import conditions as cond
from tfjob_api.bounds import cut, cut_bytes, fit, violations, without_progress

# Short texts of any Unicode, and long ones made by repeating a short one: up to 1 MB without
# asking hypothesis to draw a million characters one by one.
texts = st.one_of(
    st.text(max_size=300),
    st.builds(lambda piece, times: piece * times, st.text(min_size=1, max_size=16), st.integers(1, 2**20 // 16)),
)
PROPERTIES = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
RUNNING = {"state": "Running", "conditions": [{"type": "Running", "status": "True"}]}
TARGET = Target("team-a", "mnist", "mnist-chief-0", 8090, 30.0)
JOB = {"metadata": {"namespace": "team-a", "name": "mnist"}}


def within_limits(status: dict[str, Any]) -> None:
    for kind in (TENSORFLOWJOB, TFJOB):
        assert violations(status, kind.status_schema()) == [], kind.name


@PROPERTIES
@given(text=texts, limit=st.integers(0, 40_000))
def test_a_cut_text_is_at_most_its_limit_and_unchanged_when_it_fits(text: str, limit: int) -> None:
    result = cut(text, limit)
    assert len(result) <= limit
    assert (result == text) == (len(text) <= limit)


@PROPERTIES
@given(text=texts)
def test_a_text_cut_to_bytes_is_valid_utf8_within_the_limit(text: str) -> None:
    assert len(cut_bytes(text, 1024).encode()) <= 1024


@PROPERTIES
@given(name=texts, value=st.one_of(texts, st.floats(), st.integers()), step=st.one_of(texts, st.integers()))
def test_any_progress_answer_leaves_a_status_within_the_limits(name: str, value: Any, step: Any) -> None:
    book = ProgressBook(FakeClock())
    book.follow("team-a/mnist", JOB, TARGET, RUNNING)
    book.record("team-a/mnist", TARGET, {"step": step, "metrics": {name: value, "loss": value}})
    status = book.follow("team-a/mnist", JOB, TARGET, RUNNING)
    assert violations(status, TENSORFLOWJOB.status_schema()) == []


@PROPERTIES
@given(refused=texts)
def test_any_refusal_of_an_answer_leaves_a_status_within_the_limits(refused: str) -> None:
    book = ProgressBook(FakeClock())
    book.follow("team-a/mnist", JOB, TARGET, RUNNING)
    book.record("team-a/mnist", TARGET, None, refused=refused)
    assert violations(book.follow("team-a/mnist", JOB, TARGET, RUNNING), TENSORFLOWJOB.status_schema()) == []


@PROPERTIES
@given(reason=texts, message=texts)
def test_any_condition_text_stays_within_the_limits(reason: str, message: str) -> None:
    conditions: list[dict[str, Any]] = []
    cond.set_condition(conditions, cond.FAILED, True, reason, message, "2026-12-03T00:00:00Z")
    within_limits({"conditions": conditions})


@PROPERTIES
@given(reason=texts, message=texts, scheduler_message=texts)
def test_any_pod_message_leaves_a_pending_condition_within_the_limits(reason: str, message: str,
                                                                     scheduler_message: str) -> None:
    waiting = {"metadata": {"name": "mnist-worker-0", "labels": {}},
               "status": {"containerStatuses": [{"name": "tensorflow", "state": {"waiting": {
                   "reason": reason or "ImagePullBackOff", "message": message}}}]}}
    unscheduled = {"metadata": {"name": "mnist-worker-1", "labels": {}},
                   "status": {"conditions": [{"type": "PodScheduled", "status": "False", "reason": reason,
                                              "message": scheduler_message}]}}
    found = pending.summarize([waiting, unscheduled])
    conditions: list[dict[str, Any]] = []
    if found is not None:
        cond.set_condition(conditions, cond.PENDING, True, found.reason, found.message, "2026-12-03T00:00:00Z")
    within_limits({"conditions": conditions})


@PROPERTIES
@given(why=texts)
def test_a_status_written_again_without_its_progress_is_within_the_limits(why: str) -> None:
    within_limits(without_progress(RUNNING, why))


@PROPERTIES
@given(text=texts, names=st.lists(st.text(max_size=70), max_size=20))
def test_fit_brings_any_status_within_the_limits(text: str, names: list[str]) -> None:
    status = {"state": text, "conditions": [{"type": "Running", "status": "True", "reason": text, "message": text}],
              "progress": {"problem": text, "summary": text, "reportedBy": text,
                           "metrics": {name: text for name in names}}}
    for kind in (TENSORFLOWJOB, TFJOB):
        assert violations(fit(status, kind.status_schema()), kind.status_schema()) == []


@PROPERTIES
@given(message=texts)
def test_any_event_message_is_within_what_the_api_server_keeps(message: str) -> None:
    body = event_body(JOB, "Warning", "PodFailed", message, datetime(2026, 12, 3, tzinfo=UTC))
    assert len(body["message"].encode()) <= 1024


def test_the_progress_texts_limit_is_the_crds() -> None:
    progress = TENSORFLOWJOB.status_schema()["properties"]["progress"]["properties"]
    assert {progress[name]["maxLength"] for name in ("summary", "problem", "metricsSummary")} == {1024}
