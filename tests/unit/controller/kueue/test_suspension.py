"""A user's suspension of a queued job: its Workload deactivated (quota freed), reactivated on resume."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from unittest.mock import Mock

import pytest
from pytest_mock import MockerFixture

from controller.kueue import protocol as kueue
from controller.kueue import suspension, tfjobs
from controller.kueue.gate import KueueGate
from kube import Kube
from kube.clock import FakeClock
from tests.support.jobs import container, role, tfjob
from tests.support.kubeflow import tfjob_manifest
from tfjob_api.defaults import apply_defaults
from tfjob_api.kubeflow_model import to_model

NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)


def queued_job(suspend: bool = False, labels: dict[str, str] | None = None) -> dict[str, Any]:
    job = tfjob("j", {"worker": role(2, containers=[container(requests={"cpu": "1"})])}, namespace="ns",
                uid="job-uid", labels={kueue.QUEUE_LABEL: "lq", **(labels or {})})
    job["spec"]["suspend"] = suspend
    return apply_defaults(job)


def queued_tfjob(suspend: bool) -> dict[str, Any]:
    template = {"spec": {"containers": [{"name": "tensorflow", "image": "tf", "resources": {"requests": {"cpu": "1"}}}]}}
    return to_model(tfjob_manifest("train", {"Worker": {"replicas": 2, "template": template}}, suspend=suspend,
                                   metadata={"namespace": "ns", "uid": "u-1", "labels": {kueue.QUEUE_LABEL: "lq"}}))


def admitted(workload: dict[str, Any]) -> dict[str, Any]:
    workload = {**workload, "metadata": {**workload["metadata"], "uid": "wl-uid", "resourceVersion": "5"}}
    workload["status"] = {
        "conditions": [{"type": t, "status": "True", "reason": t, "message": "", "lastTransitionTime": "x"}
                       for t in ("QuotaReserved", "Admitted")],
        "admission": {"clusterQueue": "cq", "podSetAssignments": [{"name": "worker", "flavors": {"cpu": "f"}}]},
    }
    return workload


def workload_for(job: dict[str, Any]) -> dict[str, Any]:
    if tfjobs.is_tfjob(job):
        return tfjobs.for_tfjob(kueue.build_workload(job), job, "kubeflow.org/v1")
    return kueue.build_workload(job)


def deactivated(workload: dict[str, Any], marked: bool) -> dict[str, Any]:
    result = {**workload, "spec": {**workload["spec"], "active": False}}
    if marked:
        result["metadata"] = {**workload["metadata"], "annotations": {suspension.DEACTIVATED: "true"}}
    return result


# ---- whose suspension it is ------------------------------------------------------------------------


def test_a_suspended_tensorflowjob_is_suspended_by_its_user() -> None:
    assert suspension.user_suspended(queued_job(suspend=True), None)
    assert not suspension.user_suspended(queued_job(suspend=False), None)


def test_a_multikueue_workers_copy_is_never_suspended_by_a_user_here() -> None:
    copy = queued_job(suspend=True, labels={suspension.PREBUILT_WORKLOAD_LABEL: "tensorflowjob-j-abcde"})
    assert not suspension.user_suspended(copy, None)


def test_a_tfjobs_suspend_flag_is_kueues_while_its_workload_has_kueues_finalizer() -> None:
    job = queued_tfjob(suspend=True)
    workload = workload_for(job)
    assert suspension.user_suspended(job, workload)
    workload["metadata"]["finalizers"] = [tfjobs.RESOURCE_IN_USE]
    assert not suspension.user_suspended(job, workload)


def test_a_tfjobs_suspend_flag_marked_at_adoption_stays_kueues() -> None:
    job = queued_tfjob(suspend=True)
    workload = workload_for(job)
    workload["metadata"]["annotations"] = {suspension.QUEUE_SUSPEND: "true"}
    assert not suspension.user_suspended(job, workload)


# ---- the Workload -----------------------------------------------------------------------------------


def test_a_job_created_suspended_gets_an_inactive_workload() -> None:
    job = queued_job(suspend=True)
    body = suspension.new_workload(kueue.build_workload(job), job)
    assert body["spec"]["active"] is False
    assert body["metadata"]["annotations"] == {suspension.DEACTIVATED: "true"}


def test_a_job_created_running_gets_its_workload_as_built() -> None:
    job = queued_job(suspend=False)
    assert suspension.new_workload(kueue.build_workload(job), job) == kueue.build_workload(job)


def test_suspending_an_admitted_job_deactivates_its_workload() -> None:
    job = queued_job(suspend=True)
    patch = suspension.workload_patch(job, admitted(kueue.build_workload(job)))
    assert patch == {"metadata": {"resourceVersion": "5", "annotations": {suspension.DEACTIVATED: "true"}},
                     "spec": {"active": False}}


def test_resuming_reactivates_the_workload_the_suspension_deactivated() -> None:
    job = queued_job(suspend=False)
    workload = deactivated(admitted(kueue.build_workload(job)), marked=True)
    patch = suspension.workload_patch(job, workload)
    assert patch == {"metadata": {"resourceVersion": "5", "annotations": {suspension.DEACTIVATED: None}},
                     "spec": {"active": True}}


def test_resuming_leaves_a_workload_someone_else_deactivated_inactive() -> None:
    job = queued_job(suspend=False)
    assert suspension.workload_patch(job, deactivated(admitted(kueue.build_workload(job)), marked=False)) is None


def test_a_workload_in_step_needs_no_patch() -> None:
    job = queued_job(suspend=True)
    assert suspension.workload_patch(job, deactivated(admitted(kueue.build_workload(job)), marked=True)) is None
    assert suspension.workload_patch(queued_job(), admitted(kueue.build_workload(queued_job()))) is None


def test_adopting_a_waiting_tfjob_from_kueues_integration_marks_its_suspend_flag_as_kueues() -> None:
    job = queued_tfjob(suspend=True)
    workload = admitted(workload_for(job))
    workload["metadata"]["finalizers"] = [tfjobs.RESOURCE_IN_USE, "other/keep"]
    patch = suspension.workload_patch(job, workload)
    assert patch == {"metadata": {"resourceVersion": "5", "finalizers": ["other/keep"],
                                  "annotations": {suspension.QUEUE_SUSPEND: "true"}}}


def test_a_tfjobs_flag_turned_false_after_adoption_becomes_its_users() -> None:
    job = queued_tfjob(suspend=False)
    workload = admitted(workload_for(job))
    workload["metadata"]["annotations"] = {suspension.QUEUE_SUSPEND: "true"}
    patch = suspension.workload_patch(job, workload)
    assert patch == {"metadata": {"resourceVersion": "5", "annotations": {suspension.QUEUE_SUSPEND: None}}}


# ---- the gate -----------------------------------------------------------------------------------------


@pytest.fixture
def kube(mocker: MockerFixture) -> Mock:
    return mocker.Mock(spec=Kube)


def gate(kube: Mock, workload: dict[str, Any] | None, queues_tfjobs: bool = False) -> KueueGate:
    flavors = {"f": {"metadata": {"name": "f"}, "spec": {}}}
    return KueueGate(kube, lambda _uid: workload, flavors.get, FakeClock(wall=NOW), queues_tfjobs=queues_tfjobs)


def test_the_gate_creates_a_suspended_jobs_workload_inactive_and_leaves_the_job_to_its_user(kube: Mock) -> None:
    decision = gate(kube, None).before_plan(queued_job(suspend=True))
    body = kube.create.call_args.args[1]
    assert body["spec"]["active"] is False
    assert decision.gate is None and decision.job["spec"]["suspend"] is True


def test_the_gate_deactivates_the_admitted_workload_of_a_job_its_user_suspended(kube: Mock) -> None:
    job = queued_job(suspend=True)
    decision = gate(kube, admitted(kueue.build_workload(job))).before_plan(job)
    path, patch = kube.patch.call_args.args
    assert path.endswith("/workloads/" + kueue.workload_name(job))
    assert patch["spec"] == {"active": False}
    assert decision.gate is None and decision.job["spec"]["suspend"] is True


def test_the_gate_holds_a_tfjob_its_user_suspended_though_its_workload_is_admitted(kube: Mock) -> None:
    job = queued_tfjob(suspend=True)
    decision = gate(kube, admitted(workload_for(job)), queues_tfjobs=True).before_plan(job)
    assert kube.patch.call_args.args[1]["spec"] == {"active": False}
    assert decision.job["spec"]["suspend"] is True


def test_the_gate_reactivates_the_workload_when_the_user_resumes_the_job(kube: Mock) -> None:
    job = queued_job(suspend=False)
    workload = deactivated(kueue.build_workload(job), marked=True)
    workload["metadata"]["resourceVersion"] = "6"
    gate(kube, workload).before_plan(job)
    assert kube.patch.call_args.args[1]["spec"] == {"active": True}


def test_a_reactivated_workload_waits_for_quota_rather_than_reading_as_evicted() -> None:
    job = queued_job()
    workload = kueue.build_workload(job)
    workload["status"] = {"conditions": [
        {"type": "Evicted", "status": "True", "reason": "Deactivated", "message": "The workload is deactivated"},
        {"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": "insufficient unused quota"},
        {"type": "Requeued", "status": "True", "reason": "Reactivated", "message": "The workload was reactivated"}]}
    assert suspension.waiting_message(job, workload) == (
        "WaitingForAdmission", "waiting for quota in LocalQueue lq: insufficient unused quota")
    still_inactive = {**workload, "spec": {**workload["spec"], "active": False}}
    assert suspension.waiting_message(job, still_inactive)[0] == "Evicted"
