"""A TFJob's pods and Service: owned by the TFJob, with this operator's labels and Kubeflow's."""

from __future__ import annotations

from controller.job.builders import build_pod, build_service
from controller.job.kinds import TFJOB
from tests.support.kubeflow import replica, tfjob_manifest
from tfjob_api.kubeflow_model import to_model


def model(**replicas: dict) -> dict:
    return to_model(tfjob_manifest("j", replicas, metadata={"namespace": "ns", "uid": "tf-uid"}))


def test_a_pod_is_owned_by_the_tfjob() -> None:
    pod = build_pod(model(Worker=replica(2)), "worker", 1, "", None, (), TFJOB)
    assert pod["metadata"]["ownerReferences"] == [{"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": "j",
                                                    "uid": "tf-uid", "controller": True, "blockOwnerDeletion": True}]


def test_a_pod_carries_kubeflows_labels_beside_the_operators() -> None:
    labels = build_pod(model(PS=replica(1), Worker=replica(2)), "worker", 1, "", None, (), TFJOB)["metadata"]["labels"]
    assert {k: v for k, v in labels.items() if k.startswith("training.kubeflow.org/")} == {
        "training.kubeflow.org/operator-name": "tfjob-operator", "training.kubeflow.org/job-name": "j",
        "training.kubeflow.org/replica-type": "worker", "training.kubeflow.org/replica-index": "1"}
    assert labels["tensorflowjob.kubeflow.org/replica-type"] == "worker"


def test_worker_zero_has_the_master_role_when_there_is_no_chief() -> None:
    labels = build_pod(model(Worker=replica(2)), "worker", 0, "", None, (), TFJOB)["metadata"]["labels"]
    assert labels["training.kubeflow.org/job-role"] == "master"


def test_the_chief_has_the_master_role_and_worker_zero_does_not() -> None:
    job = model(Chief=replica(1), Worker=replica(2))
    assert build_pod(job, "chief", 0, "", None, (), TFJOB)["metadata"]["labels"]["training.kubeflow.org/job-role"] == "master"
    assert "training.kubeflow.org/job-role" not in build_pod(job, "worker", 0, "", None, (), TFJOB)["metadata"]["labels"]


def test_a_master_replica_is_labelled_master_and_named_as_the_chief() -> None:
    pod = build_pod(model(Master=replica(1), Worker=replica(1)), "chief", 0, "", None, (), TFJOB)
    assert pod["metadata"]["labels"]["training.kubeflow.org/replica-type"] == "master"
    assert pod["metadata"]["name"] == "j-chief-0"


def test_the_service_is_one_headless_service_per_job_owned_by_the_tfjob() -> None:
    service = build_service(model(Worker=replica(2)), TFJOB)
    assert service["metadata"]["name"] == "j"
    assert service["metadata"]["ownerReferences"][0]["kind"] == "TFJob"
    assert service["metadata"]["labels"]["training.kubeflow.org/job-name"] == "j"
    assert service["spec"]["clusterIP"] == "None"
