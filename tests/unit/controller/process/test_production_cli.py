"""`tfjob-operator render` previews the production features (stall probes, start-up profiles, the
NetworkPolicy), and `run` refuses a bad profiles file before it touches a cluster."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
from typing import Any

import pytest
import yaml

from controller.process.cli import main

ROOT = pathlib.Path(__file__).resolve().parents[4]
JOB = """
apiVersion: kubeflow.org/v1
kind: TensorFlowJob
metadata: {name: mnist, namespace: team-a}
spec:
  worker:
    replicas: 2
    stall: {timeoutSeconds: 300}
    template:
      spec:
        containers: [{name: tensorflow, image: "tensorflow/tensorflow:2.17.0", command: [python, train.py]}]
"""
PROFILES = """
profiles:
- name: onednn-off
  image: tensorflow/tensorflow
  tag: "2.1[6-9]*"
  env: {TF_ENABLE_ONEDNN_OPTS: "0"}
  args: ["--log_every=100"]
"""


@pytest.fixture
def job_file(tmp_path: pathlib.Path) -> pathlib.Path:
    path = tmp_path / "job.yaml"
    path.write_text(JOB)
    return path


def rendered(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict[str, Any]]:
    assert main(["render", *argv, "-o", "json"]) == 0
    return json.loads(capsys.readouterr().out)["items"]


def tensorflow_of_first_pod(items: list[dict[str, Any]]) -> dict[str, Any]:
    pod = next(i for i in items if i["kind"] == "Pod")
    return pod["spec"]["containers"][0]


def test_render_shows_the_stall_probes(job_file: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    tensorflow = tensorflow_of_first_pod(rendered(capsys, "-f", str(job_file)))
    assert tensorflow["livenessProbe"]["exec"]["command"][-2:] == ["/tmp/tfjob-heartbeat", "300"]
    assert tensorflow["startupProbe"]["failureThreshold"] == 10


def test_render_with_profiles_shows_what_they_add(job_file: pathlib.Path, tmp_path: pathlib.Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    profiles = tmp_path / "profiles.yaml"
    profiles.write_text(PROFILES)
    tensorflow = tensorflow_of_first_pod(rendered(capsys, "-f", str(job_file), "--profiles", str(profiles)))
    assert {"name": "TF_ENABLE_ONEDNN_OPTS", "value": "0"} in tensorflow["env"]
    assert tensorflow["args"] == ["--log_every=100"]


def test_render_with_a_bad_profiles_file_names_the_entry(job_file: pathlib.Path, tmp_path: pathlib.Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    profiles = tmp_path / "profiles.yaml"
    profiles.write_text(PROFILES.replace("tag:", "tags:"))
    assert main(["render", "-f", str(job_file), "--profiles", str(profiles)]) == 1
    assert capsys.readouterr().err.strip() == (
        f"error: profiles: {profiles}: profiles[0] (onednn-off): unknown field tags; allowed: args, env, image, "
        "name, roles, tag")


def test_render_shows_the_network_policy_when_the_operator_default_is_on(
        job_file: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    items = rendered(capsys, "-f", str(job_file), "--network-policy", "on")
    assert [i["kind"] for i in items][:2] == ["NetworkPolicy", "Service"]
    assert items[0]["metadata"]["name"] == "mnist-tfjob"


def test_render_shows_the_network_policy_a_job_asks_for(tmp_path: pathlib.Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    job = yaml.safe_load(JOB)
    job["spec"]["networkPolicy"] = {"enabled": True}
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(job))
    assert rendered(capsys, "-f", str(path))[0]["kind"] == "NetworkPolicy"


def test_render_leaves_the_network_policy_out_by_default(job_file: pathlib.Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert "NetworkPolicy" not in [i["kind"] for i in rendered(capsys, "-f", str(job_file))]


def test_run_with_a_bad_profiles_file_exits_at_start_naming_the_entry(tmp_path: pathlib.Path) -> None:
    profiles = tmp_path / "profiles.yaml"
    profiles.write_text(PROFILES.replace('"0"', "0"))
    result = subprocess.run(
        [sys.executable, "-m", "controller.process.cli", "run", "--kubeconfig", str(tmp_path / "none"),
         "--profiles", str(profiles), "--log-format", "json", "--metrics-addr", "0", "--health-addr", "0"],
        capture_output=True, text=True, timeout=60, cwd=ROOT, check=False)
    assert result.returncode == 2
    line = json.loads(result.stdout.strip().splitlines()[-1])
    assert line["event"] == "bad start-up profiles file"
    assert line["error"] == f"{profiles}: profiles[0] (onednn-off).env.TF_ENABLE_ONEDNN_OPTS: 0 is not of type 'string'"


def test_render_with_a_gang_scheduler_shows_the_pod_group_and_the_pods_pointed_at_it(
        job_file: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    items = rendered(capsys, "-f", str(job_file), "--gang-scheduler", "volcano")
    group = next(i for i in items if i["kind"] == "PodGroup")
    assert group["apiVersion"] == "scheduling.volcano.sh/v1beta1" and group["spec"]["minMember"] == 2
    pods = [i for i in items if i["kind"] == "Pod"]
    assert {p["spec"]["schedulerName"] for p in pods} == {"volcano"}
    assert {p["metadata"]["annotations"]["volcano.sh/task-spec"] for p in pods} == {"worker"}


MASTER_TFJOB = """
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: m, namespace: team-a}
spec:
  tfReplicaSpecs:
    Master:
      template: {spec: {containers: [{name: tensorflow, image: "tensorflow/tensorflow:2.17.0"}]}}
    Worker:
      replicas: 2
      template: {spec: {containers: [{name: tensorflow, image: "tensorflow/tensorflow:2.17.0"}]}}
"""


def test_render_names_a_tfjob_masters_volcano_task_master_as_the_operator_does(
        tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "tfjob.yaml"
    path.write_text(MASTER_TFJOB)
    pods = [i for i in rendered(capsys, "-f", str(path), "--gang-scheduler", "volcano") if i["kind"] == "Pod"]
    assert {p["metadata"]["name"]: p["metadata"]["annotations"]["volcano.sh/task-spec"] for p in pods} == {
        "m-chief-0": "master", "m-worker-0": "worker", "m-worker-1": "worker"}


def test_render_shows_a_suspended_job_as_resumed_and_says_so(tmp_path: pathlib.Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    job = yaml.safe_load(JOB)
    job["spec"]["suspend"] = True
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(job))
    assert main(["render", "-f", str(path), "-o", "json"]) == 0
    out, err = capsys.readouterr()
    assert [i["kind"] for i in json.loads(out)["items"]] == ["Service", "Pod", "Pod"]
    assert "suspended; the operator creates these objects once it is resumed" in err
