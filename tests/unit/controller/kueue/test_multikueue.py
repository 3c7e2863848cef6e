"""MultiKueue on both sides: a worker's copy adopts its prebuilt Workload, a manager's job keeps only
its Workload (pure rules, and MultiKueueGate with the client mocked)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from unittest.mock import Mock

import pytest
from pytest_mock import MockerFixture

from controller.kueue import multikueue as mk
from controller.kueue import protocol as kueue
from controller.kueue import tfjobs
from controller.kueue.multikueue import MultiKueueGate
from kube import Kube
from kube.clock import FakeClock
from tests.support.jobs import container, role, tfjob
from tests.support.kubeflow import tfjob_manifest
from tfjob_api.defaults import apply_defaults
from tfjob_api.kubeflow_model import to_model

NOW = datetime(2026, 12, 3, 12, 0, 0, tzinfo=UTC)
PREBUILT = "tensorflowjob-j-abcde"


def job(uid: str = "worker-uid", prebuilt: str | None = PREBUILT, **spec: Any) -> dict[str, Any]:
    labels = {kueue.QUEUE_LABEL: "lq"}
    if prebuilt:
        labels[mk.PREBUILT_WORKLOAD_LABEL] = prebuilt
    made = tfjob("j", {"worker": role(2, containers=[container(requests={"cpu": "1"})])}, namespace="ns",
                 uid=uid, labels=labels)
    return apply_defaults({**made, "spec": {**made["spec"], **spec}})


def prebuilt_workload(owner_uid: str = "manager-uid") -> dict[str, Any]:
    """The manager's Workload as MultiKueue copies it to a worker: no owner, the manager job's UID label."""
    workload = kueue.build_workload(job(uid=owner_uid, prebuilt=None))
    metadata = {**workload["metadata"], "name": PREBUILT, "resourceVersion": "7",
                "labels": {kueue.JOB_UID_LABEL: owner_uid, mk.ORIGIN_LABEL: "manager"}}
    metadata.pop("ownerReferences")
    return {**workload, "metadata": metadata}


@pytest.fixture
def kube(mocker: MockerFixture) -> Mock:
    return mocker.Mock(spec=Kube)


def gate(kube: Mock, by_uid: dict[str, Any] | None = None, by_name: dict[str, Any] | None = None) -> MultiKueueGate:
    return MultiKueueGate(kube, lambda uid: (by_uid or {}).get(uid), lambda _name: None, FakeClock(wall=NOW),
                          lambda namespace, name: (by_name or {}).get(f"{namespace}/{name}"))


def test_a_prebuilt_workload_is_adopted_with_a_controller_reference_and_the_job_uid_label() -> None:
    patch = mk.adoption_patch(prebuilt_workload(), job())
    assert patch is not None
    assert patch["metadata"]["resourceVersion"] == "7"
    assert patch["metadata"]["labels"] == {kueue.JOB_UID_LABEL: "worker-uid"}
    [reference] = patch["metadata"]["ownerReferences"]
    assert reference == {"apiVersion": "kubeflow.org/v1", "kind": "TensorFlowJob", "name": "j", "uid": "worker-uid",
                         "controller": True, "blockOwnerDeletion": True}


def test_an_adopted_workload_needs_no_patch() -> None:
    workload = prebuilt_workload()
    workload["metadata"]["ownerReferences"] = [mk.owner_reference(job())]
    assert mk.adoption_patch(workload, job()) is None


def test_a_workload_another_controller_holds_is_not_taken() -> None:
    workload = prebuilt_workload()
    workload["metadata"]["ownerReferences"] = [mk.owner_reference(job(uid="someone-else"))]
    with pytest.raises(ValueError, match="controlled by TensorFlowJob j"):
        mk.adoption_patch(workload, job())


def test_a_tfjob_adopts_with_its_own_kind() -> None:
    tfjob_copy = {**job(), "apiVersion": "kubeflow.org/v1", "kind": "TFJob"}
    patch = mk.adoption_patch(prebuilt_workload(), tfjob_copy)
    assert patch is not None and patch["metadata"]["ownerReferences"][0]["kind"] == "TFJob"


def test_the_placement_is_the_workloads_cluster_name() -> None:
    assert mk.placement({"status": {"clusterName": "worker-1"}}) == "worker-1"
    assert mk.placement({"status": {}}) == "" and mk.placement(None) == ""


def test_a_worker_copy_adopts_its_prebuilt_workload_and_never_creates_one(kube: Mock) -> None:
    decision = gate(kube, by_name={f"ns/{PREBUILT}": prebuilt_workload()}).before_plan(job())
    path, patch = kube.patch.call_args.args
    assert path == f"/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/{PREBUILT}"
    assert patch["metadata"]["ownerReferences"][0]["uid"] == "worker-uid"
    kube.create.assert_not_called()
    assert decision.gate == (mk.WAITING_FOR_WORKLOAD, f"adopting its prebuilt Workload {PREBUILT}")


def test_a_worker_copy_waits_for_a_prebuilt_workload_not_seen_yet(kube: Mock) -> None:
    decision = gate(kube).before_plan(job())
    kube.create.assert_not_called()
    kube.patch.assert_not_called()
    assert decision.gate == (mk.WAITING_FOR_WORKLOAD, f"waiting for its prebuilt Workload {PREBUILT}")


def test_an_adopted_prebuilt_workload_once_admitted_runs_the_job(kube: Mock) -> None:
    worker_copy = job()
    workload = prebuilt_workload()
    workload["metadata"]["ownerReferences"] = [mk.owner_reference(worker_copy)]
    workload["status"] = {
        "conditions": [{"type": t, "status": "True", "reason": t, "message": "", "lastTransitionTime": "x"}
                       for t in ("QuotaReserved", "Admitted")],
        "admission": {"clusterQueue": "cq", "podSetAssignments": [{"name": "worker", "flavors": {"cpu": "plain"}}]}}
    flavors = {"plain": {"metadata": {"name": "plain"}, "spec": {}}}
    multi = MultiKueueGate(kube, lambda uid: workload if uid == "worker-uid" else None, flavors.get,
                           FakeClock(wall=NOW), lambda _ns, _name: workload)
    decision = multi.before_plan(worker_copy)
    assert decision.gate is None and decision.workload is workload
    kube.create.assert_not_called()


def test_a_dispatched_job_on_the_manager_gets_a_workload_and_nothing_else(kube: Mock) -> None:
    manager_job = job(uid="manager-uid", prebuilt=None, managedBy="kueue.x-k8s.io/multikueue")
    gate(kube).keep_dispatched(manager_job)
    path, body = kube.create.call_args.args
    assert path == "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads"
    assert body["metadata"]["ownerReferences"][0]["uid"] == "manager-uid"
    kube.patch.assert_not_called()


def test_a_finished_dispatched_job_gets_no_new_workload(kube: Mock) -> None:
    manager_job = job(uid="manager-uid", prebuilt=None, managedBy="kueue.x-k8s.io/multikueue")
    manager_job["status"] = {"conditions": [{"type": "Succeeded", "status": "True"}]}
    gate(kube).keep_dispatched(manager_job)
    kube.create.assert_not_called()


def test_an_evicted_dispatched_workload_is_cleared_at_once(kube: Mock) -> None:
    manager_job = job(uid="manager-uid", prebuilt=None, managedBy="kueue.x-k8s.io/multikueue")
    workload = kueue.build_workload(manager_job)
    workload["metadata"]["resourceVersion"] = "3"
    workload["status"] = {"conditions": [
        {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "", "lastTransitionTime": "x"},
        {"type": "Evicted", "status": "True", "reason": "AdmissionCheck", "message": "worker lost",
         "lastTransitionTime": "x"}]}
    gate(kube, by_uid={"manager-uid": workload}).keep_dispatched(manager_job)
    path, patch = kube.patch.call_args.args
    assert path.endswith("/status")
    assert patch["status"]["admission"] is None
    kube.create.assert_not_called()


def test_a_prebuilt_workload_that_does_not_match_the_copy_is_finished_out_of_sync_never_replaced(kube: Mock) -> None:
    worker_copy = job()
    workload = prebuilt_workload()
    workload["metadata"]["ownerReferences"] = [mk.owner_reference(worker_copy)]
    workload["spec"]["podSets"][0]["count"] = 5  # the manager's job had five workers
    multi = MultiKueueGate(kube, lambda uid: workload if uid == "worker-uid" else None, lambda _name: None,
                           FakeClock(wall=NOW), lambda _ns, _name: workload)
    decision = multi.before_plan(worker_copy)
    path, patch = kube.patch.call_args.args
    assert path.endswith(f"/workloads/{PREBUILT}/status")
    finished = next(c for c in patch["status"]["conditions"] if c["type"] == "Finished")
    assert (finished["status"], finished["reason"]) == ("True", "OutOfSync")
    kube.delete.assert_not_called()
    kube.create.assert_not_called()
    assert decision.gate == ("WorkloadFinished", mk.OUT_OF_SYNC_MESSAGE)


def tfjob_copy() -> dict[str, Any]:
    """A worker's copy of a TFJob with a Master (the job model's chief), as MultiKueue creates it."""
    replica = {"replicas": 1, "template": {"spec": {"containers": [
        {"name": "tensorflow", "image": "tf", "resources": {"requests": {"cpu": "1"}}}]}}}
    stored = tfjob_manifest("t", {"Master": replica, "Worker": {**replica, "replicas": 2}}, suspend=True,
                            metadata={"namespace": "ns", "uid": "worker-uid", "labels": {
                                kueue.QUEUE_LABEL: "lq", mk.PREBUILT_WORKLOAD_LABEL: PREBUILT}})
    return to_model(stored)


def tfjob_prebuilt_workload(copy: dict[str, Any]) -> dict[str, Any]:
    """The manager's TFJob Workload (Kueue's integration: podSets `master`, `worker`), adopted by the copy."""
    workload = tfjobs.for_tfjob(kueue.build_workload(copy), copy, "kubeflow.org/v1")
    workload["metadata"].update(name=PREBUILT, resourceVersion="7")
    workload["metadata"]["ownerReferences"] = [mk.owner_reference(copy)]
    return workload


def test_a_tfjob_copy_reads_its_prebuilt_workloads_replica_type_podsets_as_its_roles(kube: Mock) -> None:
    copy = tfjob_copy()
    workload = tfjob_prebuilt_workload(copy)
    assert [p["name"] for p in workload["spec"]["podSets"]] == ["master", "worker"]
    multi = MultiKueueGate(kube, lambda uid: workload if uid == "worker-uid" else None, lambda _name: None,
                           FakeClock(wall=NOW), lambda _ns, _name: workload, queues_tfjobs=True)
    decision = multi.before_plan(copy)
    kube.patch.assert_not_called()  # not finished out of sync
    kube.create.assert_not_called()
    assert decision.gate is not None and decision.gate[0] == "WaitingForAdmission"
