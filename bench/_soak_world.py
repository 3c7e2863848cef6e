"""The soak's world (bench/soak.py): its own devcluster, Kueue, rack nodes and queues, the operator with
every feature on, and the faults it injects into them.

Built like the composed integration test (tests/integration/controller/kueue/test_kueue_all_features.py),
but owned by one process for the whole run: a fresh devcluster in a temporary folder serving both
kinds (manifests/kubeflow/), a real Kueue manager (devcluster/kueue.py), KWOK nodes in two racks of
three 4-CPU hosts with a Kueue `Topology` over them, a ClusterQueue with less CPU quota than the racks
hold (so the quota decides, and preemption of lower priorities is on), WorkloadPriorityClasses `high`
and `low`, and the operator (bench/_harness.py's OperatorProcess) with
`--kueue=on --kubeflow-tfjob=on --gang-scheduler=kubernetes --network-policy=on`.

Faults, each one call: the operator SIGKILLed and restarted, a pod evicted through the Eviction API,
a pod deleted outright, Kueue's manager restarted, the API server restarted, a rack host NotReady
(and Ready again a minute later, by the caller).
"""

from __future__ import annotations

import contextlib
import random
import shutil
import signal
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench._harness import OperatorProcess, log, wait_until
from controller.kueue import protocol as kq
from devcluster.cluster import Cluster
from devcluster.components import KUBELET_ADDRESS, KWOK_NODE_ANNOTATION
from devcluster.kueue import Kueue
from kube import ApiError, Kube, resource_path

ROOT = Path(__file__).resolve().parents[1]
CRDS = (ROOT / "manifests" / "kubeflow" / "tensorflowjob-crd.yaml", ROOT / "manifests" / "kubeflow" / "tfjob-crd.yaml")
FLAGS = ["--kueue=on", "--kubeflow-tfjob=on", "--gang-scheduler=kubernetes", "--network-policy=on", "--resync", "60"]
NAMESPACE = "soak"
POOL = "soak-racks"
POOL_KEY = "tfjob-test/tas-pool"
BLOCK, RACK, HOST = "tfjob-test/block", "tfjob-test/rack", "kubernetes.io/hostname"
RACKS, HOSTS_PER_RACK, CPUS_PER_HOST = ("r1", "r2"), 3, 4
CPU_QUOTA = "10"  # of the racks' 24: the quota, not room, decides who runs
PRIORITIES = {"high": 1000, "low": 100}


def kueue_path(plural: str, namespace: str | None = None, name: str | None = None) -> str:
    return resource_path(kq.GROUP, kq.VERSION, plural, namespace, name)


def rack_node(name: str, rack: str, ip: str) -> dict[str, Any]:
    key, value = KWOK_NODE_ANNOTATION
    resources = {"cpu": str(CPUS_PER_HOST), "memory": "32Gi", "pods": "110", "ephemeral-storage": "1Ti"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "annotations": {key: value, "node.alpha.kubernetes.io/ttl": "0"},
                         "labels": {HOST: name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                                    "type": "kwok", POOL_KEY: POOL, BLOCK: "b1", RACK: rack}},
            "status": {"allocatable": resources, "capacity": resources,
                       "addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": name},
                                     {"type": "InternalDNS", "address": KUBELET_ADDRESS}]}}


def _active(api: Kube, path: str) -> bool:
    conditions = (api.get(path).get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Active" and c.get("status") == "True" for c in conditions)


@dataclass
class World:
    cluster: Cluster
    kueue: Kueue
    api: Kube
    operator: OperatorProcess
    rack_nodes: list[str]

    # ------------------------------------------------------------------ reading

    def items(self, path: str) -> list[dict[str, Any]]:
        return list(self.api.list(path)["items"])

    def jobs(self) -> list[dict[str, Any]]:
        return [*self.items(resource_path("kubeflow.org", "v1", "tensorflowjobs", NAMESPACE)),
                *self.items(resource_path("kubeflow.org", "v1", "tfjobs", NAMESPACE))]

    def pods(self) -> list[dict[str, Any]]:
        return self.items(resource_path("", "v1", "pods", NAMESPACE))

    def workloads(self) -> list[dict[str, Any]]:
        return self.items(kq.workload_path(NAMESPACE))

    def cluster_queue(self) -> dict[str, Any]:
        return dict(self.api.get(kueue_path("clusterqueues", name=POOL)))

    def owned_objects(self) -> list[tuple[str, dict[str, Any]]]:
        """Everything in the namespace a job may own, as (kind, object)."""
        kinds = {"Pod": resource_path("", "v1", "pods", NAMESPACE),
                 "Service": resource_path("", "v1", "services", NAMESPACE),
                 "NetworkPolicy": resource_path("networking.k8s.io", "v1", "networkpolicies", NAMESPACE),
                 "Workload": kq.workload_path(NAMESPACE),
                 "GangWorkload": resource_path("scheduling.k8s.io", "v1beta1", "workloads", NAMESPACE)}
        return [(kind, obj) for kind, path in kinds.items() for obj in self.items(path)]

    # ------------------------------------------------------------------ faults

    def kill_operator(self) -> None:
        """SIGKILL, then start again (new ports) and wait until it is ready."""
        process = self.operator.process
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGKILL)
            process.wait(10)
        self.operator.start()
        self.operator.wait_ready(180)

    def evict_pod(self, pod: dict[str, Any]) -> None:
        name = pod["metadata"]["name"]
        eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": NAMESPACE}}
        self.api.create(resource_path("", "v1", "pods", NAMESPACE, name, "eviction"), eviction)

    def delete_pod(self, pod: dict[str, Any]) -> None:
        self.api.delete(resource_path("", "v1", "pods", NAMESPACE, pod["metadata"]["name"]))

    def restart_kueue(self) -> None:
        self.kueue.stop()
        self.kueue.start(timeout=180)

    def restart_apiserver(self) -> None:
        self.cluster.restart_apiserver(timeout=180)

    def node_ready(self, name: str, ready: bool) -> None:
        self.cluster.set_node_ready(name, ready)


def _set_up_queues(api: Kube, cluster: Cluster) -> list[str]:
    """Rack nodes, Topology, ResourceFlavor, ClusterQueue, LocalQueue `lq`, priority classes; the nodes' names."""
    nodes = resource_path("", "v1", "nodes")
    names = []
    for r, rack in enumerate(RACKS):
        for i in range(HOSTS_PER_RACK):
            names.append(f"{POOL}-{rack}-{i}")
            api.create(nodes, rack_node(names[-1], rack, f"10.246.{r}.{i + 1}"))
    if not wait_until(lambda: all(_ready(api.get(f"{nodes}/{n}")) for n in names), 90):
        raise RuntimeError("the rack nodes did not become Ready")
    api.create(resource_path("", "v1", "namespaces"), {"apiVersion": "v1", "kind": "Namespace",
                                                        "metadata": {"name": NAMESPACE}})
    for name, value in PRIORITIES.items():
        api.create(kueue_path("workloadpriorityclasses"), {
            "apiVersion": kq.API_VERSION, "kind": "WorkloadPriorityClass", "metadata": {"name": name}, "value": value})
    objects = [
        ("topologies", {"kind": "Topology", "spec": {
            "levels": [{"nodeLabel": BLOCK}, {"nodeLabel": RACK}, {"nodeLabel": HOST}]}}),
        ("resourceflavors", {"kind": "ResourceFlavor", "spec": {"nodeLabels": {POOL_KEY: POOL}, "topologyName": POOL}}),
        ("clusterqueues", {"kind": "ClusterQueue", "spec": {
            "namespaceSelector": {}, "preemption": {"withinClusterQueue": "LowerPriority"},
            "resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [
                {"name": POOL, "resources": [{"name": "cpu", "nominalQuota": CPU_QUOTA},
                                             {"name": "memory", "nominalQuota": "1000Gi"}]}]}]}}),
    ]
    for plural, obj in objects:
        api.create(kueue_path(plural), {"apiVersion": kq.API_VERSION, "metadata": {"name": POOL}, **obj})
    api.create(kueue_path("localqueues", NAMESPACE), {"apiVersion": kq.API_VERSION, "kind": "LocalQueue",
                                                      "metadata": {"name": "lq", "namespace": NAMESPACE},
                                                      "spec": {"clusterQueue": POOL}})
    for path in (kueue_path("clusterqueues", name=POOL), kueue_path("localqueues", NAMESPACE, "lq")):
        if not wait_until(lambda p=path: _active(api, p), 60):  # type: ignore[misc]
            raise RuntimeError(f"{path} did not become Active")
    return names


def _ready(node: dict[str, Any]) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def _serves(api: Kube, plural: str) -> bool:
    try:
        api.list(resource_path("kubeflow.org", "v1", plural), limit=1)
    except ApiError:
        return False
    return True


@contextlib.contextmanager
def world(log_dir: Path) -> Iterator[World]:
    """Everything up, the operator ready; everything stopped and removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="tfjob-soak-"))
    cluster = Cluster(folder)
    kueue = Kueue(cluster)
    api: Kube | None = None
    operator: OperatorProcess | None = None
    try:
        log(f"starting a devcluster in {folder}")
        cluster.up(nodes=2, timeout=300.0, pod_logs=False)
        for crd in CRDS:
            cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(crd))
        api = Kube.from_kubeconfig(str(cluster.kubeconfig), pool_size=32)
        if not all(wait_until(lambda p=p: _serves(api, p), 90) for p in ("tensorflowjobs", "tfjobs")):  # type: ignore[misc]
            raise RuntimeError("the kubeflow.org kinds are not served")
        log("starting Kueue")
        kueue.start(timeout=180)
        rack_nodes = _set_up_queues(api, cluster)
        operator = OperatorProcess(cluster.kubeconfig, log_dir / "operator.log", FLAGS).start()
        operator.wait_ready(180)
        log(f"operator ready (pid {operator.pid}); log {operator.log_path}")
        yield World(cluster, kueue, api, operator, rack_nodes)
    finally:
        if operator is not None:
            operator.stop()
        kueue.stop()
        if api is not None:
            api.close()
        cluster.down()
        shutil.rmtree(folder, ignore_errors=True)


def pick(rng: random.Random, items: list[Any]) -> Any:
    return rng.choice(items) if items else None
