"""`kubectl logs` on the devcluster's simulated pods: KWOK serves the logs the pod-logs agent writes.

Each test states one behaviour the log tools rely on: a started container has a log naming its
TF_CONFIG task; the `sim.tensorflowjob.kubeflow.org/log` annotation adds lines, also while someone
follows the log; an exit ends the log with the exit code; an in-place restart keeps the old log as
`--previous`; a new pod of the same name starts afresh. Every wait polls with a deadline.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from typing import Any

from devcluster.cluster import Cluster
from devcluster.podlogs import LOG_ANNOTATION
from tests.support import jobs
from tests.support.jobs import DEVCLUSTER_IMAGE, SIM_EXIT_AFTER, SIM_EXIT_CODE
from tests.support.polling import wait_for

RESTART_IN_PLACE = "sim.tensorflowjob.kubeflow.org/restart-in-place"
TF_CONFIG = json.dumps({"cluster": {"worker": ["w-0.j.ns.svc:2222", "w-1.j.ns.svc:2222"]},
                        "task": {"type": "worker", "index": 1}})


def create_pod(cluster: Cluster, namespace: str, name: str, annotations: dict[str, str] | None = None,
               restart_policy: str = "Never") -> dict[str, Any]:
    tensorflow = jobs.container(DEVCLUSTER_IMAGE, env=[{"name": "TF_CONFIG", "value": TF_CONFIG}])
    manifest = jobs.pod_manifest(name, annotations=annotations or {}, containers=[tensorflow],
                                 restartPolicy=restart_policy)
    return cluster.api.post(f"/api/v1/namespaces/{namespace}/pods", manifest)


def pod(cluster: Cluster, namespace: str, name: str) -> dict[str, Any]:
    return cluster.api.get(f"/api/v1/namespaces/{namespace}/pods/{name}")


def logs(cluster: Cluster, namespace: str, name: str, *args: str) -> list[str]:
    """The pod's log lines, once `kubectl logs` answers (the agent writes within moments of the start)."""
    def answer() -> list[str] | None:
        result = cluster.kubectl("logs", "-n", namespace, name, *args, check=False)
        return result.stdout.splitlines() if result.returncode == 0 and result.stdout else None
    return wait_for(answer, 30, f"kubectl logs {name} {' '.join(args)}")


def running(cluster: Cluster, namespace: str, name: str) -> dict[str, Any]:
    return wait_for(lambda: (p := pod(cluster, namespace, name))["status"].get("phase") == "Running" and p, 30,
                    f"pod {name} Running")


def read_until(lines: queue.Queue[str], wanted: str, timeout: float = 30.0) -> None:
    """Take lines until `wanted` comes; fail if it has not within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while (line := lines.get(timeout=max(deadline - time.monotonic(), 0.01))) != wanted:
        assert time.monotonic() < deadline, f"{wanted!r} never came (last line: {line!r})"


def test_a_started_pod_has_a_log_naming_its_tf_config_task(cluster: Cluster, namespace: str) -> None:
    create_pod(cluster, namespace, "task", {LOG_ANNOTATION: "epoch 1 loss=0.9\nepoch 2 loss=0.5"})
    running(cluster, namespace, "task")

    lines = logs(cluster, namespace, "task")

    assert "TF_CONFIG task: worker 1 (cluster: worker x2)" in lines
    assert "started TensorFlow server at w-1.j.ns.svc:2222" in lines
    assert lines[-2:] == ["epoch 1 loss=0.9", "epoch 2 loss=0.5"]


def test_kubectl_logs_follow_sees_lines_added_to_a_running_pod(cluster: Cluster, namespace: str) -> None:
    create_pod(cluster, namespace, "grows", {LOG_ANNOTATION: "step 1"})
    running(cluster, namespace, "grows")
    logs(cluster, namespace, "grows")
    follow = subprocess.Popen([str(cluster.bin_dir / "kubectl"), f"--kubeconfig={cluster.kubeconfig}", "logs", "-f",
                               "-n", namespace, "grows"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [seen.put(line.rstrip("\n")) for line in follow.stdout or []], daemon=True).start()
    try:
        read_until(seen, "step 1")

        cluster.api.merge_patch(f"/api/v1/namespaces/{namespace}/pods/grows",
                                {"metadata": {"annotations": {LOG_ANNOTATION: "step 1\nstep 2"}}})

        assert seen.get(timeout=30) == "step 2"
    finally:
        follow.kill()
        follow.wait(10)


def test_an_exit_ends_the_log_with_the_exit_code(cluster: Cluster, namespace: str) -> None:
    create_pod(cluster, namespace, "ends", {SIM_EXIT_CODE: "3", SIM_EXIT_AFTER: "0s"})
    wait_for(lambda: pod(cluster, namespace, "ends")["status"].get("phase") == "Failed", 30, "pod ends Failed")

    assert logs(cluster, namespace, "ends")[-1] == "simulated container 'tensorflow' exited with code 3 (Error)"


def test_an_in_place_restart_keeps_the_old_log_as_previous(cluster: Cluster, namespace: str) -> None:
    create_pod(cluster, namespace, "again", {SIM_EXIT_CODE: "1", SIM_EXIT_AFTER: "1s", RESTART_IN_PLACE: "true"},
               restart_policy="OnFailure")
    wait_for(lambda: (pod(cluster, namespace, "again")["status"].get("containerStatuses") or [{}])[0]
             .get("restartCount", 0) >= 1, 30, "an in-place restart")

    previous = logs(cluster, namespace, "again", "--previous")

    assert previous[-1] == "simulated container 'tensorflow' exited with code 1 (Error)"
    assert "exited with code" not in logs(cluster, namespace, "again")[0]


def test_a_new_pod_of_the_same_name_starts_a_fresh_log(cluster: Cluster, namespace: str) -> None:
    create_pod(cluster, namespace, "twice", {LOG_ANNOTATION: "first pod"})
    running(cluster, namespace, "twice")
    assert logs(cluster, namespace, "twice")[-1] == "first pod"
    cluster.kubectl("delete", "pod", "-n", namespace, "twice", "--wait")

    create_pod(cluster, namespace, "twice", {LOG_ANNOTATION: "second pod"})
    running(cluster, namespace, "twice")

    lines = wait_for(lambda: (found := logs(cluster, namespace, "twice")) and "first pod" not in found and found, 30,
                     "the new pod's log")
    assert lines[-1] == "second pod"
