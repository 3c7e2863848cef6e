"""The reconciler writes a job's PodGroup before its pods and holds the pods while it cannot; without a gang
scheduler it never touches PodGroups (client mocked)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from unittest.mock import Mock

import pytest
from pytest_mock import MockerFixture

from controller.events import EventRecorder
from controller.job import gang
from controller.job.gang_schedulers import gang_scheduler
from controller.job.kinds import TENSORFLOWJOB
from controller.options import ControllerOptions
from controller.reconciler import Reconciler, RequeueError
from kube import ApiError
from kube.clock import FakeClock
from tests.support.caches import FakeCaches
from tests.support.jobs import role, tfjob
from tests.support.kubeflow import replica, tfjob_manifest
from tests.support.mock_kube import created_kinds, mock_kube
from tfjob_api.defaults import apply_defaults

NOW = datetime(2026, 12, 2, 12, 0, 0, tzinfo=UTC)
GROUPS = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/ns/podgroups"
PLUGINS = gang_scheduler("scheduler-plugins")
assert PLUGINS is not None


def make_job(workers: int = 2, **spec: Any) -> dict[str, Any]:
    return tfjob("j", {"worker": role(workers), **spec}, namespace="ns", uid="job-uid", resourceVersion="10",
                 generation=1)


@pytest.fixture
def kube(mocker: MockerFixture) -> Mock:
    return mock_kube(mocker, make_job())


def reconciler(kube: Mock, caches: FakeCaches, scheduler: str = "scheduler-plugins", **kwargs: Any) -> Reconciler:
    return Reconciler(kube, caches, ControllerOptions(gang_scheduler=scheduler),  # type: ignore[arg-type]
                      clock=FakeClock(wall=NOW), **kwargs)


def owned_group(job: dict[str, Any]) -> dict[str, Any]:
    group = gang.build_pod_group(apply_defaults(job), PLUGINS, TENSORFLOWJOB)
    group["metadata"].update(uid="pg-uid", resourceVersion="3")
    return group


def test_the_pod_group_is_created_before_any_pod(kube: Mock) -> None:
    outcome = reconciler(kube, FakeCaches(make_job())).reconcile("ns/j")
    assert kube.create.call_args_list[0].args[0] == GROUPS
    assert created_kinds(kube)[0] == "PodGroup"
    assert sorted(created_kinds(kube)[1:]) == ["Pod", "Pod", "Service"]
    assert "podgroup/j" in outcome.created


def test_without_a_gang_scheduler_no_pod_group_is_read_or_written(kube: Mock) -> None:
    caches = FakeCaches(make_job(schedulingPolicy={"minAvailable": 2}))
    reconciler(kube, caches, scheduler="none").reconcile("ns/j")
    assert caches.pod_group_reads == 0
    assert "PodGroup" not in created_kinds(kube)
    assert all("podgroups" not in str(c.args[0]) for c in kube.method_calls if c.args)


def test_a_refused_pod_group_holds_the_pods_back_and_retries(kube: Mock) -> None:
    def create(path: str, body: dict[str, Any]) -> dict[str, Any]:
        if body["kind"] == "PodGroup":
            raise ApiError(403, "Forbidden", "podgroups.scheduling.x-k8s.io is forbidden")
        return body

    kube.create.side_effect = create
    with pytest.raises(RequeueError):
        reconciler(kube, FakeCaches(make_job())).reconcile("ns/j")
    assert "Pod" not in created_kinds(kube)


def test_a_pod_group_name_held_by_a_foreign_object_is_a_conflict(kube: Mock) -> None:
    foreign = {"metadata": {"name": "j", "namespace": "ns", "uid": "other"}, "spec": {"minMember": 1}}
    with pytest.raises(RequeueError):
        reconciler(kube, FakeCaches(make_job(), pod_group=foreign)).reconcile("ns/j")
    assert "Pod" not in created_kinds(kube)
    running = next(c for c in kube.patch.call_args.args[1]["status"]["conditions"] if c["type"] == "Running")
    assert running["reason"] == "NameConflict" and "PodGroup j already exists" in running["message"]
    kube.delete.assert_not_called()


def test_a_pod_group_the_api_server_rejects_fails_the_job(kube: Mock) -> None:
    def create(path: str, body: dict[str, Any]) -> dict[str, Any]:
        if body["kind"] == "PodGroup":
            raise ApiError(422, "Invalid", "spec.minResources[cpu]: Invalid value")
        return body

    kube.create.side_effect = create
    reconciler(kube, FakeCaches(make_job())).reconcile("ns/j")
    failed = next(c for c in kube.patch.call_args.args[1]["status"]["conditions"] if c["type"] == "Failed")
    assert failed["reason"] == "InvalidSchedulingPolicy"
    assert "Pod" not in created_kinds(kube)


def test_scaling_patches_the_pod_group_with_a_resource_version_precondition(kube: Mock) -> None:
    group = owned_group(make_job(workers=2))
    outcome = reconciler(kube, FakeCaches(make_job(workers=3), pod_group=group)).reconcile("ns/j")
    path, body = next(c.args for c in kube.patch.call_args_list if "podgroups" in c.args[0])
    assert path == GROUPS + "/j"
    assert body == {"spec": {"minMember": 3}, "metadata": {"resourceVersion": "3"}}
    assert outcome.updated == ["podgroup/j"]


def test_suspending_deletes_the_pod_group_by_uid(kube: Mock) -> None:
    outcome = reconciler(kube, FakeCaches(make_job(suspend=True), pod_group=owned_group(make_job()))).reconcile("ns/j")
    kube.delete.assert_any_call(GROUPS + "/j", uid="pg-uid")
    assert "podgroup/j" in outcome.deleted


def test_a_tfjobs_scheduling_policy_is_used_not_ignored_under_a_gang_scheduler(kube: Mock,
                                                                              mocker: MockerFixture) -> None:
    recorder = mocker.Mock(spec=EventRecorder)
    job = tfjob_manifest("j", {"Worker": replica(2)}, schedulingPolicy={"minAvailable": 2, "queue": "q"},
                         metadata={"namespace": "ns", "uid": "tf-uid", "resourceVersion": "10", "generation": 1})
    reconciler(kube, FakeCaches(job, key="TFJob:ns/j"), scheduler="volcano", recorder=recorder).reconcile("TFJob:ns/j")
    group = next(c.args[1] for c in kube.create.call_args_list if c.args[1]["kind"] == "PodGroup")
    assert group["spec"]["queue"] == "q" and group["spec"]["minMember"] == 2
    assert group["metadata"]["ownerReferences"][0]["kind"] == "TFJob"
    assert not [c for c in recorder.record.call_args_list if c.args[2] == "IgnoredField"]
    assert "Pod" not in created_kinds(kube)  # Volcano has not admitted the new group yet


def test_under_kubernetes_the_workload_then_the_pod_group_are_created_before_any_pod(kube: Mock) -> None:
    outcome = reconciler(kube, FakeCaches(make_job()), scheduler="kubernetes").reconcile("ns/j")
    paths = [c.args[0] for c in kube.create.call_args_list]
    assert paths[:2] == ["/apis/scheduling.k8s.io/v1beta1/namespaces/ns/workloads",
                         "/apis/scheduling.k8s.io/v1beta1/namespaces/ns/podgroups"]
    assert sorted(created_kinds(kube)[2:]) == ["Pod", "Pod", "Service"]
    assert "workload/j" in outcome.created and "podgroup/j" in outcome.created


def test_a_refused_workload_holds_the_pods_back(kube: Mock) -> None:
    def create(path: str, body: dict[str, Any]) -> dict[str, Any]:
        if body["kind"] == "Workload":
            raise ApiError(403, "Forbidden", "workloads.scheduling.k8s.io is forbidden")
        return body

    kube.create.side_effect = create
    with pytest.raises(RequeueError):
        reconciler(kube, FakeCaches(make_job()), scheduler="kubernetes").reconcile("ns/j")
    assert "Pod" not in created_kinds(kube)


def test_without_a_gang_scheduler_no_workload_is_read_or_written(kube: Mock) -> None:
    caches = FakeCaches(make_job())
    reconciler(kube, caches, scheduler="none").reconcile("ns/j")
    assert caches.workload_reads == 0 and caches.pod_group_reads == 0
    assert all("scheduling.k8s.io" not in str(c.args[0]) for c in kube.method_calls if c.args)
