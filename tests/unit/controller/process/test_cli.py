"""`tfjob-operator render` and `validate` on real files: output, exit codes, clear errors, and the
objects beside the jobs (a ConfigMap with the training program) noted and left unchecked."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest
import yaml

from controller.process.cli import main

EXAMPLES = sorted((pathlib.Path(__file__).resolve().parents[4] / "manifests" / "examples").glob("*.yaml"))


CONFIG_MAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "mnist-code"},
              "data": {"train.py": "print('hello')\n"}}
NOTE = "note: ConfigMap mnist-code: not a job, not checked (kubectl apply creates it as written)"


def the_job(example: pathlib.Path) -> dict[str, Any]:
    """The example's TensorFlowJob (the file holds the ConfigMap with its training program first)."""
    [job] = [doc for doc in yaml.safe_load_all(example.read_text()) if doc and doc["kind"] == "TensorFlowJob"]
    return job


def write(folder: pathlib.Path, *documents: Any) -> str:
    path = folder / "job.yaml"
    path.write_text(yaml.safe_dump_all(documents))
    return str(path)


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.stem for e in EXAMPLES])
def test_render_example_as_json_prints_a_v1_list_with_one_service_and_a_pod_per_replica(
    example: pathlib.Path, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = the_job(example)
    replicas = sum(role.get("replicas", 1) for name, role in job["spec"].items()
                   if name in ("chief", "ps", "worker", "evaluator"))
    assert main(["render", "-f", str(example), "-o", "json"]) == 0
    captured = capsys.readouterr()
    output = json.loads(captured.out)
    assert output["apiVersion"] == "v1" and output["kind"] == "List"
    kinds = [item["kind"] for item in output["items"]]
    assert kinds.count("Service") == 1
    assert kinds.count("Pod") == replicas
    assert "ConfigMap" not in kinds  # kubectl apply creates it; the operator does not
    assert captured.err.startswith("note: ConfigMap ")


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.stem for e in EXAMPLES])
def test_examples_are_valid(example: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "-f", str(example)]) == 0
    captured = capsys.readouterr()
    assert captured.out == f"TensorFlowJob {the_job(example)['metadata']['name']}: valid\n"
    [note] = captured.err.splitlines()
    assert note.startswith("note: ConfigMap ") and note.endswith(": not a job, not checked (kubectl apply creates "
                                                                  "it as written)")


def test_the_examples_are_found() -> None:
    assert len(EXAMPLES) >= 5


def test_a_configmap_beside_a_valid_job_is_noted_and_not_checked(tmp_path: pathlib.Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    # A companion is not checked, not even against the ConfigMap schema: kubectl apply does that.
    odd = {**CONFIG_MAP, "data": {"train.py": 3}}
    path = write(tmp_path, odd, the_job(EXAMPLES[0]))

    assert main(["validate", "-f", path]) == 0
    assert capsys.readouterr().err == NOTE + "\n"


def test_a_mistyped_job_kind_beside_a_configmap_is_still_an_error(tmp_path: pathlib.Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    job = {**the_job(EXAMPLES[0]), "kind": "TensorflowJob"}

    assert main(["validate", "-f", write(tmp_path, CONFIG_MAP, job)]) == 1
    err = capsys.readouterr().err
    assert NOTE in err
    assert "error: TensorflowJob mnist-allreduce: kind: must be 'TensorFlowJob', got 'TensorflowJob'" in err


def test_a_file_without_a_job_is_an_error(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, CONFIG_MAP)

    assert main(["validate", "-f", path]) == 1
    assert main(["render", "-f", path]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"error: {path}: no job found (a TensorFlowJob, or a Kubeflow TFJob)" in captured.err


def test_validate_rejects_a_bad_job_naming_the_field(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: kubeflow.org/v1\nkind: TensorFlowJob\nmetadata: {name: j}\n"
        "spec:\n  chief: {replicas: 2, template: {spec: {containers: [{name: tensorflow, image: tf}]}}}\n"
    )
    assert main(["validate", "-f", str(bad)]) == 1
    assert "spec.chief.replicas: 2 is above the maximum of 1" in capsys.readouterr().err


def test_multi_document_file_reports_each_document(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    both = tmp_path / "both.yaml"
    job = yaml.safe_dump(the_job(EXAMPLES[0]))
    both.write_text(job + "\n---\napiVersion: kubeflow.org/v1\nkind: Deployment\nmetadata: {name: d}\n")
    assert main(["validate", "-f", str(both)]) == 1
    captured = capsys.readouterr()
    assert ": valid" in captured.out
    assert "Deployment d: kind: must be 'TensorFlowJob', got 'Deployment'" in captured.err


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("key: [unclosed", "not valid YAML at line 1"),
        ("", "no documents found"),
        ("just a string\n", "a TensorFlowJob must be a mapping, got string"),
    ],
    ids=["not-yaml", "empty", "scalar"],
)
def test_unusable_file_gets_one_clear_line(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str], content: str, expected: str
) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(content)
    assert main(["render", "-f", str(path)]) == 1
    err = capsys.readouterr().err
    assert expected in err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_missing_file_gets_one_clear_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "-f", "/nonexistent/job.yaml"]) == 1
    assert capsys.readouterr().err.strip() == "error: /nonexistent/job.yaml: cannot read: No such file or directory"


def test_render_yaml_prints_service_first(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render", "-f", str(EXAMPLES[0])]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    assert docs[0]["kind"] == "Service"
    assert all(d["kind"] == "Pod" for d in docs[1:])
