"""The operator killed (SIGKILL) in the middle of real training: the training goes on without it, and
the operator that starts again restarts nothing and loses nothing -- every pod keeps its UID, nothing
is counted, the chief runs no step again, and the job Succeeds (parameter-server example)."""

from __future__ import annotations

import threading
import time

from devcluster.cluster import Cluster
from tests.real.follow import JobLogs
from tests.real.jobs import apply_example
from tests.real.kubectl import Kubectl, wait_for
from tests.support import polling
from tests.support.operator import Operator

EXAMPLE = "parameter-server.yaml"
TIMEOUT = 900.0
RAN_AGAIN = ("failed with", "steps lost to", "checkpoint not written")  # what the chief logs of a lost task


def test_the_operator_killed_mid_training_restarts_nothing_and_the_job_succeeds(
        kubectl: Kubectl, real_cluster: Cluster, operator: Operator) -> None:
    name = apply_example(kubectl, EXAMPLE)["metadata"]["name"]
    seen: set[str] = set()
    stop = threading.Event()

    def record_pods() -> None:
        while not stop.is_set():
            seen.update(p["metadata"]["uid"] for p in kubectl.pods(name))
            stop.wait(1.0)

    with JobLogs(real_cluster, kubectl.namespace, name) as logs:
        polling.wait_for(lambda: logs.seen("[chief-0] epoch 3/"), TIMEOUT, "the chief's epoch 3", interval=0.05)
        before = {p["metadata"]["uid"] for p in kubectl.pods(name)}
        recorder = threading.Thread(target=record_pods, daemon=True)
        recorder.start()
        operator.kill()
        killed = time.monotonic()
        try:
            polling.wait_for(lambda: logs.seen("[chief-0] epoch 6/"), TIMEOUT, "three epochs without the operator",
                             interval=0.5)
        finally:
            operator.start()
        print(f"{name}: three epochs trained in {time.monotonic() - killed:.1f} s without the operator")
        state = wait_for(lambda: kubectl.state(name) if kubectl.state(name) in ("Succeeded", "Failed") else "",
                         TIMEOUT, f"{name} to finish")
        stop.set()
        recorder.join(5)
    assert state == "Succeeded", logs.output[-4000:]
    assert seen <= before, "the restarted operator created a pod"
    assert (kubectl.job(name)["status"].get("restartCount") or 0) == 0
    assert not [line for line in logs.lines("chief-0") if any(words in line for words in RAN_AGAIN)]
