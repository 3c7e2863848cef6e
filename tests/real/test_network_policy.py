"""NetworkPolicy enforced by a real engine (kube-router's iptables rules on the real node): a pod of
another job cannot open a connection to a job pod's TF port once the job has its policy, the job's own
pods can, and the same client reaches a job without a policy. (That the network-isolation example
still trains with its policy on is one of the example tests.)

Each pod is the stock TensorFlow image running a few lines of Python: a TCP server on the TF port,
and a client that tries the ports it is given by DNS name every second and says what happened."""

from __future__ import annotations

from typing import Any

import yaml

from tests.real.kubectl import Kubectl, wait_for
from tests.support.operator import Operator

IMAGE = "tensorflow/tensorflow:2.21.0"
TF_PORT = 2222

PROGRAM = """
import socket, sys, threading, time

def serve():
    server = socket.create_server(("", 2222))
    while True:
        connection, _ = server.accept()
        connection.close()

threading.Thread(target=serve, daemon=True).start()
print("SERVING", flush=True)
while True:
    for target in sys.argv[1:]:
        try:
            address = socket.gethostbyname(target)
        except OSError:
            print(f"NODNS {target}", flush=True)
            continue
        try:
            socket.create_connection((address, 2222), timeout=2).close()
            print(f"CONNECTED {target}", flush=True)
        except OSError as error:
            print(f"BLOCKED {target} {type(error).__name__}", flush=True)
    time.sleep(1)
"""


def job(name: str, replicas: int, isolated: bool, targets: list[str]) -> dict[str, Any]:
    container = {"name": "tensorflow", "image": IMAGE, "imagePullPolicy": "IfNotPresent",
                 "command": ["python", "-c", PROGRAM, *targets],
                 "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}}}
    return {"apiVersion": "kubeflow.org/v1", "kind": "TensorFlowJob", "metadata": {"name": name},
            "spec": {"networkPolicy": {"enabled": isolated},
                     "worker": {"replicas": replicas, "restartPolicy": "OnFailure",
                                "template": {"spec": {"terminationGracePeriodSeconds": 1, "containers": [container]}}}}}


def last_attempts(kubectl: Kubectl, pod: str, target: str, count: int) -> list[str]:
    lines = kubectl("logs", pod, check=False).stdout.splitlines()
    return [line.split()[0] for line in lines if line.split()[1:2] == [target]][-count:]


def test_a_jobs_tf_port_admits_its_own_pods_and_refuses_another_jobs_pod(kubectl: Kubectl, operator: Operator) -> None:
    ns = kubectl.namespace
    isolated_0 = f"isolated-worker-0.isolated.{ns}.svc"
    isolated_1 = f"isolated-worker-1.isolated.{ns}.svc"
    open_0 = f"open-worker-0.open.{ns}.svc"
    kubectl("apply", "-f", "-", input=yaml.safe_dump_all([
        job("isolated", 2, True, [isolated_1]),
        job("open", 1, False, []),
        job("outsider", 1, False, [isolated_0, open_0]),
    ]))
    wait_for(lambda: kubectl("get", "networkpolicy", "isolated-tfjob", check=False).returncode == 0, 60,
             "the isolated job's NetworkPolicy")

    # Every verdict below is the last five attempts in a row, so a rule still being installed (or a
    # name not yet in DNS) when the pods start does not decide the test.
    wait_for(lambda: last_attempts(kubectl, "isolated-worker-0", isolated_1, 5) == ["CONNECTED"] * 5, 240,
             "isolated-worker-0 to reach its own job's worker-1 on the TF port")
    wait_for(lambda: last_attempts(kubectl, "outsider-worker-0", open_0, 5) == ["CONNECTED"] * 5, 240,
             "the outsider to reach the job without a policy")
    wait_for(lambda: last_attempts(kubectl, "outsider-worker-0", isolated_0, 5) == ["BLOCKED"] * 5, 120,
             "the outsider to be refused by the isolated job's TF port")
    # And it stays so: the engine's periodic resync does not reopen it.
    wait_for(lambda: last_attempts(kubectl, "outsider-worker-0", isolated_0, 15) == ["BLOCKED"] * 15, 60,
             "fifteen refused attempts in a row")
