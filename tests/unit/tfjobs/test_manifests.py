"""Unit tests of `tfjobs.manifests`: reading job files (their jobs, and the ConfigMaps, Secrets and
claims beside them) and `--set` overrides."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tfjobs.manifests import InputError, apply_overrides, load_manifest, manifest_from_yaml, parse_override

JOB: dict[str, Any] = {
    "apiVersion": "kubeflow.org/v1", "kind": "TensorFlowJob", "metadata": {"name": "mnist"},
    "spec": {"worker": {"replicas": 2, "template": {"spec": {"containers": [{"name": "tensorflow", "image": "tf"}]}}}},
}
CONFIG_MAP: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "mnist-code"},
                              "data": {"train.py": "print('hello')\n"}}
EXAMPLES = sorted((Path(__file__).resolve().parents[3] / "manifests" / "examples").glob("*.yaml"))


@pytest.mark.parametrize(("text", "steps", "value"), [
    ("worker.replicas=8", ["spec", "worker", "replicas"], 8),
    ("spec.backoffLimit=3", ["spec", "backoffLimit"], 3),
    ("metadata.labels.team=vision", ["metadata", "labels", "team"], "vision"),
    ("worker.template.spec.containers[0].image=tf:2.21", ["spec", "worker", "template", "spec", "containers", 0,
                                                         "image"], "tf:2.21"),
    ("suspend=true", ["spec", "suspend"], True),
    ("metadata.annotations.example\\.com/owner=me", ["metadata", "annotations", "example.com/owner"], "me"),
    ("ttlSecondsAfterFinished=null", ["spec", "ttlSecondsAfterFinished"], None),
])
def test_an_override_is_a_path_relative_to_spec_and_a_yaml_value(text: str, steps: list[Any], value: Any) -> None:
    assert parse_override(text) == (steps, value)


@pytest.mark.parametrize("text", ["worker.replicas", "=3", "worker..replicas=3", "[0].x=1", "a[x]=1"])
def test_a_malformed_override_is_refused(text: str) -> None:
    with pytest.raises(InputError):
        parse_override(text)


def test_overrides_change_a_copy_of_the_job() -> None:
    changed = apply_overrides(JOB, ["worker.replicas=8", "worker.template.spec.containers[0].image=tf:2.21",
                                    "metadata.labels.team=vision"])

    assert changed["spec"]["worker"]["replicas"] == 8
    assert changed["spec"]["worker"]["template"]["spec"]["containers"][0]["image"] == "tf:2.21"
    assert changed["metadata"]["labels"] == {"team": "vision"}
    assert JOB["spec"]["worker"]["replicas"] == 2


def test_overrides_can_be_a_mapping_and_null_removes_a_field() -> None:
    changed = apply_overrides({**JOB, "spec": {**JOB["spec"], "suspend": True}},
                              {"worker.replicas": 4, "suspend": None})

    assert changed["spec"]["worker"]["replicas"] == 4 and "suspend" not in changed["spec"]


def test_an_override_into_a_missing_list_item_is_refused() -> None:
    with pytest.raises(InputError, match=r"no item \[3\]"):
        apply_overrides(JOB, ["worker.template.spec.containers[3].image=x"])


def test_a_file_may_hold_a_list_of_jobs(tmp_path: Path) -> None:
    path = tmp_path / "jobs.yaml"
    path.write_text("kind: List\napiVersion: v1\nitems:\n- {apiVersion: kubeflow.org/v1, kind: TensorFlowJob, "
                    "metadata: {name: a}, spec: {}}\n")

    assert [j["metadata"]["name"] for j in load_manifest(str(path)).jobs] == ["a"]


def test_a_document_that_is_no_job_of_either_kind_is_named_in_the_error() -> None:
    with pytest.raises(InputError, match=r"PyTorchJob x is a kubeflow\.org/v1/PyTorchJob, not a kubeflow\.org/v1/"
                                         r"TensorFlowJob or kubeflow\.org/v1/TFJob"):
        manifest_from_yaml("apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: x}\n")


def test_a_tfjob_document_is_a_job() -> None:
    manifest = manifest_from_yaml("apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: x}\n")

    assert [job["kind"] for job in manifest.jobs] == ["TFJob"]


def test_a_mistyped_job_kind_is_a_bad_job_not_a_companion() -> None:
    text = yaml.safe_dump_all([CONFIG_MAP, {**JOB, "kind": "TensorflowJob"}])

    with pytest.raises(InputError, match=r"TensorflowJob mnist is a kubeflow\.org/v1/TensorflowJob, not a"):
        manifest_from_yaml(text)


def test_the_configmap_secret_and_claim_beside_a_job_are_its_companions_in_file_order() -> None:
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "token"}, "stringData": {"t": "x"}}
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"}, "spec": {}}

    manifest = manifest_from_yaml(yaml.safe_dump_all([CONFIG_MAP, JOB, secret, claim]))

    assert manifest.jobs == [JOB]
    assert [c["kind"] for c in manifest.companions] == ["ConfigMap", "Secret", "PersistentVolumeClaim"]


def test_another_kind_beside_a_job_is_refused_saying_to_kubectl_apply_it() -> None:
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"}}

    with pytest.raises(InputError, match=r"YAML: Deployment x: kubectl tfjob submit creates ConfigMaps, Secrets and "
                                         r"PersistentVolumeClaims beside its jobs; apply the Deployment with kubectl "
                                         r"apply"):
        manifest_from_yaml(yaml.safe_dump_all([JOB, deployment]))


def test_a_file_with_only_companions_has_no_job() -> None:
    with pytest.raises(InputError, match="YAML: no TensorFlowJob found"):
        manifest_from_yaml(yaml.safe_dump(CONFIG_MAP))


def test_every_example_reads_as_its_configmap_then_its_job() -> None:
    assert EXAMPLES
    for example in EXAMPLES:
        manifest = load_manifest(str(example))
        assert [c["kind"] for c in manifest.companions] == ["ConfigMap"], example.name
        assert len(manifest.jobs) == 1, example.name


def test_yaml_without_a_document_is_refused() -> None:
    with pytest.raises(InputError, match="YAML: no documents found"):
        manifest_from_yaml("---\n")


def test_yaml_without_a_job_is_refused() -> None:
    with pytest.raises(InputError, match="no TensorFlowJob"):
        manifest_from_yaml("apiVersion: v1\nkind: List\nitems: []\n")
