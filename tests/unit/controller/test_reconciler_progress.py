"""The reconciler and training progress: what the book knows is merged into the status write, never
written alone more than once per change, and a job without `spec.progress` is untouched; the client is
mocked (tests/unit/controller/test_reconciler.py shows the rest of the call sequences)."""

from __future__ import annotations

from typing import Any
from unittest.mock import Mock

import pytest
from pytest_mock import MockerFixture

from controller.job.progress import Target
from controller.memory import JobMemory
from controller.reconciler import Reconciler, RequeueError
from kube import ApiError
from kube.clock import FakeClock
from tests.support.caches import FakeCaches
from tests.support.mock_kube import status_patching_kube
from tests.unit.controller.test_reconciler import NOW, make_job, owned_service, running_pods

TARGET = Target("ns", "j", "j-worker-0", 8090, 30.0, "uid-j-worker-0/0")


@pytest.fixture
def kube(mocker: MockerFixture) -> Mock:
    return status_patching_kube(mocker, make_job)


def settle(kube: Mock, job: dict[str, Any]) -> tuple[Reconciler, FakeCaches]:
    """A running job whose status is written, and the cache holding that write."""
    caches = FakeCaches(job, running_pods(job), owned_service(job))
    clock = FakeClock(wall=NOW)
    rec = Reconciler(kube, caches, clock=clock, memory=JobMemory(clock))
    rec.reconcile("ns/j")
    caches.job = {**job, "status": kube.patch.call_args.args[1]["status"],
                  "metadata": {**job["metadata"], "resourceVersion": "11"}}
    kube.reset_mock()
    return rec, caches


def written_status(kube: Mock) -> dict[str, Any]:
    return kube.patch.call_args.args[1]["status"]  # type: ignore[no-any-return]


def test_a_reporting_job_is_followed_at_its_running_reporting_pod(kube: Mock) -> None:
    rec, _ = settle(kube, make_job(progress={}))
    assert [(due.key, due.target) for due in rec.memory.progress.due()] == [("ns/j", TARGET)]


def test_a_new_report_is_written_in_one_status_patch(kube: Mock) -> None:
    rec, _ = settle(kube, make_job(progress={}))
    rec.memory.progress.record("ns/j", TARGET, {"step": 30, "totalSteps": 100, "metrics": {"loss": 0.5}})
    rec.reconcile("ns/j")
    assert kube.method_calls and all(call[0] == "patch" for call in kube.method_calls)
    assert kube.patch.call_count == 1
    assert written_status(kube) == {"progress": {
        "step": 30, "totalSteps": 100, "percent": 30, "metrics": {"loss": "0.5"}, "metricsSummary": "loss=0.5",
        "summary": "30%", "lastUpdateTime": "2026-11-29T12:00:00Z", "reportedBy": "j-worker-0"}}


def test_a_forged_report_leaves_the_conditions_alone(kube: Mock) -> None:
    rec, _ = settle(kube, make_job(progress={}))
    rec.memory.progress.record("ns/j", TARGET, {"step": 1, "conditions": [{"type": "Succeeded", "status": "True"}],
                                                "state": "Succeeded", "completionTime": "2026-11-29T12:00:00Z"})
    rec.reconcile("ns/j")
    assert set(written_status(kube)) == {"progress"}


def test_no_report_since_the_last_write_makes_no_call(kube: Mock) -> None:
    rec, caches = settle(kube, make_job(progress={}))
    rec.memory.progress.record("ns/j", TARGET, {"step": 30})
    rec.reconcile("ns/j")
    caches.job = {**caches.job, "status": {**caches.job["status"], **written_status(kube)},  # type: ignore[index]
                  "metadata": {**caches.job["metadata"], "resourceVersion": "12"}}  # type: ignore[index]
    kube.reset_mock()
    rec.reconcile("ns/j")
    assert kube.method_calls == []


def test_a_job_without_progress_is_neither_followed_nor_given_a_progress_status(kube: Mock) -> None:
    job = make_job()
    caches = FakeCaches(job, running_pods(job), owned_service(job))
    clock = FakeClock(wall=NOW)
    rec = Reconciler(kube, caches, clock=clock, memory=JobMemory(clock))
    rec.reconcile("ns/j")
    assert "progress" not in written_status(kube)
    assert rec.memory.progress.due() == []


def test_a_status_refused_as_invalid_is_written_again_without_its_progress(kube: Mock, mocker: MockerFixture) -> None:
    rec, _ = settle(kube, make_job(progress={}))
    rec.recorder = mocker.Mock()
    rec.memory.progress.record("ns/j", TARGET, {"step": 30})
    accepted = kube.patch.side_effect
    refusal = ApiError(422, "Invalid", 'TensorFlowJob.kubeflow.org "j" is invalid: status.progress.problem: Too long')
    answers = iter([refusal, None])

    def patch(path: str, body: dict[str, Any], **options: Any) -> dict[str, Any]:
        if (error := next(answers)) is not None:
            raise error
        return accepted(path, body, **options)  # type: ignore[no-any-return]
    kube.patch.side_effect = patch
    rec.reconcile("ns/j")
    assert kube.patch.call_count == 2
    assert written_status(kube)["progress"] == {
        "problem": f"the API server refused the progress: {refusal.message}"}
    rec.recorder.record.assert_called_once()
    assert rec.recorder.record.call_args.args[1:3] == ("Warning", "StatusRefused")


def test_a_status_refused_as_invalid_without_progress_is_not_sent_again(kube: Mock) -> None:
    job = make_job()
    caches = FakeCaches(job, running_pods(job), owned_service(job))
    clock = FakeClock(wall=NOW)
    rec = Reconciler(kube, caches, clock=clock, memory=JobMemory(clock))
    kube.patch.side_effect = ApiError(422, "Invalid", "status.state: Too long")
    with pytest.raises(RequeueError):
        rec.reconcile("ns/j")
    assert kube.patch.call_count == 1


def test_a_replaced_reporting_pod_resumes_in_the_status_and_an_event(kube: Mock, mocker: MockerFixture) -> None:
    rec, caches = settle(kube, make_job(progress={}))
    rec.recorder = mocker.Mock()
    rec.memory.progress.record("ns/j", TARGET, {"step": 100})
    rec.reconcile("ns/j")
    caches.job = {**caches.job, "status": {**caches.job["status"], **written_status(kube)},  # type: ignore[index]
                  "metadata": {**caches.job["metadata"], "resourceVersion": "12"}}  # type: ignore[index]
    caches.pods[0]["metadata"]["uid"] = "uid-j-worker-0-replacement"  # the reporting pod, recreated
    rec.reconcile("ns/j")  # follows the new pod
    rec.memory.progress.record("ns/j", Target("ns", "j", "j-worker-0", 8090, 30.0, "uid-j-worker-0-replacement/0"),
                               {"step": 91})
    rec.reconcile("ns/j")
    assert written_status(kube)["progress"]["lastResume"] == {
        "time": "2026-11-29T12:00:00Z", "step": 91, "stepBefore": 100, "stepsLost": 9}
    [(args, _)] = [(c.args, c.kwargs) for c in rec.recorder.record.call_args_list if c.args[2] == "TrainingResumed"]
    assert args[3] == "Training resumed at step 91 (last step seen before the interruption: 100): 9 step(s) lost."
