"""Unit tests of the two kinds in the user tools (`tfjobs.kinds`, and how `TfJobClient` finds a name):
a TFJob read as the job model, scaled under its own key, named any way kubectl accepts; a name looked
up in both kinds; both kinds listed."""

from __future__ import annotations

import re
from typing import Any
from unittest.mock import MagicMock

import pytest

from tfjobs.client import AmbiguousJob, JobNotFound, TfJobClient
from tfjobs.errors import ClusterApiError
from tfjobs.kinds import TENSORFLOWJOB, TFJOB, kind_named, kind_of
from tfjobs.tables import job_rows

TFJOB_OBJECT: dict[str, Any] = {
    "apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "mnist", "namespace": "ns"},
    "spec": {"tfReplicaSpecs": {
        "PS": {"replicas": 1, "template": {}},
        "worker": {"replicas": 2, "template": {}},
    }},
    "status": {"conditions": [
        {"type": "Created", "status": "True", "reason": "TFJobCreated"},
        {"type": "Running", "status": "True", "reason": "TFJobRunning"},
    ], "replicaStatuses": {"Worker": {"active": 2}, "PS": {"active": 1}}},
}
TENSORFLOWJOB_OBJECT: dict[str, Any] = {
    "apiVersion": "kubeflow.org/v1", "kind": "TensorFlowJob", "metadata": {"name": "mnist", "namespace": "ns"},
    "spec": {"worker": {"replicas": 1}}, "status": {"state": "Succeeded"},
}


def test_a_tfjob_reads_as_the_job_model_its_roles_and_state() -> None:
    model = TFJOB.view(TFJOB_OBJECT)

    assert model["spec"]["worker"]["replicas"] == 2 and model["spec"]["ps"]["replicas"] == 1
    assert model["status"]["state"] == "Running"
    assert model["status"]["replicaStatuses"]["worker"] == {"active": 2, "succeeded": 0, "failed": 0}


def test_scaling_a_tfjob_patches_the_replica_type_as_the_job_spells_it() -> None:
    assert TFJOB.scale_patch(TFJOB_OBJECT, "worker", 4) == {"spec": {"tfReplicaSpecs": {"worker": {"replicas": 4}}}}
    assert TFJOB.scale_patch(TFJOB_OBJECT, "ps", 2) == {"spec": {"tfReplicaSpecs": {"PS": {"replicas": 2}}}}
    assert TENSORFLOWJOB.scale_patch(TENSORFLOWJOB_OBJECT, "worker", 4) == {"spec": {"worker": {"replicas": 4}}}


@pytest.mark.parametrize("name", ["TFJob", "tfjob", "tfjobs", "tfjobs.kubeflow.org"])
def test_a_kind_is_named_as_kubectl_names_it(name: str) -> None:
    assert kind_named(name) is TFJOB


def test_an_unknown_kind_is_refused_with_the_choices() -> None:
    with pytest.raises(ValueError, match="choose from TensorFlowJob, TFJob"):
        kind_named("PyTorchJob")


def test_a_job_without_a_kind_is_a_tensorflowjob() -> None:
    assert kind_of({"metadata": {"name": "x"}}) is TENSORFLOWJOB and kind_of(TFJOB_OBJECT) is TFJOB


def connection(objects: dict[str, dict[str, Any]], refused: tuple[str, ...] = ()) -> MagicMock:
    """A connection answering GETs and LISTs of the given paths; 403 for paths containing `refused`."""
    mock = MagicMock()

    def get(path: str, **query: Any) -> dict[str, Any]:
        if any(part in path for part in refused):
            raise ClusterApiError(403, "Forbidden", "no")
        if path not in objects:
            raise ClusterApiError(404, "NotFound", "not found")
        return objects[path]
    mock.get.side_effect = get
    mock.list.side_effect = get
    return mock


def test_a_name_either_kind_has_is_found_with_its_kind() -> None:
    client = TfJobClient(connection({"/apis/kubeflow.org/v1/namespaces/ns/tfjobs/mnist": TFJOB_OBJECT}), "ns")

    kind, job = client.find("mnist")

    assert kind is TFJOB and job is TFJOB_OBJECT


def test_a_name_both_kinds_have_needs_its_kind() -> None:
    client = TfJobClient(connection({"/apis/kubeflow.org/v1/namespaces/ns/tfjobs/mnist": TFJOB_OBJECT,
                                     "/apis/kubeflow.org/v1/namespaces/ns/tensorflowjobs/mnist": TENSORFLOWJOB_OBJECT}),
                         "ns")

    with pytest.raises(AmbiguousJob, match="--kind"):
        client.find("mnist")
    assert client.find("mnist", kind="TensorFlowJob") == (TENSORFLOWJOB, TENSORFLOWJOB_OBJECT)


def test_a_name_no_kind_has_is_not_found_in_either() -> None:
    with pytest.raises(JobNotFound, match=re.escape('tensorflowjobs.kubeflow.org or tfjobs.kubeflow.org "gone"')):
        TfJobClient(connection({}), "ns").find("gone")


def test_a_kind_the_user_may_not_read_is_passed_over_unless_asked_for() -> None:
    client = TfJobClient(connection({"/apis/kubeflow.org/v1/namespaces/ns/tensorflowjobs/mnist": TENSORFLOWJOB_OBJECT},
                                    refused=("/tfjobs",)), "ns")

    assert client.find("mnist")[0] is TENSORFLOWJOB
    with pytest.raises(ClusterApiError, match="Forbidden"):
        client.find("mnist", kind="TFJob")


def without_kind(job: dict[str, Any]) -> dict[str, Any]:
    """A job as a List's items carry it: no kind, no apiVersion."""
    return {k: v for k, v in job.items() if k not in ("kind", "apiVersion")}


def test_list_holds_both_kinds_and_the_table_names_each_ones_kind() -> None:
    client = TfJobClient(connection({
        "/apis/kubeflow.org/v1/namespaces/ns/tfjobs": {"items": [without_kind(TFJOB_OBJECT)]},
        "/apis/kubeflow.org/v1/namespaces/ns/tensorflowjobs": {"items": [without_kind(TENSORFLOWJOB_OBJECT)]},
    }), "ns")

    jobs = client.list()
    headers, rows = job_rows([kind_of(job).view(job) for job in jobs])

    assert [job["kind"] for job in jobs] == ["TFJob", "TensorFlowJob"]
    assert headers[:3] == ["NAME", "KIND", "STATE"]
    assert [row[:5] for row in rows] == [["mnist", "TFJob", "Running", "2", "1"],
                                         ["mnist", "TensorFlowJob", "Succeeded", "0", "<none>"]]
