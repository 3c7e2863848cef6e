"""`tfjob-operator convert`: the TensorFlowJob for a TFJob, and what does not carry over."""

from __future__ import annotations

from controller.job.kubeflow.convert import NO_LIMIT, convert
from controller.job.validation import validate_job
from tests.support.kubeflow import replica, tfjob_manifest
from tfjob_api.defaults import apply_defaults
from tfjob_api.kubeflow_model import to_model


def test_kubeflows_defaults_are_written_out() -> None:
    job = convert(tfjob_manifest("j", {"PS": replica(2), "Worker": replica(4)})).job
    assert job["spec"]["ps"]["restartPolicy"] == job["spec"]["worker"]["restartPolicy"] == "Never"
    assert (job["spec"]["cleanPodPolicy"], job["spec"]["backoffLimit"]) == ("None", NO_LIMIT)


def test_the_result_is_a_valid_tensorflowjob() -> None:
    tfjob = tfjob_manifest("j", {"Chief": replica(1), "Evaluator": replica(1), "Worker": replica(2)},
                           backoffLimit=3, ttlSecondsAfterFinished=60, suspend=True, metadata={"namespace": "a"})
    tfjob["spec"]["successPolicy"] = "AllWorkers"
    job = convert(tfjob).job
    assert validate_job(job) == []
    assert {k: job["spec"][k] for k in ("backoffLimit", "ttlSecondsAfterFinished", "suspend", "successPolicy")} == {
        "backoffLimit": 3, "ttlSecondsAfterFinished": 60, "suspend": True, "successPolicy": "AllWorkers"}
    assert job["metadata"] == {"name": "j", "namespace": "a"}


def test_master_becomes_the_chief_with_a_note() -> None:
    conversion = convert(tfjob_manifest("j", {"Master": replica(1), "Worker": replica(1)}, backoffLimit=1))
    assert "chief" in conversion.job["spec"]
    assert conversion.notes == ["spec.tfReplicaSpecs.Master becomes spec.chief: its pod is <name>-chief-0 and its "
                                "TF_CONFIG task type is chief"]


def test_what_does_not_carry_over_is_named_field_by_field() -> None:
    tfjob = tfjob_manifest("j", {"Worker": replica(1), "Evaluator": replica(1)}, backoffLimit=1,
                           managedBy="kubeflow.org/training-operator", schedulingPolicy={"queue": "q"})
    tfjob["spec"]["enableDynamicWorker"] = True
    assert [note.split(" ")[0] for note in convert(tfjob).notes] == [
        "spec.runPolicy.managedBy", "spec.enableDynamicWorker", "the"]


def test_scheduling_policy_carries_over_to_the_tensorflowjobs_own_field() -> None:
    policy = {"minAvailable": 2, "queue": "q", "priorityClass": "high", "minResources": {"cpu": "4"}}
    tfjob = tfjob_manifest("j", {"Worker": replica(2)}, backoffLimit=1, schedulingPolicy=policy)
    conversion = convert(tfjob)
    assert conversion.job["spec"]["schedulingPolicy"] == policy
    assert conversion.notes == []


def test_the_tensorflowjob_plans_as_the_tfjobs_own_model() -> None:
    tfjob = tfjob_manifest("j", {"Master": replica(1), "PS": replica(1), "Worker": replica(3)},
                           backoffLimit=2, activeDeadlineSeconds=600, cleanPodPolicy="All",
                           metadata={"namespace": "a", "uid": "u"})
    model, converted = to_model(tfjob)["spec"], apply_defaults(convert(tfjob).job)["spec"]
    assert {k: converted[k] for k in model} == model
