"""`tfjob-operator convert` (the objects beside the TFJobs copied unchanged), and `validate`/`render`
on Kubeflow TFJob files."""

from __future__ import annotations

import json
import pathlib

import pytest
import yaml

from controller.job.kubeflow.convert import convert
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
    tfjob = tfjob_manifest("mnist", {"Worker": replica(2)}, backoffLimit=1)
    tfjob["spec"]["enableDynamicWorker"] = True
    assert main(["convert", "-f", write(tmp_path, tfjob), "-o", "json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["kind"] == "TensorFlowJob"
    assert captured.err.startswith("note: TFJob mnist: spec.enableDynamicWorker is not used")


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


EXAMPLES = sorted((pathlib.Path(__file__).resolve().parents[4] / "manifests" / "examples").glob("*.yaml"))


def companions_of(example: pathlib.Path) -> list[dict]:
    return [doc for doc in yaml.safe_load_all(example.read_text()) if doc and doc["kind"] != "TensorFlowJob"]


def convert_job(path: str) -> dict:
    """What `convert` prints for the TFJob of a file holding one TFJob and companions."""
    [job] = [doc for doc in yaml.safe_load_all(pathlib.Path(path).read_text()) if doc["kind"] == "TFJob"]
    return convert(job).job


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.stem for e in EXAMPLES])
def test_convert_copies_an_examples_configmap_so_the_output_can_be_applied(
    example: pathlib.Path, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The example's own ConfigMap, with its job written as a TFJob.
    [config_map] = companions_of(example)
    path = write(tmp_path, config_map, tfjob_manifest("mnist", {"Worker": replica(2)}))

    assert main(["convert", "-f", path]) == 0
    captured = capsys.readouterr()
    assert list(yaml.safe_load_all(captured.out)) == [config_map, convert_job(path)]
    assert f"note: ConfigMap {config_map['metadata']['name']}: not a job, copied unchanged" in captured.err

    (tmp_path / "out.yaml").write_text(captured.out)
    assert main(["validate", "-f", str(tmp_path / "out.yaml")]) == 0
    assert main(["render", "-f", str(tmp_path / "out.yaml")]) == 0


def test_convert_keeps_every_companion_in_the_files_order(tmp_path: pathlib.Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    code = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "code"}, "data": {"a": "b"}}
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
             "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}
    path = write(tmp_path, code, tfjob_manifest("a", {"Worker": replica(1)}), claim,
                 tfjob_manifest("b", {"Worker": replica(1)}))

    assert main(["convert", "-f", path, "-o", "json"]) == 0
    items = json.loads(capsys.readouterr().out)["items"]
    assert [(i["kind"], i["metadata"]["name"]) for i in items] == [
        ("ConfigMap", "code"), ("TensorFlowJob", "a"), ("PersistentVolumeClaim", "data"), ("TensorFlowJob", "b")]
    assert items[0] == code and items[2] == claim


def test_convert_of_a_file_without_a_tfjob_is_an_error(tmp_path: pathlib.Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    code = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "code"}}

    assert main(["convert", "-f", write(tmp_path, code)]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and "no job found" in captured.err


def test_convert_still_reports_a_mistyped_tfjob_kind(tmp_path: pathlib.Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    code = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "code"}}
    mistyped = {**tfjob_manifest("mnist", {"Worker": replica(1)}), "kind": "TfJob"}

    assert main(["convert", "-f", write(tmp_path, code, mistyped)]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and "error: TfJob mnist: " in captured.err
