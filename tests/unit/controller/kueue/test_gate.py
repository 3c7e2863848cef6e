"""KueueGate: the Workload reads and writes around one reconcile, with the client mocked."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from unittest.mock import Mock

import pytest
from pytest_mock import MockerFixture

from controller.kueue import protocol as kueue
from controller.kueue.gate import KueueGate
from kube import Kube
from kube.clock import FakeClock
from tests.support.jobs import container, role, tfjob
from tfjob_api.defaults import apply_defaults

NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)


def queued_job(**status: Any) -> dict[str, Any]:
    job = tfjob("j", {"worker": role(2, containers=[container(requests={"cpu": "1"})])}, namespace="ns",
                uid="job-uid", labels={kueue.QUEUE_LABEL: "lq"})
    return apply_defaults({**job, "status": status})


def admitted(workload: dict[str, Any], flavor: str = "pool-a") -> dict[str, Any]:
    workload = {**workload, "metadata": {**workload["metadata"], "uid": "wl-uid", "resourceVersion": "5"}}
    workload["status"] = {
        "conditions": [{"type": t, "status": "True", "reason": t, "message": "", "lastTransitionTime": "x"}
                       for t in ("QuotaReserved", "Admitted")],
        "admission": {"clusterQueue": "cq", "podSetAssignments": [{"name": "worker", "flavors": {"cpu": flavor}}]},
    }
    return workload


@pytest.fixture
def kube(mocker: MockerFixture) -> Mock:
    return mocker.Mock(spec=Kube)


def gate(kube: Mock, workload: dict[str, Any] | None, flavors: dict[str, Any] | None = None) -> KueueGate:
    return KueueGate(kube, lambda _uid: workload, lambda name: (flavors or {}).get(name), FakeClock(wall=NOW))


def test_queued_job_without_workload_creates_one_and_waits(kube: Mock) -> None:
    decision = gate(kube, None).before_plan(queued_job())
    path, body = kube.create.call_args.args
    assert path == "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads"
    assert body["spec"]["queueName"] == "lq"
    assert "finalizers" not in body["metadata"]
    assert decision.gate == ("WaitingForAdmission", "waiting for quota in LocalQueue lq")


def test_admitted_workload_runs_the_job_with_its_flavor(kube: Mock) -> None:
    job = queued_job()
    workload = admitted(kueue.build_workload(job))
    flavor = {"metadata": {"name": "pool-a"}, "spec": {"nodeLabels": {"pool": "a"}}}
    decision = gate(kube, workload, {"pool-a": flavor}).before_plan(job)
    assert decision.gate is None
    assert decision.job["spec"]["worker"]["template"]["spec"]["nodeSelector"] == {"pool": "a"}
    kube.create.assert_not_called()


def test_finished_job_finishes_its_workload(kube: Mock) -> None:
    job = queued_job()
    workload = admitted(kueue.build_workload(job))
    status = {"conditions": [{"type": "Succeeded", "status": "True", "reason": "JobSucceeded", "message": "done"}]}
    gate(kube, workload).after_plan(job, status, workload, active_pods=0)
    path, patch = kube.patch.call_args.args
    assert path.endswith("/workloads/" + workload["metadata"]["name"] + "/status")
    finished = next(c for c in patch["status"]["conditions"] if c["type"] == "Finished")
    assert (finished["status"], finished["reason"]) == ("True", "Succeeded")


def test_evicted_workload_is_cleared_only_once_no_pod_is_active(kube: Mock) -> None:
    job = queued_job()
    workload = admitted(kueue.build_workload(job))
    workload["status"]["conditions"].append({"type": "Evicted", "status": "True", "reason": "Preempted",
                                             "message": "preempted", "lastTransitionTime": "x"})
    gate(kube, workload).after_plan(job, {"conditions": []}, workload, active_pods=2)
    kube.patch.assert_not_called()
    gate(kube, workload).after_plan(job, {"conditions": []}, workload, active_pods=0)
    assert kube.patch.call_args.args[1]["status"]["admission"] is None
