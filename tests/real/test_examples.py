"""Every example trains with real TensorFlow on a real node: applied unchanged, it reaches Succeeded,
and every task's log says it joined the cluster its TF_CONFIG describes (the names in it resolved
through the headless Service and the cluster DNS, the gRPC servers reached each other over the pod
network). The logs are read as a user reads them, with `kubectl tfjob logs -f` from the start."""

from __future__ import annotations

import time

import pytest

from devcluster.cluster import Cluster
from tests.real.costs import record, startup_seconds
from tests.real.follow import JobLogs
from tests.real.jobs import apply_example, slots_of
from tests.real.kubectl import Kubectl, wait_for
from tests.support.operator import Operator

TRAINING_TIMEOUT = 900.0  # seconds; the slowest example takes about 3 minutes on two busy cores

EXAMPLES = [
    pytest.param("parameter-server.yaml", marks=pytest.mark.real_ci),
    "allreduce.yaml",
    "parameter-server-evaluator.yaml",
    "stall-detection.yaml",
    "network-isolation.yaml",
]


def finished(kubectl: Kubectl, job: str, startups: dict[str, float]) -> str:
    """The job's final state ('' while it runs); notes each pod's start-up time on the way."""
    for pod in kubectl.pods(job):
        seconds = startup_seconds(pod)
        if seconds is not None:
            startups.setdefault(pod["metadata"]["uid"], seconds)
    state = kubectl.state(job)
    return state if state in ("Succeeded", "Failed") else ""


@pytest.mark.parametrize("example", EXAMPLES)
def test_an_example_trains_to_succeeded_and_every_task_joins_its_cluster(
        example: str, kubectl: Kubectl, real_cluster: Cluster, operator: Operator) -> None:
    job = apply_example(kubectl, example)
    name = job["metadata"]["name"]
    startups: dict[str, float] = {}
    started = time.monotonic()
    with JobLogs(real_cluster, kubectl.namespace, name) as logs:
        state = wait_for(lambda: finished(kubectl, name, startups), TRAINING_TIMEOUT, f"{name} to finish")
    record(f"{example}: applied to {state}", time.monotonic() - started)
    if startups:
        record(f"{example}: slowest of {len(startups)} pods from creation to its container's start",
               max(startups.values()))
    assert state == "Succeeded", f"{name} ended {state}:\n{logs.output[-4000:]}"
    assert logs.ended_by_itself, f"`kubectl tfjob logs -f` did not end with the job: {logs.errors}"
    for role, index in slots_of(job):
        if role == "evaluator":
            continue  # not a member of the cluster: it reads the chief's checkpoints
        assert any(line.startswith(f"TASK {role}/{index} joined cluster") for line in logs.lines(f"{role}-{index}")), \
            f"{role}-{index} never joined:\n{logs.output[-4000:]}\nstderr of the follower:\n{logs.errors[-2000:]}"
    assert any("TRAINING DONE" in line for slot in logs.slots() for line in logs.lines(slot)), logs.output[-4000:]
