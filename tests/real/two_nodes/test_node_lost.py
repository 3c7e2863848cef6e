"""A real node lost under real training: its kubelet stops and its containers die with it (as when a
machine goes down), the node turns NotReady, Kubernetes evicts its pods, the operator force-deletes
the one stuck terminating and recreates it on the other node, uncounted, and the job Succeeds.

The job is the parameter-server example with two changes, both in this test: where its pods go (the
chief and the parameter server on `real-node-0`, the two workers on different nodes), so that the lost
node takes exactly one worker with it; and 80 epochs instead of 30, so that the node's loss and the
repair (about 70 s: the node's grace period, the eviction, the pod's grace period and the
operator's force-delete delay) fall inside training. A lost worker costs the chief only the steps
it had in flight: the chief keeps its state (and its checkpoints, on the volume both nodes share) and
runs every epoch once."""

from __future__ import annotations

import copy
import re
import time
from typing import Any

import yaml

from devcluster import hostnet, realnodes
from devcluster.cluster import Cluster
from tests.real.jobs import documents, provide_storage
from tests.real.kubectl import Kubectl, wait_for
from tests.support.operator import Operator
from tfjob_api.names import JOB_NAME_LABEL, REPLICA_TYPE_LABEL

EXAMPLE = "parameter-server.yaml"
EPOCHS = 80
TIMEOUT = 900.0
HOSTNAME = "kubernetes.io/hostname"


def placed(job: dict[str, Any], stays: str) -> dict[str, Any]:
    """The job with its chief and parameter server on node `stays`, its workers spread over the nodes,
    and EPOCHS epochs of training."""
    job = copy.deepcopy(job)
    name, spec = job["metadata"]["name"], job["spec"]
    for role in ("chief", "ps"):
        spec[role]["template"]["spec"]["nodeSelector"] = {HOSTNAME: stays}
    workers = {"matchLabels": {JOB_NAME_LABEL: name, REPLICA_TYPE_LABEL: "worker"}}
    spec["worker"]["template"]["spec"]["affinity"] = {"podAntiAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 100, "podAffinityTerm": {"topologyKey": HOSTNAME, "labelSelector": workers}}]}}
    spec["chief"]["template"]["spec"]["containers"][0]["command"].append(f"--epochs={EPOCHS}")
    return job


def apply_placed(kubectl: Kubectl, stays: str) -> str:
    """Apply the example (its ConfigMap unchanged, its job `placed`) with its storage; return the job's name."""
    docs = [placed(d, stays) if d["kind"] == "TensorFlowJob" else d for d in documents(EXAMPLE)]
    job = next(d for d in docs if d["kind"] == "TensorFlowJob")
    provide_storage(kubectl, job)
    kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs))
    return str(job["metadata"]["name"])


def epochs(kubectl: Kubectl, pod: str) -> list[int]:
    """The epochs the chief has logged finishing, in order."""
    lines = kubectl("logs", pod, check=False).stdout.splitlines()
    return [int(m[1]) for line in lines if (m := re.match(r"epoch (\d+)/", line))]


def node_ready(kubectl: Kubectl, node: str) -> str:
    return kubectl("get", "node", node, "-o", "jsonpath={.status.conditions[?(@.type=='Ready')].status}").stdout


def workers_on(kubectl: Kubectl, job: str, node: str) -> list[dict[str, Any]]:
    return [p for p in kubectl.pods(job)
            if p["metadata"]["labels"].get(REPLICA_TYPE_LABEL) == "worker" and p["spec"].get("nodeName") == node]


def test_a_node_lost_under_training_has_its_worker_recreated_on_the_other_node_uncounted_and_the_job_succeeds(
        kubectl: Kubectl, real_cluster: Cluster, operator: Operator) -> None:
    stays, lost = real_cluster.real_nodes
    name = apply_placed(kubectl, stays)
    chief = f"{name}-chief-0"
    wait_for(lambda: len(epochs(kubectl, chief)) >= 3, TIMEOUT, f"{chief}'s epoch 3")
    on_lost = workers_on(kubectl, name, lost)
    where = [(p["metadata"]["name"], p["spec"].get("nodeName")) for p in kubectl.pods(name)]
    assert len(on_lost) == 1, f"one worker on {lost}, the rest on {stays}: {where}"
    victim = on_lost[0]["metadata"]
    chief_uid = kubectl.json("pod", chief)["metadata"]["uid"]

    node = realnodes.nodes_of(real_cluster.layout, real_cluster.state)[1]
    real_cluster.stop_component(node.kubelet_component)
    killed = hostnet.kill_containers(node.containerd_socket)
    lost_at = time.monotonic()
    print(f"{lost}: kubelet stopped, {killed} container processes killed at the chief's epoch "
          f"{epochs(kubectl, chief)[-1]}")

    wait_for(lambda: node_ready(kubectl, lost) == "Unknown", 120, f"{lost} NotReady")
    not_ready = time.monotonic() - lost_at

    def replaced() -> dict[str, Any] | None:
        again = [p for p in workers_on(kubectl, name, stays) if p["metadata"]["name"] == victim["name"]]
        return next((p for p in again if p["status"].get("phase") == "Running"), None)
    replacement = wait_for(replaced, 300, f"{victim['name']} recreated and Running on {stays}")
    running = time.monotonic() - lost_at
    wait_for(lambda: "joined cluster" in kubectl("logs", victim["name"], check=False).stdout, 300,
             f"the new {victim['name']} to join the cluster")
    joined = time.monotonic() - lost_at
    assert kubectl.state(name) not in ("Succeeded", "Failed"), "the job ended before the lost worker was back"
    assert replacement is not None and replacement["metadata"]["uid"] != victim["uid"]

    state = wait_for(lambda: kubectl.state(name) if kubectl.state(name) in ("Succeeded", "Failed") else "",
                     TIMEOUT, f"{name} to finish")
    print(f"{name}: {lost} NotReady {not_ready:.1f} s after its kubelet stopped, {victim['name']} Running on "
          f"{stays} after {running:.1f} s, joined after {joined:.1f} s; {state} after "
          f"{time.monotonic() - lost_at:.1f} s")
    status = kubectl.job(name)["status"]
    assert state == "Succeeded", status
    assert (status.get("restartCount") or 0) == 0, status
    assert all((replica.get("restarts") or 0) == 0 for replica in (status.get("replicaStatuses") or {}).values()), status
    assert kubectl.json("pod", chief)["metadata"]["uid"] == chief_uid, "the chief was restarted"
    assert epochs(kubectl, chief) == list(range(1, EPOCHS + 1)), "the chief ran an epoch twice or skipped one"
