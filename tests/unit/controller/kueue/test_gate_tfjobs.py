"""KueueGate with Kubeflow TFJobs and topology: which kinds it queues, and what it writes for them."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from unittest.mock import Mock

import pytest
from pytest_mock import MockerFixture

from controller.job.kinds import TENSORFLOWJOB, TFJOB
from controller.kueue import protocol as kueue
from controller.kueue import tfjobs, topology
from controller.kueue.gate import KueueGate, decide_tfjobs
from kube import ApiError, Kube
from kube.clock import FakeClock
from tests.support.kubeflow import tfjob_manifest
from tfjob_api.kubeflow import REPLICA_INDEX_LABEL as KUBEFLOW_INDEX_LABEL
from tfjob_api.kubeflow_model import to_model

NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)
RACK = "tfjob-test/rack"


def queued_tfjob(suspend: bool = True) -> dict[str, Any]:
    template = {"metadata": {"annotations": {topology.REQUIRED: RACK}},
                "spec": {"containers": [{"name": "tensorflow", "image": "tf", "resources": {"requests": {"cpu": "1"}}}]}}
    stored = tfjob_manifest("train", {"Worker": {"replicas": 2, "template": template}}, suspend=suspend,
                            metadata={"namespace": "ns", "uid": "u-1", "labels": {kueue.QUEUE_LABEL: "lq"}})
    return to_model(stored)


@pytest.fixture
def kube(mocker: MockerFixture) -> Mock:
    return mocker.Mock(spec=Kube)


def gate(kube: Mock, workload: dict[str, Any] | None, queues_tfjobs: bool = True) -> KueueGate:
    flavors = {"f": {"metadata": {"name": "f"}, "spec": {}}}
    return KueueGate(kube, lambda _uid: workload, flavors.get, FakeClock(wall=NOW), queues_tfjobs=queues_tfjobs)


def test_tfjobs_queue_through_the_gate_only_when_the_operator_queues_them(kube: Mock) -> None:
    assert gate(kube, None).queues(TFJOB) and gate(kube, None).queues(TENSORFLOWJOB)
    assert not gate(kube, None, queues_tfjobs=False).queues(TFJOB)


def test_a_queued_tfjob_gets_the_workload_kueues_integration_would_make_with_its_topology(kube: Mock) -> None:
    decision = gate(kube, None).before_plan(queued_tfjob(suspend=False))
    body = kube.create.call_args.args[1]
    assert body["metadata"]["name"] == tfjobs.workload_name(queued_tfjob())
    assert body["metadata"]["ownerReferences"][0]["kind"] == "TFJob"
    assert body["spec"]["podSets"][0]["topologyRequest"] == {"required": RACK, "podIndexLabel": KUBEFLOW_INDEX_LABEL}
    assert decision.gate is not None and decision.gate[0] == "WaitingForAdmission"


def test_an_admitted_tfjob_runs_despite_its_suspend_flag_and_waits_at_the_topology_gate(kube: Mock) -> None:
    job = queued_tfjob(suspend=True)
    workload = tfjobs.for_tfjob(kueue.build_workload(job), job, "kubeflow.org/v1")
    workload["metadata"].update(resourceVersion="3", finalizers=[tfjobs.RESOURCE_IN_USE])
    workload["status"] = {
        "conditions": [{"type": t, "status": "True", "reason": t, "message": "", "lastTransitionTime": "x"}
                       for t in ("QuotaReserved", "Admitted")],
        "admission": {"clusterQueue": "cq", "podSetAssignments": [{
            "name": "worker", "flavors": {"cpu": "f"},
            "topologyAssignment": {"levels": [RACK], "slices": [{"domainCount": 1, "valuesPerLevel": [
                {"universal": "r1"}], "podCounts": {"universal": 2}}]}}]}}
    decision = gate(kube, workload).before_plan(job)
    assert decision.gate is None and decision.job["spec"]["suspend"] is False
    template = decision.job["spec"]["worker"]["template"]
    assert template["spec"]["schedulingGates"] == [{"name": topology.SCHEDULING_GATE}]
    assert template["metadata"]["labels"][kueue.PODSET_LABEL] == "worker"
    path, patch = kube.patch.call_args.args  # Kueue's finalizer dropped on adoption
    assert path.endswith("/workloads/" + workload["metadata"]["name"])
    assert patch["metadata"]["finalizers"] == []


def test_a_bad_topology_annotation_holds_the_job_with_an_error_naming_it(kube: Mock) -> None:
    job = queued_tfjob()
    job["spec"]["worker"]["template"]["metadata"]["annotations"] = {topology.UNCONSTRAINED: "sometimes"}
    decision = gate(kube, None).before_plan(job)
    kube.create.assert_not_called()
    assert decision.gate is not None and decision.gate[0] == "InvalidTopologyRequest"
    assert "spec.worker.template.metadata.annotations" in decision.gate[1]


def allowed(kube: Mock, allowed: bool) -> None:
    """The API server's answer to the operator's access review."""
    kube.create.return_value = {"status": {"allowed": allowed}}


@pytest.mark.parametrize("status", [403, 404])
def test_a_kueue_configuration_the_operator_cannot_read_leaves_tfjobs_to_kueue(kube: Mock, status: int) -> None:
    allowed(kube, True)
    kube.get.side_effect = ApiError(status)
    assert decide_tfjobs(kube, "auto") is False


def test_without_the_grant_auto_leaves_tfjobs_to_kueue_and_makes_no_refused_read(kube: Mock) -> None:
    allowed(kube, False)
    assert decide_tfjobs(kube, "auto") is False
    kube.get.assert_not_called()
    [review] = kube.create.call_args_list
    assert review.args[0] == "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
    assert review.args[1]["spec"]["resourceAttributes"] == {
        "verb": "get", "resource": "configmaps", "namespace": "kueue-system", "name": "kueue-manager-config"}


def test_auto_reads_kueues_configmap_and_the_flag_reads_nothing(kube: Mock) -> None:
    allowed(kube, True)
    kube.get.return_value = {"data": {tfjobs.CONFIG_KEY: "integrations:\n  frameworks: [batch/job]\n"}}
    assert decide_tfjobs(kube, "auto") is True
    assert kube.get.call_args.args[0] == "/api/v1/namespaces/kueue-system/configmaps/kueue-manager-config"
    kube.get.reset_mock()
    assert decide_tfjobs(kube, "kueue") is False
    kube.get.assert_not_called()
