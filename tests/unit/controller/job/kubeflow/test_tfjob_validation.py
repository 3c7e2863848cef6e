"""What a TFJob's admission rejects (this project's TFJob CRD, Kubeflow's webhook rules), offline."""

from __future__ import annotations

from typing import Any

from controller.job.kubeflow.validation import validate_tfjob
from tests.support.jobs import container
from tests.support.kubeflow import replica, tfjob_manifest


def messages(tfjob: dict[str, Any]) -> list[str]:
    return [str(p) for p in validate_tfjob(tfjob)]


def test_kubeflows_parameter_server_example_is_valid() -> None:
    assert messages(tfjob_manifest("dist-mnist", {"PS": replica(2, policy="Never"),
                                                  "Worker": replica(4, policy="Never")})) == []


def test_replica_types_in_any_letter_case_are_valid() -> None:
    assert messages(tfjob_manifest("j", {"worker": replica(2), "PS": replica(1)})) == []


def test_an_unknown_replica_type_is_named() -> None:
    assert messages(tfjob_manifest("j", {"Worker": replica(1), "Launcher": replica(1)})) == [
        "spec.tfReplicaSpecs.Launcher: unknown replica type; replica types are Chief, Master, PS, Worker "
        "and Evaluator"]


def test_a_replica_type_given_twice_in_two_spellings_is_rejected() -> None:
    [problem] = messages(tfjob_manifest("j", {"Worker": replica(1), "WORKER": replica(1)}))
    assert "given twice" in problem


def test_chief_and_master_together_are_rejected() -> None:
    assert messages(tfjob_manifest("j", {"Chief": replica(1), "Master": replica(1)})) == [
        "spec.tfReplicaSpecs: must not have more than 1 Chief or Master role"]


def test_a_replica_needs_a_container_named_tensorflow() -> None:
    tfjob = tfjob_manifest("j", {"Worker": replica(1, containers=[container(name="trainer")])})
    assert messages(tfjob) == ["spec.tfReplicaSpecs.Worker.template.spec.containers: template.spec.containers "
                               "must have a container named tensorflow"]


def test_a_container_without_an_image_is_named() -> None:
    tfjob = tfjob_manifest("j", {"Worker": replica(1, containers=[container(image="")])})
    assert messages(tfjob) == ["spec.tfReplicaSpecs.Worker.template.spec.containers[0].image: must not be empty"]


def test_two_chief_replicas_are_rejected() -> None:
    assert messages(tfjob_manifest("j", {"Chief": replica(2)})) == [
        "spec.tfReplicaSpecs.Chief.replicas: a job has at most one chief (or master) and one evaluator replica"]


def test_a_job_of_parameter_servers_only_is_rejected() -> None:
    assert messages(tfjob_manifest("j", {"PS": replica(2)})) == [
        "spec.tfReplicaSpecs: at least one of Chief, Master or Worker must have replicas > 0"]


def test_an_unknown_managed_by_value_is_rejected() -> None:
    [problem] = messages(tfjob_manifest("j", {"Worker": replica(1)}, managedBy="example.com/other"))
    assert problem.startswith("spec.runPolicy.managedBy: 'example.com/other' is not allowed")


def test_a_misspelt_run_policy_field_is_rejected() -> None:
    [problem] = messages(tfjob_manifest("j", {"Worker": replica(1)}, cleanpodpolicy="All"))
    assert problem.startswith("spec.runPolicy.cleanpodpolicy: unknown field")


def test_all_workers_success_policy_needs_workers() -> None:
    tfjob = tfjob_manifest("j", {"Chief": replica(1)}, success_policy="AllWorkers")
    assert messages(tfjob) == ["spec.successPolicy: AllWorkers needs a Worker replica type with replicas > 0"]


def test_a_name_that_is_no_dns_label_is_rejected() -> None:
    assert messages(tfjob_manifest("My_Job", {"Worker": replica(1)}))[0].startswith("metadata.name: 'My_Job'")


def test_a_tensorflowjob_is_not_a_tfjob() -> None:
    tfjob = tfjob_manifest("j", {"Worker": replica(1)})
    tfjob["kind"] = "TensorFlowJob"
    assert messages(tfjob) == ["kind: must be 'TFJob', got 'TensorFlowJob'"]
