"""`tfjob-operator convert`, and `validate`/`render` on Kubeflow TFJob files."""

from __future__ import annotations

import json
import pathlib

import pytest
import yaml

from controller.process.cli import main
from tests.support.jobs import role, tfjob
from tests.support.kubeflow import replica, tfjob_manifest


def write(tmp_path: pathlib.Path, *documents: dict) -> str:
    path = tmp_path / "tfjob.yaml"
    path.write_text(yaml.safe_dump_all(documents))
    return str(path)


def test_convert_prints_the_equivalent_tensorflowjob(tmp_path: pathlib.Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    tfjob = tfjob_manifest("mnist", {"PS": replica(2), "Worker": replica(4)}, backoffLimit=3)
    assert main(["convert", "-f", write(tmp_path, tfjob)]) == 0
    job = yaml.safe_load(capsys.readouterr().out)
    assert (job["kind"], job["spec"]["ps"]["replicas"], job["spec"]["worker"]["replicas"]) == ("TensorFlowJob", 2, 4)
    assert main(["validate", "-f", write(tmp_path, job)]) == 0


def test_convert_names_what_does_not_carry_over_on_stderr(tmp_path: pathlib.Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    tfjob = tfjob_manifest("mnist", {"Worker": replica(2)}, backoffLimit=1, schedulingPolicy={"minAvailable": 2})
    assert main(["convert", "-f", write(tmp_path, tfjob), "-o", "json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["kind"] == "TensorFlowJob"
    assert captured.err.startswith("note: TFJob mnist: spec.runPolicy.schedulingPolicy is not used")


def test_convert_refuses_an_invalid_tfjob_naming_the_field(tmp_path: pathlib.Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    tfjob = tfjob_manifest("mnist", {"Worker": replica(2), "Launcher": replica(1)})
    assert main(["convert", "-f", write(tmp_path, tfjob)]) == 1
    assert "spec.tfReplicaSpecs.Launcher: unknown replica type" in capsys.readouterr().err


def test_convert_refuses_a_tensorflowjob(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["convert", "-f", write(tmp_path, tfjob("mnist", {"worker": role(1)}))]) == 1
    assert "not a TFJob" in capsys.readouterr().err


def test_render_shows_a_tfjobs_pods_owned_by_it(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    tfjob = tfjob_manifest("mnist", {"Chief": replica(1), "Worker": replica(2)})
    tfjob["metadata"]["uid"] = "u1"
    assert main(["render", "-f", write(tmp_path, tfjob), "-o", "json"]) == 0
    items = json.loads(capsys.readouterr().out)["items"]
    assert [i["metadata"]["name"] for i in items] == ["mnist", "mnist-chief-0", "mnist-worker-0", "mnist-worker-1"]
    assert {i["metadata"]["ownerReferences"][0]["kind"] for i in items} == {"TFJob"}
