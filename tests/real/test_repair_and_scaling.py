"""The operator's repairs with real TensorFlow: a worker deleted mid-training comes back under the same
name and rejoins, and a job whose workers are scaled while it trains gets every pod with the new
TF_CONFIG and still succeeds (parameter-server example, whose chief keeps checkpoints).

Where in training the worker dies decides what its loss costs the chief (docs/production.md, "The
parameter-server example when a worker is replaced"), so the deletion test aims at several points. A
deleted pod's Python, PID 1 of its container, ignores SIGTERM and dies by SIGKILL when the grace
period ends: `--grace-period=1` makes it die about a second after the deletion, at the point aimed
at; one case keeps the default 30 seconds, as a user's plain `kubectl delete pod` does."""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from typing import Any

import pytest

from devcluster.cluster import Cluster
from tests.real.follow import JobLogs
from tests.real.jobs import apply_example
from tests.real.kubectl import Kubectl, wait_for
from tests.support import polling
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


def recovery(chief: list[str]) -> list[str]:
    """What the chief's log says of the lost worker, each line with the epoch it came in: where
    TensorFlow saw worker-1 fail, and what the program ran again."""
    epoch, seen = 1, []
    for line in chief:
        if match := re.match(r"epoch (\d+)/", line):
            epoch = int(match[1]) + 1
        elif "task:1 failed with" in line or "steps lost to" in line or "checkpoint not written" in line:
            entry = f"epoch {epoch}: {line[:160]}"
            if entry not in seen[-1:]:  # TensorFlow logs its errors twice
                seen.append(entry)
    return seen


@dataclass(frozen=True)
class KillPoint:
    """When to delete worker-1: `delay` seconds after the chief's log shows `after`, with a grace period
    of `grace` seconds (None: the pod's default, 30)."""

    after: str
    delay: float
    grace: int | None


# The chief paces an epoch's 20 steps over 2.5 s, then writes its checkpoint and logs `epoch N/30`; a
# pod deleted with a grace period of 1 s dies about 1.3 s later.
KILL_POINTS = [
    # While the chief builds the input iterators and runs the first steps.
    pytest.param(KillPoint("[chief-0] TASK chief/0 joined cluster", 0.0, 1), id="first-steps"),
    # About 1.3 s into epoch 4: steps in flight on both workers.
    pytest.param(KillPoint("[chief-0] epoch 3/", 0.0, 1), id="mid-epoch"),
    # About 2.5 s into epoch 4: its last steps done, the chief writing the checkpoint.
    pytest.param(KillPoint("[chief-0] epoch 3/", 1.2, 1), id="checkpoint"),
    # Whenever the default grace period ends, about 30 s later (a dozen epochs on).
    pytest.param(KillPoint("[chief-0] epoch 1/", 0.0, None), id="default-grace"),
]


@pytest.mark.parametrize("point", KILL_POINTS)
def test_a_worker_deleted_mid_training_is_recreated_and_the_job_succeeds(
        kubectl: Kubectl, real_cluster: Cluster, operator: Operator, point: KillPoint) -> None:
    name = apply_example(kubectl, EXAMPLE)["metadata"]["name"]
    with JobLogs(real_cluster, kubectl.namespace, name) as logs:
        # The log follower sees a line as the chief prints it; poll it (not kubectl) to aim closely.
        polling.wait_for(lambda: logs.seen(point.after), TIMEOUT, point.after, interval=0.05)
        time.sleep(point.delay)  # aims the kill at its point of the epoch
        before = running(kubectl, f"{name}-worker-1")
        assert before is not None
        grace = [] if point.grace is None else [f"--grace-period={point.grace}"]
        kubectl("delete", "pod", f"{name}-worker-1", "--wait=false", *grace)
        deleted = time.monotonic()
        after = wait_for(lambda: (p := running(kubectl, f"{name}-worker-1")) and p["metadata"]["uid"]
                         != before["metadata"]["uid"] and p, 300, "worker-1 recreated and Running")
        state_when_back, back = kubectl.state(name), time.monotonic()
        state = wait_for(lambda: kubectl.state(name) if kubectl.state(name) in ("Succeeded", "Failed") else "",
                         TIMEOUT, f"{name} to finish")
    print(f"{point}: worker-1 Running again {back - deleted:.1f} s after its deletion;", *recovery(logs.lines("chief-0")),
          sep="\n  ")
    assert state == "Succeeded", logs.output[-4000:]
    assert state_when_back == "Running", "the recreated worker should have come back while the job trained"
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
