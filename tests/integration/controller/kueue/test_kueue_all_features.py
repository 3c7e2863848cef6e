"""Every feature at once, on a real Kueue with topology-aware scheduling: the quota follows the jobs.

One operator runs with `--kueue=on --kubeflow-tfjob=on --gang-scheduler=kubernetes --network-policy=on`
(the cluster serves both kinds), and its TensorFlowJobs have failure rules, training progress and a
topology request (one rack). The ClusterQueue has 4 CPUs over KWOK nodes of the test's own, two racks
of three 2-CPU hosts (labelled as in test_kueue_topology.py), and preempts lower priorities. The
ClusterQueue's own counts (reserving, admitted, pending Workloads) are read at every step of one
story: a user's suspension hands the quota to the job queued behind; a resumed job queues again; a
higher-priority job preempts; a FailJob rule fails the job holding the quota, which goes at once to
the job waiting longest.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from controller.job.netpol import policy_name
from controller.kueue import protocol as kq
from controller.kueue import suspension, topology
from kube import Kube, resource_path
from tests.integration.controller.conftest import CrdScheme, TfJobs
from tests.support.jobs import DEVCLUSTER_IMAGE, container, devcluster_role, tfjob
from tests.support.operator import Operator
from tests.support.polling import wait_for

from .conftest import _active, _create_or_keep, kueue_path
from .test_kueue_topology import BLOCK, HOST, RACK, _node, _usable, remove_rack_queue

FLAGS = ["--kueue=on", "--kubeflow-tfjob=on", "--gang-scheduler=kubernetes", "--network-policy=on"]
RACKS, HOSTS_PER_RACK = ("r1", "r2"), 3
CPU_QUOTA = "4"
IP_PREFIX = "10.245"  # apart from the devcluster's, the gang pools' and the topology tests' nodes
EXIT_3_FAILS = {"name": "bad-config", "action": "FailJob", "onExitCodes": {"operator": "In", "values": [3]}}


@pytest.fixture
def queue(kueue: Any, kueue_api: Kube, kueue_priority_classes: Any, namespace: str) -> Iterator[str]:
    """The test's rack nodes, Topology, ResourceFlavor, ClusterQueue (4 CPUs, preempting lower
    priorities) and LocalQueue `lq`; yields the ClusterQueue's name."""
    pool = f"all-{uuid.uuid4().hex[:8]}"
    rack_of = {f"{pool}-{rack}-{i}": rack for rack in RACKS for i in range(HOSTS_PER_RACK)}
    nodes = resource_path("", "v1", "nodes")
    for index, (name, rack) in enumerate(rack_of.items()):
        kueue_api.create(nodes, _node(name, pool, rack, f"{IP_PREFIX}.{uuid.uuid4().int % 250}.{index + 1}"))
    wait_for(lambda: all(_usable(kueue_api.get(f"{nodes}/{n}")) for n in rack_of), 60, "the rack nodes to be Ready")
    flavor_labels = {"tfjob-test/tas-pool": pool}
    objects = [
        ("topologies", {"metadata": {"name": pool}, "kind": "Topology",
                        "spec": {"levels": [{"nodeLabel": BLOCK}, {"nodeLabel": RACK}, {"nodeLabel": HOST}]}}),
        ("resourceflavors", {"metadata": {"name": pool}, "kind": "ResourceFlavor",
                             "spec": {"nodeLabels": flavor_labels, "topologyName": pool}}),
        ("clusterqueues", {"metadata": {"name": pool}, "kind": "ClusterQueue", "spec": {
            "namespaceSelector": {}, "preemption": {"withinClusterQueue": "LowerPriority"},
            "resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [
                {"name": pool, "resources": [{"name": "cpu", "nominalQuota": CPU_QUOTA},
                                             {"name": "memory", "nominalQuota": "1000Gi"}]}]}]}}),
    ]
    for plural, body in objects:
        _create_or_keep(kueue_api, kueue_path(plural), {"apiVersion": kq.API_VERSION, **body})
    _create_or_keep(kueue_api, kueue_path("localqueues", namespace), {
        "apiVersion": kq.API_VERSION, "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": namespace},
        "spec": {"clusterQueue": pool}})
    wait_for(lambda: _active(kueue_api, kueue_path("clusterqueues", name=pool)), 30, "the ClusterQueue to be Active")
    wait_for(lambda: _active(kueue_api, kueue_path("localqueues", namespace, "lq")), 30, "lq to be Active")
    yield pool
    remove_rack_queue(kueue_api, namespace, pool, nodes, rack_of)


@pytest.fixture
def jobs(api: Kube, namespace: str, cluster: Any, crd_scheme: CrdScheme, queue: str,
         no_session_operator: None, start_operator: Callable[..., Operator]) -> TfJobs:
    """TensorFlowJobs, with both kinds' CRDs served, and the operator with every feature on."""
    crd_scheme.use("kubeflow")
    start_operator(FLAGS)
    return TfJobs(api, namespace, cluster)


def submit(jobs: TfJobs, name: str, workers: int, priority: str) -> dict[str, Any]:
    """A queued job of `workers` 1-CPU workers in one rack, with a FailJob rule (exit code 3) and progress."""
    worker = devcluster_role(workers, containers=[container(DEVCLUSTER_IMAGE, requests={"cpu": "1", "memory": "1Gi"})],
                             annotations={topology.REQUIRED: RACK})
    labels = {kq.QUEUE_LABEL: "lq", kq.PRIORITY_CLASS_LABEL: priority}
    spec = {"worker": worker, "failurePolicy": {"rules": [EXIT_3_FAILS]}, "progress": {"periodSeconds": 10}}
    return jobs.api.create(jobs.path(), tfjob(name, spec, namespace=jobs.namespace, labels=labels))


def workload_of(jobs: TfJobs, job: dict[str, Any]) -> dict[str, Any]:
    items = jobs.api.list(kq.workload_path(jobs.namespace), labelSelector=kq.job_uid_selector(job))["items"]
    return items[0] if items else {}


def counts(jobs: TfJobs, queue: str) -> tuple[int, int, int]:
    """The ClusterQueue's (reservingWorkloads, admittedWorkloads, pendingWorkloads)."""
    status = jobs.api.get(kueue_path("clusterqueues", name=queue)).get("status") or {}
    return (int(status.get("reservingWorkloads") or 0), int(status.get("admittedWorkloads") or 0),
            int(status.get("pendingWorkloads") or 0))


def wait_counts(jobs: TfJobs, queue: str, wanted: tuple[int, int, int], what: str) -> None:
    jobs.wait_for(lambda: counts(jobs, queue) == wanted, 90,
                  f"(reserving, admitted, pending) == {wanted}: {what} (now {counts(jobs, queue)})")


def running(jobs: TfJobs, name: str, workers: int) -> None:
    jobs.wait_pods(name, workers, timeout=90)
    jobs.wait_condition(name, "Running", timeout=60)


def assert_every_feature_applies(jobs: TfJobs, name: str) -> None:
    """The running job has its NetworkPolicy and its gang (Kubernetes' own Workload), and its pods
    share one rack by Kueue's topology assignment."""
    api, namespace = jobs.api, jobs.namespace
    assert api.get(resource_path("networking.k8s.io", "v1", "networkpolicies", namespace, policy_name(name)))
    assert api.get(resource_path("scheduling.k8s.io", "v1beta1", "workloads", namespace, name))
    nodes = [pod["spec"]["nodeName"] for pod in jobs.pods(name, include_terminating=False)]
    racks = {api.get(resource_path("", "v1", "nodes", None, node))["metadata"]["labels"].get(RACK) for node in nodes}
    assert len(racks) == 1 and None not in racks, (nodes, racks)


def test_quota_follows_suspension_preemption_and_a_fail_job_rule_with_every_feature_on(
        jobs: TfJobs, queue: str) -> None:
    first = submit(jobs, "first", 2, "low")
    running(jobs, "first", 2)
    assert_every_feature_applies(jobs, "first")
    submit(jobs, "second", 3, "low")  # 2 + 3 CPUs > 4: waits
    wait_counts(jobs, queue, (1, 1, 1), "first runs, second waits")

    jobs.patch("first", {"suspend": True})
    running(jobs, "second", 3)
    wait_counts(jobs, queue, (1, 1, 0), "the suspended first gave its quota to second")
    assert jobs.pods("first") == [] and not suspension.is_active(workload_of(jobs, first))

    jobs.patch("first", {"suspend": False})
    wait_counts(jobs, queue, (1, 1, 1), "first queued again")

    urgent = submit(jobs, "urgent", 3, "high")
    running(jobs, "urgent", 3)
    wait_counts(jobs, queue, (1, 1, 2), "urgent preempted second; first and second wait")
    assert jobs.pods("second") == [] and jobs.pods("first") == []

    jobs.exit_pod("urgent-worker-1", 3)
    jobs.wait_condition("urgent", "Failed", "PodFailurePolicy", timeout=60)
    jobs.wait_for(lambda: kq.admission(workload_of(jobs, urgent)).finished, 60, "urgent's Workload to be Finished")
    running(jobs, "first", 2)  # queued before second: admitted first, and second (3 CPUs) no longer fits
    wait_counts(jobs, queue, (1, 1, 1), "the failed job's quota went to first; second waits")
    assert jobs.pods("second") == []

