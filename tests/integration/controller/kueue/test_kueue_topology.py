"""Topology-aware scheduling with the real Kueue 0.17, for jobs queued through the operator.

Each test gets KWOK nodes of its own, labelled like a data centre -- one block, two racks of three
hosts (`tfjob-test/block`, `tfjob-test/rack`, `kubernetes.io/hostname`), 2 CPUs each, so a rack
holds six 1-CPU pods. A `Topology` with those three levels, a ResourceFlavor naming it (its node
labels lead the pods to the nodes) and a ClusterQueue with quota for far more than the nodes hold:
what keeps a job waiting here is room in a rack, never quota. Kueue finds the domain at admission,
the operator creates the pods behind Kueue's topology gate, and Kueue's ungater lifts it with each
pod's node selector.

The nodes are not tainted. With a taint that only the flavor tolerates, deleting a pod once restarted
the whole job (1 run in 3), which Kueue 0.17's TAS node controller would explain: it judges a host's
taints against the Workload's pod-set templates, which lack the flavor's tolerations, so a host left
for a moment without pods of the job can be taken for failed (pkg/controller/tas/node_controller.go).
"""

from __future__ import annotations

import contextlib
import itertools
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from controller.kueue import protocol as kq
from controller.kueue import topology
from devcluster.components import KUBELET_ADDRESS, KWOK_NODE_ANNOTATION
from kube import ApiError, Kube, resource_path
from tests.integration.controller.conftest import KubeflowTfJobs, TfJobs
from tests.support.jobs import DEVCLUSTER_IMAGE, container, devcluster_role, tfjob
from tests.support.kinds import both_kinds
from tests.support.kubeflow import as_tfjob
from tests.support.polling import wait_for
from tfjob_api.names import REPLICA_INDEX_LABEL

from .conftest import _active, _create_or_keep, kueue_path

POOL_KEY = "tfjob-test/tas-pool"
BLOCK, RACK, HOST = "tfjob-test/block", "tfjob-test/rack", "kubernetes.io/hostname"
RACKS, HOSTS_PER_RACK, CPUS_PER_HOST = ("r1", "r2"), 3, 2
IP_PREFIX = "10.243"  # apart from the devcluster's nodes (10.240/10.241) and the gang pools' (10.242)

_pool_numbers = itertools.count(1)


@dataclass(frozen=True)
class Racks:
    id: str
    rack_of: dict[str, str]  # node name → rack


def _node(name: str, pool: str, rack: str, ip: str) -> dict[str, Any]:
    key, value = KWOK_NODE_ANNOTATION
    resources = {"cpu": str(CPUS_PER_HOST), "memory": "16Gi", "pods": "110", "ephemeral-storage": "1Ti"}
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "annotations": {key: value, "node.alpha.kubernetes.io/ttl": "0"},
                     "labels": {HOST: name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                                "type": "kwok", POOL_KEY: pool, BLOCK: "b1", RACK: rack}},
        "status": {"allocatable": resources, "capacity": resources,
                   "addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": name},
                                 {"type": "InternalDNS", "address": KUBELET_ADDRESS}]},
    }


def _usable(node: dict[str, Any]) -> bool:
    ready = any(c["type"] == "Ready" and c["status"] == "True" for c in node.get("status", {}).get("conditions") or [])
    return ready and not any(t["key"].startswith("node.kubernetes.io/") for t in node.get("spec", {}).get("taints") or [])


@pytest.fixture
def racks(kueue: Any, kueue_api: Kube, namespace: str) -> Iterator[Racks]:
    """The test's nodes, Topology, ResourceFlavor, ClusterQueue and LocalQueue `lq` (see the docstring)."""
    number, pool = next(_pool_numbers), f"tas-{uuid.uuid4().hex[:8]}"
    rack_of = {f"{pool}-{rack}-{i}": rack for rack in RACKS for i in range(HOSTS_PER_RACK)}
    nodes = resource_path("", "v1", "nodes")
    for index, (name, rack) in enumerate(rack_of.items()):
        kueue_api.create(nodes, _node(name, pool, rack, f"{IP_PREFIX}.{number % 250}.{index + 1}"))
    wait_for(lambda: all(_usable(kueue_api.get(f"{nodes}/{n}")) for n in rack_of), 60, "the rack nodes to be Ready")
    objects = [
        ("topologies", {"metadata": {"name": pool}, "kind": "Topology",
                        "spec": {"levels": [{"nodeLabel": BLOCK}, {"nodeLabel": RACK}, {"nodeLabel": HOST}]}}),
        ("resourceflavors", {"metadata": {"name": pool}, "kind": "ResourceFlavor",
                             "spec": {"nodeLabels": {POOL_KEY: pool}, "topologyName": pool}}),
        ("clusterqueues", {"metadata": {"name": pool}, "kind": "ClusterQueue", "spec": {
            "namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [
                {"name": pool, "resources": [{"name": "cpu", "nominalQuota": "100"},
                                             {"name": "memory", "nominalQuota": "1000Gi"}]}]}]}}),
    ]
    for plural, body in objects:
        _create_or_keep(kueue_api, kueue_path(plural), {"apiVersion": kq.API_VERSION, **body})
    _create_or_keep(kueue_api, kueue_path("localqueues", namespace), {
        "apiVersion": kq.API_VERSION, "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": namespace},
        "spec": {"clusterQueue": pool}})
    wait_for(lambda: _active(kueue_api, kueue_path("clusterqueues", name=pool)), 30, "the ClusterQueue to be Active")
    wait_for(lambda: _active(kueue_api, kueue_path("localqueues", namespace, "lq")), 30, "lq to be Active")
    yield Racks(id=pool, rack_of=rack_of)
    remove_rack_queue(kueue_api, namespace, pool, nodes, rack_of)


def remove_rack_queue(kueue_api: Kube, namespace: str, pool: str, nodes: str, rack_of: dict[str, str]) -> None:
    """Tear a rack queue down: the namespace's pods at once, its Workloads (the quota released at once),
    the queues, flavor and topology named `pool`, and the rack nodes."""
    with contextlib.suppress(ApiError):
        kueue_api.request("DELETE", resource_path("", "v1", "pods", namespace), query={"gracePeriodSeconds": 0})
    for workload in kueue_api.list(kq.workload_path(namespace))["items"]:  # release the quota at once
        with contextlib.suppress(ApiError):
            kueue_api.delete(kq.workload_path(namespace, workload["metadata"]["name"]))
    for path in (kueue_path("localqueues", namespace, "lq"), kueue_path("clusterqueues", name=pool),
                 kueue_path("resourceflavors", name=pool), kueue_path("topologies", name=pool),
                 *(f"{nodes}/{n}" for n in rack_of)):
        with contextlib.suppress(ApiError):
            kueue_api.delete(path)


@pytest.fixture
def jobs(kind_jobs: TfJobs, racks: Racks, kueue_operator: Any) -> TfJobs:
    return kind_jobs


def submit(jobs: TfJobs, name: str, workers: int, annotation: tuple[str, str] | None = (topology.REQUIRED, RACK),
           exit_code: int | None = None) -> dict[str, Any]:
    """A queued job of `workers` 1-CPU workers whose template carries the topology `annotation`."""
    worker = devcluster_role(workers, containers=[container(DEVCLUSTER_IMAGE, requests={"cpu": "1", "memory": "1Gi"})],
                             exit_code=exit_code)
    if annotation is not None:
        worker["template"].setdefault("metadata", {})["annotations"] = dict([annotation])
    make = as_tfjob if isinstance(jobs, KubeflowTfJobs) else tfjob
    return jobs.api.create(jobs.path(), make(name, {"worker": worker}, namespace=jobs.namespace,
                                             labels={kq.QUEUE_LABEL: "lq"}))


def racks_of(jobs: TfJobs, racks: Racks, name: str) -> set[str]:
    return {racks.rack_of.get(p["spec"].get("nodeName") or "", "?") for p in jobs.pods(name, include_terminating=False)}


def workload_of(jobs: TfJobs, job: dict[str, Any]) -> dict[str, Any]:
    items = jobs.api.list(kq.workload_path(jobs.namespace), labelSelector=kq.job_uid_selector(job))["items"]
    assert len(items) == 1, [w["metadata"]["name"] for w in items]
    return items[0]


def suspended_reason(jobs: TfJobs, name: str) -> str | None:
    condition = jobs.condition(name, "Suspended")
    return condition["reason"] if condition and condition["status"] == "True" else None


@both_kinds
def test_a_job_requiring_one_rack_lands_in_one_rack_its_pods_ordered_by_replica_index(jobs: TfJobs,
                                                                                       racks: Racks) -> None:
    job = submit(jobs, "one-rack", 5)
    pods = jobs.wait_pods("one-rack", 5, timeout=90)
    assert len(racks_of(jobs, racks, "one-rack")) == 1, [(p["metadata"]["name"], p["spec"]["nodeName"]) for p in pods]
    for pod in pods:
        index = pod["metadata"]["name"].rsplit("-", 1)[1]
        assert pod["metadata"]["labels"][REPLICA_INDEX_LABEL] == index
        assert pod["metadata"]["annotations"][kq.WORKLOAD_ANNOTATION] == workload_of(jobs, job)["metadata"]["name"]
        assert not pod["spec"].get("schedulingGates"), pod["spec"].get("schedulingGates")  # lifted by Kueue
        assert pod["spec"]["nodeSelector"][HOST] == pod["spec"]["nodeName"]  # the ungater's node selector
    request = workload_of(jobs, job)["spec"]["podSets"][0]["topologyRequest"]
    assert request["required"] == RACK and request["podIndexLabel"]
    jobs.wait_condition("one-rack", "Running")


def test_a_second_job_waits_while_no_rack_has_room_and_runs_when_one_frees(jobs: TfJobs, racks: Racks) -> None:
    submit(jobs, "first", 5)
    jobs.wait_pods("first", 5, timeout=90)
    submit(jobs, "second", 5)
    jobs.wait_pods("second", 5, timeout=90)
    assert racks_of(jobs, racks, "first") != racks_of(jobs, racks, "second")
    third = submit(jobs, "third", 5)  # one free slot in each rack, and quota for all: it waits for a rack
    jobs.wait_for(lambda: "pod set worker" in str((jobs.condition("third", "Suspended") or {}).get("message")), 60,
                  "Kueue's reason in third's condition")
    message = jobs.condition("third", "Suspended")["message"]
    assert suspended_reason(jobs, "third") == "WaitingForAdmission" and "topology" in message, message
    assert not kq.admission(workload_of(jobs, third)).quota_reserved
    assert jobs.pods("third") == []
    first_rack = racks_of(jobs, racks, "first")
    jobs.exit_pod("first-worker-0", 0)  # worker 0 succeeding ends the job (no chief)
    jobs.wait_condition("first", "Succeeded")
    jobs.wait_pods("third", 5, timeout=90)
    assert racks_of(jobs, racks, "third") == first_rack


def test_a_preferred_topology_spreads_only_when_it_must(jobs: TfJobs, racks: Racks) -> None:
    submit(jobs, "small", 4, annotation=(topology.PREFERRED, RACK))
    jobs.wait_pods("small", 4, timeout=90)
    assert len(racks_of(jobs, racks, "small")) == 1
    submit(jobs, "large", 8, annotation=(topology.PREFERRED, RACK))  # 2 + 6 slots left: two racks
    jobs.wait_pods("large", 8, timeout=90)
    assert racks_of(jobs, racks, "large") == set(RACKS)


@both_kinds
def test_a_deleted_pod_comes_back_in_the_same_rack_and_the_workload_stays_admitted(jobs: TfJobs,
                                                                                   racks: Racks) -> None:
    job = submit(jobs, "keep", 5)
    before = {p["metadata"]["name"]: p["metadata"]["uid"] for p in jobs.wait_pods("keep", 5, timeout=90)}
    rack = racks_of(jobs, racks, "keep")
    # The pod alone on its node (5 pods on 2-slot hosts): the case where Kueue, seeing none of the job's
    # pods left on a host, may take the host for failed
    hosts = [p["spec"]["nodeName"] for p in jobs.pods("keep", include_terminating=False)]
    victim = next(p["metadata"]["name"] for p in jobs.pods("keep") if hosts.count(p["spec"]["nodeName"]) == 1)
    jobs.api.request("DELETE", resource_path("", "v1", "pods", jobs.namespace, victim), query={"gracePeriodSeconds": 0})
    wait_for(lambda: any(p["metadata"]["name"] == victim and p["metadata"]["uid"] != before[victim]
                         for p in jobs.pods("keep")), 60, "the deleted pod to be created again")
    pods = jobs.wait_pods("keep", 5, timeout=90)
    assert racks_of(jobs, racks, "keep") == rack, [(p["metadata"]["name"], p["spec"]["nodeName"]) for p in pods]
    after = {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods}
    events = [(e["involvedObject"].get("name"), e.get("reason"), e.get("message"))
              for e in jobs.api.list(resource_path("", "v1", "events", jobs.namespace))["items"]]
    assert {n: u for n, u in after.items() if n != victim} == {n: u for n, u in before.items() if n != victim}, (
        events, workload_of(jobs, job).get("status"))
    info = kq.admission(workload_of(jobs, job))
    assert info.admitted and not info.evicted and info.requeued is None  # never evicted nor re-queued
    assert suspended_reason(jobs, "keep") is None


def test_a_job_without_a_topology_annotation_is_placed_unconstrained_and_runs(jobs: TfJobs, racks: Racks) -> None:
    submit(jobs, "free", 3, annotation=None)  # the flavor has a topology: Kueue assigns one all the same
    pods = jobs.wait_pods("free", 3, timeout=90)
    for pod in pods:
        assert pod["metadata"]["annotations"][topology.UNCONSTRAINED] == "true"
        assert pod["spec"]["nodeName"] in racks.rack_of


def test_a_podset_group_puts_the_chief_and_its_workers_in_one_rack(jobs: TfJobs, racks: Racks) -> None:
    submit(jobs, "filler", 3)  # one rack keeps 3 free slots: room for the chief alone, not for the workers
    jobs.wait_pods("filler", 3, timeout=90)
    together = {topology.REQUIRED: RACK, topology.GROUP_NAME: "all"}
    roles = {}
    for name, replicas in (("chief", 1), ("worker", 4)):
        role = devcluster_role(replicas, containers=[container(DEVCLUSTER_IMAGE, requests={"cpu": "1", "memory": "1Gi"})])
        role["template"].setdefault("metadata", {})["annotations"] = together
        roles[name] = role
    make = as_tfjob if isinstance(jobs, KubeflowTfJobs) else tfjob
    job = jobs.api.create(jobs.path(), make("grouped", roles, namespace=jobs.namespace, labels={kq.QUEUE_LABEL: "lq"}))
    jobs.wait_pods("grouped", 5, timeout=90)
    assert len(racks_of(jobs, racks, "grouped")) == 1
    assert racks_of(jobs, racks, "grouped") != racks_of(jobs, racks, "filler")
    requests = [p["topologyRequest"] for p in workload_of(jobs, job)["spec"]["podSets"]]
    assert [r.get("podSetGroupName") for r in requests] == ["all", "all"]


def test_pods_of_a_host_gone_not_ready_come_back_in_the_same_rack_without_requeueing(
        jobs: TfJobs, racks: Racks) -> None:
    job = submit(jobs, "lost", 3)  # the rack keeps room for a lost host's pods
    pods = jobs.wait_pods("lost", 3, timeout=90)
    rack = racks_of(jobs, racks, "lost")
    victim = pods[0]["spec"]["nodeName"]
    try:
        jobs.cluster.set_node_ready(victim, False)

        def moved() -> bool:
            now = jobs.pods("lost", include_terminating=False)
            return len(now) == 3 and all(p["status"].get("phase") == "Running" and p["spec"].get("nodeName")
                                         not in (None, victim) for p in now)
        # the operator replaces the pods at once; Kueue waits 30 s (NodeFailureDelay) before it gives
        # the host's share of the assignment to another host, and fails the pods still bound for it
        jobs.wait_for(moved, 150, f"the pods on {victim} to run on another host")
        assert racks_of(jobs, racks, "lost") == rack
        info = kq.admission(workload_of(jobs, job))
        assert info.admitted and not info.evicted and info.requeued is None, workload_of(jobs, job).get("status")
    finally:
        jobs.cluster.set_node_ready(victim, True)
