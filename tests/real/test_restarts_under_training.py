"""What runs under real training restarted beneath it: the operator killed (SIGKILL), and the node's
container runtime (containerd) stopped and started again. The training goes on through both (the
runtime's shims keep the containers), and nothing is restarted or lost: every pod keeps its UID,
nothing is counted, the chief runs no step again, and the job Succeeds (parameter-server example)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from devcluster.cluster import Cluster
from tests.real.follow import JobLogs
from tests.real.jobs import apply_example
from tests.real.kubectl import Kubectl, wait_for
from tests.support import polling
from tests.support.operator import Operator

EXAMPLE = "parameter-server.yaml"
TIMEOUT = 900.0
RAN_AGAIN = ("failed with", "steps lost to", "checkpoint not written")  # what the chief logs of a lost task


@contextmanager
def every_pod_seen(kubectl: Kubectl, job: str) -> Iterator[set[str]]:
    """The UIDs of every pod of the job seen while the block runs (polled every second)."""
    seen: set[str] = set()
    stop = threading.Event()

    def record() -> None:
        while not stop.is_set():
            seen.update(p["metadata"]["uid"] for p in kubectl.pods(job))
            stop.wait(1.0)

    recorder = threading.Thread(target=record, daemon=True)
    recorder.start()
    try:
        yield seen
    finally:
        stop.set()
        recorder.join(5)


def train_through(kubectl: Kubectl, real_cluster: Cluster, fault: Callable[[], None], hold: Callable[[str], None],
                  repair: Callable[[], None]) -> None:
    """Run the example; at the chief's epoch 3 apply `fault`, `hold` it (given the follower's log
    lines' test), `repair`; then check the job Succeeded with nothing restarted, counted or run again."""
    name = apply_example(kubectl, EXAMPLE)["metadata"]["name"]
    with JobLogs(real_cluster, kubectl.namespace, name) as logs:
        polling.wait_for(lambda: logs.seen("[chief-0] epoch 3/"), TIMEOUT, "the chief's epoch 3", interval=0.05)
        before = {p["metadata"]["uid"] for p in kubectl.pods(name)}
        with every_pod_seen(kubectl, name) as seen:
            fault()
            broken = time.monotonic()
            try:
                hold(name)
            finally:
                repair()
            print(f"{name}: the fault held {time.monotonic() - broken:.1f} s, then repaired")
            state = wait_for(lambda: kubectl.state(name) if kubectl.state(name) in ("Succeeded", "Failed") else "",
                             TIMEOUT, f"{name} to finish")
    chief = kubectl("logs", f"{name}-chief-0").stdout.splitlines()  # the whole log: the follower may lose a part
    assert state == "Succeeded", logs.output[-4000:]
    assert seen <= before, "a pod was created again"
    assert (kubectl.job(name)["status"].get("restartCount") or 0) == 0
    assert not [line for line in chief if any(words in line for words in RAN_AGAIN)]


def test_the_operator_killed_mid_training_restarts_nothing_and_the_job_succeeds(
        kubectl: Kubectl, real_cluster: Cluster, operator: Operator) -> None:
    def three_epochs(name: str) -> None:
        result = kubectl("logs", f"{name}-chief-0")
        done = sum(1 for line in result.stdout.splitlines() if line.startswith("epoch "))
        wait_for(lambda: sum(1 for line in kubectl("logs", f"{name}-chief-0").stdout.splitlines()
                             if line.startswith("epoch ")) >= done + 3, TIMEOUT, "three epochs without the operator")

    def start_again() -> None:
        operator.start()
    train_through(kubectl, real_cluster, operator.kill, three_epochs, start_again)


def test_the_container_runtime_restarted_under_running_pods_restarts_nothing_and_the_job_succeeds(
        kubectl: Kubectl, real_cluster: Cluster, operator: Operator) -> None:
    runtime, node = "containerd-0", real_cluster.real_nodes[0]

    def node_says_runtime_down(_name: str) -> None:
        wait_for(lambda: "container runtime is down" in kubectl(
            "get", "node", node, "-o", "jsonpath={.status.conditions[?(@.type=='Ready')].message}").stdout,
            120, f"{node} to report its container runtime down")

    def start_again() -> None:
        real_cluster.start_component(runtime, timeout=120.0)
        wait_for(lambda: kubectl("get", "node", node, "-o",
                                 "jsonpath={.status.conditions[?(@.type=='Ready')].status}").stdout == "True",
                 120, f"{node} Ready again")
    train_through(kubectl, real_cluster, lambda: real_cluster.stop_component(runtime, grace=5.0),
                  node_says_runtime_down, start_again)
