"""MultiKueue in the reconciler, with the client mocked: a dispatched job on its manager gets nothing
but its Workload -- no pod, Service, status or TTL deletion --, and on a worker the copy's final
status is written before its Workload is marked Finished."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from unittest.mock import Mock

import pytest
from pytest_mock import MockerFixture

from controller.kueue import multikueue as mk
from controller.kueue import protocol as kueue
from controller.kueue.multikueue import MultiKueueGate
from controller.reconciler import Reconciler
from kube import Kube
from kube.clock import FakeClock
from tests.support.caches import FakeCaches
from tests.support.jobs import container, pods_for, role, tfjob
from tfjob_api.defaults import apply_defaults

NOW = datetime(2026, 12, 3, 12, 0, 0, tzinfo=UTC)


def dispatched_job(**status: Any) -> dict[str, Any]:
    job = tfjob("j", {"worker": role(2, containers=[container(requests={"cpu": "1"})])}, namespace="ns",
                uid="job-uid", resourceVersion="10", generation=1, labels={kueue.QUEUE_LABEL: "lq"})
    job["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    job["spec"]["ttlSecondsAfterFinished"] = 0
    return {**job, "status": status}


@pytest.fixture
def kube(mocker: MockerFixture) -> Mock:
    return mocker.Mock(spec=Kube)


def gate(kube: Mock) -> MultiKueueGate:
    return MultiKueueGate(kube, lambda _uid: None, lambda _name: None, FakeClock(wall=NOW), lambda _ns, _name: None)


def test_a_dispatched_job_gets_its_workload_and_no_pod_service_or_status(kube: Mock) -> None:
    Reconciler(kube, FakeCaches(dispatched_job()), clock=FakeClock(wall=NOW), kueue_gate=gate(kube)).reconcile("ns/j")
    [create] = kube.create.call_args_list
    assert create.args[0] == "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads"
    kube.patch.assert_not_called()
    kube.delete.assert_not_called()


def test_a_dispatched_job_finished_on_its_worker_is_neither_written_nor_deleted_by_its_ttl(kube: Mock) -> None:
    finished = dispatched_job(conditions=[{"type": "Succeeded", "status": "True", "reason": "JobSucceeded",
                                           "lastTransitionTime": "2026-12-03T11:00:00Z"}],
                              completionTime="2026-12-03T11:00:00Z")
    Reconciler(kube, FakeCaches(finished), clock=FakeClock(wall=NOW), kueue_gate=gate(kube)).reconcile("ns/j")
    kube.create.assert_not_called()
    kube.patch.assert_not_called()
    kube.delete.assert_not_called()


def test_without_kueue_a_dispatched_job_is_left_entirely_alone(kube: Mock) -> None:
    Reconciler(kube, FakeCaches(dispatched_job()), clock=FakeClock(wall=NOW)).reconcile("ns/j")
    assert kube.method_calls == []


def test_on_a_worker_the_final_status_is_written_before_the_workload_is_finished(kube: Mock) -> None:
    worker_copy = tfjob("j", {"worker": role(1, containers=[container(requests={"cpu": "1"})])}, namespace="ns",
                 uid="job-uid", resourceVersion="10", generation=1,
                 labels={kueue.QUEUE_LABEL: "lq", mk.PREBUILT_WORKLOAD_LABEL: "tensorflowjob-j-abcde"})
    worker_copy["status"] = {"conditions": [{"type": "Running", "status": "True", "reason": "JobRunning",
                                      "lastTransitionTime": "2026-12-03T11:00:00Z"}],
                      "startTime": "2026-12-03T11:00:00Z"}
    workload = kueue.build_workload(worker_copy)
    workload["metadata"].update(name="tensorflowjob-j-abcde", resourceVersion="3")
    workload["status"] = {
        "conditions": [{"type": t, "status": "True", "reason": t, "message": "", "lastTransitionTime": "x"}
                       for t in ("QuotaReserved", "Admitted")],
        "admission": {"clusterQueue": "cq", "podSetAssignments": [{"name": "worker", "flavors": {"cpu": "plain"}}]}}
    kube.patch.side_effect = lambda path, body, **_: {**worker_copy, "status": body.get("status"),
                                                       "metadata": {**worker_copy["metadata"], "resourceVersion": "11"}}
    multi = MultiKueueGate(kube, lambda uid: workload if uid == "job-uid" else None,
                           lambda _name: {"metadata": {"name": "plain"}, "spec": {}}, FakeClock(wall=NOW),
                           lambda _ns, _name: workload)
    succeeded = pods_for(apply_defaults(worker_copy), phase="Succeeded")
    Reconciler(kube, FakeCaches(worker_copy, succeeded), clock=FakeClock(wall=NOW), kueue_gate=multi).reconcile("ns/j")
    paths = [c.args[0] for c in kube.patch.call_args_list]
    assert paths == ["/apis/kubeflow.org/v1/namespaces/ns/tensorflowjobs/j/status",
                     "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/tensorflowjob-j-abcde/status"]
    job_status = kube.patch.call_args_list[0].args[1]["status"]
    assert any(c["type"] == "Succeeded" and c["status"] == "True" for c in job_status["conditions"])
    finished = kube.patch.call_args_list[1].args[1]["status"]["conditions"]
    assert any(c["type"] == "Finished" and c["status"] == "True" for c in finished)
