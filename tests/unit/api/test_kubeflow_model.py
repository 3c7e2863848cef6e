"""A TFJob as the job model: Kubeflow's defaults for the kind, replica types as roles."""

from __future__ import annotations

from tests.support.kubeflow import replica, tfjob_manifest
from tfjob_api.kubeflow_model import ignored_fields, to_model


def test_replica_defaults_are_kubeflows_one_replica_restart_policy_never() -> None:
    model = to_model(tfjob_manifest("j", {"Worker": replica(None)}))
    assert (model["spec"]["worker"]["replicas"], model["spec"]["worker"]["restartPolicy"]) == (1, "Never")


def test_run_policy_defaults_are_clean_nothing_and_no_backoff_limit() -> None:
    spec = to_model(tfjob_manifest("j", {"Worker": replica(2)}))["spec"]
    assert (spec["cleanPodPolicy"], spec["backoffLimit"], spec["suspend"], spec["successPolicy"]) == (
        "None", None, False, "")


def test_run_policy_fields_move_to_the_top_of_the_model_spec() -> None:
    tfjob = tfjob_manifest("j", {"Worker": replica(2)}, cleanPodPolicy="All", ttlSecondsAfterFinished=60,
                           activeDeadlineSeconds=600, backoffLimit=3, suspend=True)
    spec = to_model(tfjob)["spec"]
    assert {k: spec[k] for k in ("cleanPodPolicy", "ttlSecondsAfterFinished", "activeDeadlineSeconds",
                                 "backoffLimit", "suspend")} == {
        "cleanPodPolicy": "All", "ttlSecondsAfterFinished": 60, "activeDeadlineSeconds": 600, "backoffLimit": 3,
        "suspend": True}


def test_replica_types_are_matched_case_insensitively() -> None:
    model = to_model(tfjob_manifest("j", {"WORKER": replica(2), "ps": replica(1)}))
    assert set(model["spec"]) >= {"worker", "ps"}
    assert model["kubeflow"]["replicaTypes"] == {"worker": "Worker", "ps": "PS"}


def test_master_is_served_as_the_chief_and_remembered_as_master() -> None:
    model = to_model(tfjob_manifest("j", {"Master": replica(1), "Worker": replica(2)}))
    assert model["spec"]["chief"]["replicas"] == 1
    assert model["kubeflow"]["replicaTypes"]["chief"] == "Master"


def test_the_model_keeps_the_tfjobs_identity() -> None:
    tfjob = tfjob_manifest("j", {"Worker": replica(1)}, metadata={"namespace": "ns", "uid": "u1"})
    model = to_model(tfjob)
    assert (model["kind"], model["apiVersion"], model["metadata"]["uid"]) == ("TFJob", "kubeflow.org/v1", "u1")
    assert model["kubeflow"] == {"replicaTypes": {"worker": "Worker"}}


def test_the_tfjob_is_not_changed_by_the_translation() -> None:
    tfjob = tfjob_manifest("j", {"Worker": replica(1)})
    before = repr(tfjob)
    to_model(tfjob)["spec"]["worker"]["template"]["spec"]["containers"].append({"name": "x"})
    assert repr(tfjob) == before


def test_scheduling_policy_and_dynamic_workers_are_reported_as_not_used() -> None:
    tfjob = tfjob_manifest("j", {"Worker": replica(1)}, schedulingPolicy={"minAvailable": 1})
    tfjob["spec"]["enableDynamicWorker"] = True
    assert [note.split(" ")[0] for note in ignored_fields(tfjob)] == [
        "spec.runPolicy.schedulingPolicy", "spec.enableDynamicWorker"]
