"""`tfjob_api.documents.is_companion`: which documents of a job file are the objects beside its jobs (a
ConfigMap with the training program, ...) and which are jobs to check, on plain dicts."""

from __future__ import annotations

from typing import Any

import pytest

from tfjob_api.documents import is_companion


def doc(api_version: Any = "v1", kind: Any = "ConfigMap", metadata: Any = None) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"} if metadata is None else metadata}


@pytest.mark.parametrize("document", [
    doc(),
    doc(kind="Secret"),
    doc(kind="PersistentVolumeClaim", metadata={"name": "data", "namespace": "team-a"}),
    doc("apps/v1", "Deployment"),
    doc("rbac.authorization.k8s.io/v1", "Role"),
    doc("kueue.x-k8s.io/v1beta1", "LocalQueue"),
], ids=["configmap", "secret", "claim", "deployment", "role", "other-group"])
def test_an_object_of_another_kind_and_group_with_a_name_is_a_companion(document: dict[str, Any]) -> None:
    assert is_companion(document)


@pytest.mark.parametrize("document", [
    doc("kubeflow.org/v1", "TensorFlowJob"),
    doc("kubeflow.org/v1", "TFJob"),
    doc("v1", "TensorFlowJob"),  # the kind decides, whatever the group
    doc("v1", "TensorflowJob"),  # a kind mistyped in case is still a job
    doc("batch/v1", "tfjob"),
    doc("kubeflow.org/v1", "TensorflowJob"),
    doc("kubeflow.org/v2", "ConfigMap"),  # anything in kubeflow.org is a job candidate
    doc("Kubeflow.org/v1", "PyTorchJob"),
], ids=["tensorflowjob", "tfjob", "core-tensorflowjob", "kind-case", "tfjob-case", "kubeflow-typo", "kubeflow-v2",
        "kubeflow-case"])
def test_a_job_or_anything_in_kubeflow_org_is_not_a_companion(document: dict[str, Any]) -> None:
    assert not is_companion(document)


@pytest.mark.parametrize("document", [
    "a string",
    ["a", "list"],
    None,
    {"kind": "ConfigMap", "metadata": {"name": "x"}},
    doc(api_version=1),
    doc(kind=None),
    {"apiVersion": "v1", "kind": "ConfigMap"},
    doc(metadata={"generateName": "x-"}),
    doc(metadata={"name": ""}),
    doc(metadata="x"),
], ids=["string", "list", "none", "no-api-version", "number-api-version", "no-kind", "no-metadata", "no-name",
        "empty-name", "metadata-not-a-mapping"])
def test_an_incomplete_document_is_a_job_candidate_so_it_is_reported(document: Any) -> None:
    assert not is_companion(document)
