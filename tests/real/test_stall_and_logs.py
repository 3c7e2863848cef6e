"""Stall detection and log following with real probes and real containers: the kubelet's liveness
probe (the one the operator injects for a `stall` rule) restarts a trainer whose heartbeat stopped,
the job counts the restart and says `Stalled`, while a trainer inside `tfheartbeat.pausing()` for
longer than the timeout is left alone; `kubectl logs` and `kubectl tfjob logs -f` follow the real
containers across that restart.

The trainer is a few lines of Python that import the repository's own `tfheartbeat` package, mounted
from a ConfigMap into the stock TensorFlow image: what a user's image with `pip install`-ed tfheartbeat
would run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from devcluster.cluster import Cluster
from tests.real.follow import JobLogs
from tests.real.kubectl import Kubectl, wait_for
from tests.support.operator import Operator

ROOT = Path(__file__).resolve().parents[2]
IMAGE = "tensorflow/tensorflow:2.21.0"
TIMEOUT_SECONDS = 10  # the smallest stall timeout the API accepts

TRAINER = """
import sys, time
import tfheartbeat

mode = sys.argv[1]
for step in range(3):
    tfheartbeat.beat()
    print(f"step {step}", flush=True)
    time.sleep(1)
if mode == "stall":
    print("STALLING", flush=True)
    time.sleep(3600)
print("PAUSING", flush=True)
with tfheartbeat.pausing(60):
    time.sleep(30)  # three stall timeouts
for step in range(3, 6):
    tfheartbeat.beat()
    print(f"step {step}", flush=True)
    time.sleep(1)
print("TRAINING DONE", flush=True)
"""


def code_config_map(name: str) -> dict[str, Any]:
    """The trainer and the tfheartbeat package, as one ConfigMap (keys cannot hold a `/`)."""
    data = {"train.py": TRAINER}
    for source in sorted((ROOT / "tfheartbeat").glob("*.py")):
        data[f"tfheartbeat.{source.name}"] = source.read_text()
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def stalling_job(name: str, mode: str) -> dict[str, Any]:
    items = [{"key": "train.py", "path": "train.py"}] + [
        {"key": f"tfheartbeat.{p.name}", "path": f"tfheartbeat/{p.name}"} for p in sorted((ROOT / "tfheartbeat").glob("*.py"))]
    container = {"name": "tensorflow", "image": IMAGE, "imagePullPolicy": "IfNotPresent",
                 "command": ["python", "/code/train.py", mode],
                 "env": [{"name": "PYTHONPATH", "value": "/code"}, {"name": "PYTHONUNBUFFERED", "value": "1"}],
                 "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                 "volumeMounts": [{"name": "code", "mountPath": "/code"}]}
    return {
        "apiVersion": "kubeflow.org/v1", "kind": "TensorFlowJob", "metadata": {"name": name},
        "spec": {"backoffLimit": 5, "worker": {
            "replicas": 1, "restartPolicy": "OnFailure",
            "stall": {"timeoutSeconds": TIMEOUT_SECONDS, "startupSeconds": 30},
            "template": {"spec": {"terminationGracePeriodSeconds": 2, "containers": [container],
                                  "volumes": [{"name": "code", "configMap": {"name": f"{name}-code", "items": items}}]}},
        }},
    }


def submit(kubectl: Kubectl, name: str, mode: str) -> None:
    kubectl("apply", "-f", "-", input=yaml.safe_dump_all([code_config_map(f"{name}-code"), stalling_job(name, mode)]))


def container_status(kubectl: Kubectl, pod: str) -> dict[str, Any]:
    statuses = kubectl.json("pod", pod)["status"].get("containerStatuses") or [{}]
    return statuses[0]  # type: ignore[no-any-return]


def stalled_events(kubectl: Kubectl, job: str) -> list[dict[str, Any]]:
    events = kubectl.json("events", "--field-selector", f"involvedObject.name={job}")["items"]
    return [e for e in events if e["reason"] == "Stalled"]


def test_a_trainer_that_stops_beating_is_restarted_by_its_liveness_probe_and_reported_stalled(
        kubectl: Kubectl, real_cluster: Cluster, operator: Operator) -> None:
    submit(kubectl, "hung", "stall")
    with JobLogs(real_cluster, kubectl.namespace, "hung") as logs:
        wait_for(lambda: (container_status(kubectl, "hung-worker-0").get("restartCount") or 0) >= 1, 180,
                 "the kubelet to restart the stalled container")
        stalled = wait_for(lambda: stalled_events(kubectl, "hung"), 60, "a Stalled event on the job")
        wait_for(lambda: (kubectl.job("hung")["status"].get("restartCount") or 0) >= 1, 60, "the restart counted")
        # kubectl logs follows the real container: the current one and the one the probe killed.
        previous = kubectl("logs", "hung-worker-0", "--previous").stdout
        wait_for(lambda: "STALLING" in kubectl("logs", "hung-worker-0").stdout, 60, "the restarted container's log")
        wait_for(lambda: logs.seen("STALLING") >= 2, 30, "`kubectl tfjob logs -f` to show both containers")
        kubectl("delete", "tensorflowjob", "hung", "--wait=false")
    assert stalled[0]["type"] == "Warning"
    assert "killed while the stall rule found no progress" in stalled[0]["message"], stalled[0]["message"]
    assert "STALLING" in previous
    # `kubectl tfjob logs -f` followed the worker across its restart: both containers' lines are there.
    assert logs.lines("worker-0").count("STALLING") >= 2, logs.output


def test_a_trainer_pausing_longer_than_the_timeout_is_not_restarted_and_succeeds(
        kubectl: Kubectl, real_cluster: Cluster, operator: Operator) -> None:
    submit(kubectl, "paused", "pause")
    with JobLogs(real_cluster, kubectl.namespace, "paused") as logs:
        state = wait_for(lambda: kubectl.state("paused") if kubectl.state("paused") in ("Succeeded", "Failed") else "",
                         300, "the pausing job to finish")
    assert state == "Succeeded", logs.output
    assert "PAUSING" in logs.lines("worker-0") and "TRAINING DONE" in logs.lines("worker-0")
    assert (kubectl.job("paused")["status"].get("restartCount") or 0) == 0
    assert stalled_events(kubectl, "paused") == []
