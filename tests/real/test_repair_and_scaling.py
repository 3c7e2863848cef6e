"""The operator's repairs with real TensorFlow: a worker deleted mid-training comes back under the same
name and rejoins, and a job whose workers are scaled while it trains gets every pod with the new
TF_CONFIG and still succeeds (parameter-server example, whose chief keeps checkpoints)."""

from __future__ import annotations

import json
from typing import Any

from devcluster.cluster import Cluster
from tests.real.follow import JobLogs
from tests.real.jobs import apply_example
from tests.real.kubectl import Kubectl, wait_for
from tests.support.operator import Operator

EXAMPLE = "parameter-server.yaml"
TIMEOUT = 900.0


def pod(kubectl: Kubectl, name: str) -> dict[str, Any] | None:
    result = kubectl("get", "pod", name, "-o", "json", check=False)
    return json.loads(result.stdout) if result.returncode == 0 else None


def running(kubectl: Kubectl, name: str) -> dict[str, Any] | None:
    found = pod(kubectl, name)
    return found if found and found["status"].get("phase") == "Running" else None


def tf_config(found: dict[str, Any]) -> dict[str, Any]:
    container = next(c for c in found["spec"]["containers"] if c["name"] == "tensorflow")
    return json.loads(next(e["value"] for e in container["env"] if e["name"] == "TF_CONFIG"))


def training_started(logs_dir: Cluster, kubectl: Kubectl, job: str) -> bool:
    """The chief has joined and run its first epoch (its log says so)."""
    result = logs_dir.kubectl("logs", "-n", kubectl.namespace, f"{job}-chief-0", check=False)
    return "joined cluster" in result.stdout and "epoch" in result.stdout.split("joined cluster", 1)[1]


def test_a_worker_deleted_mid_training_is_recreated_and_the_job_succeeds(
        kubectl: Kubectl, real_cluster: Cluster, operator: Operator) -> None:
    name = apply_example(kubectl, EXAMPLE)["metadata"]["name"]
    with JobLogs(real_cluster, kubectl.namespace, name) as logs:
        wait_for(lambda: training_started(real_cluster, kubectl, name), TIMEOUT, "the chief's first epoch")
        before = running(kubectl, f"{name}-worker-1")
        assert before is not None
        kubectl("delete", "pod", f"{name}-worker-1", "--wait=false")
        after = wait_for(lambda: (p := running(kubectl, f"{name}-worker-1")) and p["metadata"]["uid"]
                         != before["metadata"]["uid"] and p, 300, "worker-1 recreated and Running")
        state = wait_for(lambda: kubectl.state(name) if kubectl.state(name) in ("Succeeded", "Failed") else "",
                         TIMEOUT, f"{name} to finish")
    assert state == "Succeeded", logs.output[-4000:]
    assert tf_config(after) == tf_config(before)
    joined = [line for line in logs.lines("worker-1") if line.startswith("TASK worker/1 joined cluster")]
    assert len(joined) == 2, f"worker-1 should have joined twice (before and after):\n{logs.output[-4000:]}"
    assert (kubectl.job(name)["status"].get("restartCount") or 0) == 0, "a deleted pod is repaired, not counted"


def test_scaling_the_workers_of_a_training_job_gives_every_pod_the_new_cluster_and_it_succeeds(
        kubectl: Kubectl, real_cluster: Cluster, operator: Operator) -> None:
    name = apply_example(kubectl, EXAMPLE)["metadata"]["name"]
    with JobLogs(real_cluster, kubectl.namespace, name) as logs:
        wait_for(lambda: training_started(real_cluster, kubectl, name), TIMEOUT, "the chief's first epoch")
        kubectl("scale", f"tensorflowjob/{name}", "--replicas=3")

        def every_pod_has_three_workers() -> bool:
            pods = kubectl.pods(name)
            return len(pods) == 5 and all(
                p["status"].get("phase") == "Running" and len(tf_config(p)["cluster"]["worker"]) == 3 for p in pods)

        wait_for(every_pod_has_three_workers, 300, "chief, ps and three workers Running with the new TF_CONFIG")
        state = wait_for(lambda: kubectl.state(name) if kubectl.state(name) in ("Succeeded", "Failed") else "",
                         TIMEOUT, f"{name} to finish")
    assert state == "Succeeded", logs.output[-4000:]
    assert any(line.startswith("TASK worker/2 joined cluster") for line in logs.lines("worker-2")), logs.output[-4000:]
    assert any('"worker": 3' in line for line in logs.lines("chief-0") if "joined cluster" in line), \
        f"the recreated chief should have joined the rescaled cluster:\n{logs.output[-4000:]}"
