"""`tfjob-operator render` and `validate` on real files: output, exit codes, clear errors."""

from __future__ import annotations

import json
import pathlib

import pytest
import yaml

from controller.process.cli import main

EXAMPLES = sorted((pathlib.Path(__file__).resolve().parents[4] / "manifests" / "examples").glob("*.yaml"))


def job_file(example: pathlib.Path, folder: pathlib.Path) -> pathlib.Path:
    """The example's TensorFlowJob alone. An example file also holds the ConfigMap with its training
    program, and `render` and `validate` take TensorFlowJobs (and TFJobs) only."""
    [job] = [doc for doc in yaml.safe_load_all(example.read_text()) if doc and doc["kind"] == "TensorFlowJob"]
    path = folder / example.name
    path.write_text(yaml.safe_dump(job))
    return path


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.stem for e in EXAMPLES])
def test_render_example_as_json_prints_a_v1_list_with_one_service_and_a_pod_per_replica(
    example: pathlib.Path, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = job_file(example, tmp_path)
    job = yaml.safe_load(path.read_text())
    replicas = sum(role.get("replicas", 1) for name, role in job["spec"].items()
                   if name in ("chief", "ps", "worker", "evaluator"))
    assert main(["render", "-f", str(path), "-o", "json"]) == 0
    output = json.loads(capsys.readouterr().out)
    assert output["apiVersion"] == "v1" and output["kind"] == "List"
    kinds = [item["kind"] for item in output["items"]]
    assert kinds.count("Service") == 1
    assert kinds.count("Pod") == replicas


def test_examples_are_valid(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    for example in EXAMPLES:
        assert main(["validate", "-f", str(job_file(example, tmp_path))]) == 0
    assert capsys.readouterr().out.count(": valid") == len(EXAMPLES)


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
    job = job_file(EXAMPLES[0], tmp_path).read_text()
    both.write_text(job + "\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n")
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


def test_render_yaml_prints_service_first(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render", "-f", str(job_file(EXAMPLES[0], tmp_path))]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    assert docs[0]["kind"] == "Service"
    assert all(d["kind"] == "Pod" for d in docs[1:])
