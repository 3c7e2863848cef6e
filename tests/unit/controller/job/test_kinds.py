"""Each kind answers for itself: where it lives, its model and status, its owner reference and extra
labels, what it takes part in, what it ignores -- on plain dicts."""

from __future__ import annotations

from controller.job.kinds import TENSORFLOWJOB, TFJOB, kind_of_document, kind_of_owner, parse_key
from tests.support.jobs import make_job
from tests.support.kubeflow import replica, tfjob_manifest


def a_tfjob(**spec: object) -> dict:
    return tfjob_manifest("j", {"Worker": replica(2)}, metadata={"namespace": "ns", "uid": "tf-uid"}, **spec)


def test_a_tensorflowjob_gets_its_networkpolicy_and_queues_through_the_kueue_gate() -> None:
    assert TENSORFLOWJOB.network_policy and TENSORFLOWJOB.kueue_gate


def test_a_tfjob_has_no_networkpolicy_and_is_queued_by_kueues_own_integration() -> None:
    assert not TFJOB.network_policy and not TFJOB.kueue_gate


def test_each_kind_names_its_api_and_its_keys() -> None:
    assert (TENSORFLOWJOB.api_version, TENSORFLOWJOB.name) == ("kubeflow.org/v1", "TensorFlowJob")
    assert (TFJOB.api_version, TFJOB.name) == ("kubeflow.org/v1", "TFJob")
    assert parse_key(TENSORFLOWJOB.key("ns", "j")) == (TENSORFLOWJOB, "ns/j")
    assert parse_key(TFJOB.key("ns", "j")) == (TFJOB, "ns/j")


def test_an_owner_reference_and_a_document_name_their_kind() -> None:
    for kind in (TENSORFLOWJOB, TFJOB):
        reference = kind.owner_reference({"metadata": {"name": "j", "uid": "u"}})
        assert reference == {"apiVersion": kind.api_version, "kind": kind.name, "name": "j", "uid": "u",
                             "controller": True, "blockOwnerDeletion": True}
        assert kind_of_owner(reference) is kind
        assert kind_of_document({"kind": kind.name}) is kind
    assert kind_of_owner({"apiVersion": "batch/v1", "kind": "TFJob"}) is None
    assert kind_of_document("not a mapping") is TENSORFLOWJOB


def test_a_tensorflowjob_is_its_own_model_with_defaults_and_stores_the_planners_status() -> None:
    job = make_job(worker=2)
    model = TENSORFLOWJOB.model(job)
    assert model["spec"]["worker"]["replicas"] == 2 and "kubeflow" not in model
    status = {"conditions": [{"type": "Created", "status": "True"}]}
    assert TENSORFLOWJOB.stored_status(model, status, {}, "2026-01-01T00:00:00Z") is status
    assert TENSORFLOWJOB.model_status(status) == status
    assert TENSORFLOWJOB.validation(job, model)[0] is model


def test_a_tfjob_is_planned_as_its_translation_and_validated_as_written() -> None:
    tfjob = a_tfjob()
    model = TFJOB.model(tfjob)
    assert model["kind"] == "TFJob" and model["kubeflow"] == {"replicaTypes": {"worker": "Worker"}}
    assert TFJOB.validation(tfjob, model)[0] is tfjob
    assert TFJOB.validate(tfjob) == []
    stored = TFJOB.stored_status(model, {"conditions": []}, {}, "2026-01-01T00:00:00Z")
    assert "replicaStatuses" in stored


def test_only_a_tfjobs_pods_and_service_carry_kubeflows_labels() -> None:
    model = TFJOB.model(a_tfjob())
    assert TFJOB.pod_labels(model, "worker", 0)["training.kubeflow.org/job-role"] == "master"
    assert TFJOB.service_labels(model) == {"training.kubeflow.org/operator-name": "tfjob-operator",
                                           "training.kubeflow.org/job-name": "j"}
    job = TENSORFLOWJOB.model(make_job(worker=2))
    assert TENSORFLOWJOB.pod_labels(job, "worker", 0) == {} and TENSORFLOWJOB.service_labels(job) == {}


def test_only_a_tfjob_has_fields_it_ignores() -> None:
    tfjob = a_tfjob(schedulingPolicy={"queue": "q"})
    assert [note.split(" ")[0] for note in TFJOB.ignored_fields(tfjob)] == ["spec.runPolicy.schedulingPolicy"]
    assert TENSORFLOWJOB.ignored_fields(make_job(worker=1)) == []


def test_only_a_tfjob_converts_to_a_tensorflowjob() -> None:
    conversion = TFJOB.to_tensorflowjob(a_tfjob())
    assert conversion is not None and conversion.job["kind"] == "TensorFlowJob"
    assert TENSORFLOWJOB.to_tensorflowjob(make_job(worker=1)) is None


def test_every_tensorflowjob_is_served_and_a_tfjob_by_its_managed_by() -> None:
    assert TENSORFLOWJOB.serves(make_job(worker=1), serve_unmanaged=False)
    assert TFJOB.serves(a_tfjob(), serve_unmanaged=True) and not TFJOB.serves(a_tfjob(), serve_unmanaged=False)
    assert not TFJOB.serves(a_tfjob(managedBy="kubeflow.org/training-operator"), serve_unmanaged=True)
    assert TFJOB.serves(a_tfjob(managedBy="tensorflowjob.kubeflow.org/tfjob-operator"), serve_unmanaged=False)
