"""Every feature at once, on a real Kueue with topology-aware scheduling: the quota follows the jobs.

One operator runs with `--kueue=on --kubeflow-tfjob=on --gang-scheduler=kubernetes --network-policy=on`
(the cluster serves both kinds), and its TensorFlowJobs have failure rules, training progress and a
topology request (one rack). The ClusterQueue has 4 CPUs over KWOK nodes of the test's own, two racks
of three 2-CPU hosts (labelled as in test_kueue_topology.py), and preempts lower priorities. The
ClusterQueue's own counts (reserving, admitted, pending Workloads) are read at every step of one
story: a user's suspension hands the quota to the job queued behind; a resumed job queues again; a
higher-priority job preempts; a FailJob rule fails the job holding the quota, which goes at once to
the job waiting longest. Two more, one scenario each: the operator SIGKILLed under a running job and
started again picks it up as it was (the same pods, Workload and gang, no duplicate), a running job
scaled up queues again under a new Workload and runs at its new size in one rack, and a finished
job leaves nothing behind (pods and Service by its cleanPodPolicy, quota at its end, the rest with
its TTL).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from controller.job.netpol import policy_name
from controller.kueue import protocol as kq
from controller.kueue import suspension, topology
from kube import ApiError, Kube, resource_path
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
def every_feature_operator(crd_scheme: CrdScheme, queue: str,
                           standing_operator: Callable[[list[str]], Operator]) -> Operator:
    """The operator with every feature on, both kinds' CRDs served: one for the tests of this module
    (started after Kueue, whose API and Configuration it reads at start), in place of the session's."""
    crd_scheme.use("kubeflow")
    return standing_operator(FLAGS)


@pytest.fixture
def jobs(api: Kube, namespace: str, cluster: Any, every_feature_operator: Operator) -> TfJobs:
    """TensorFlowJobs, queued to the test's rack queue, under the operator with every feature on."""
    return TfJobs(api, namespace, cluster)


def submit(jobs: TfJobs, name: str, workers: int, priority: str, **spec: Any) -> dict[str, Any]:
    """A queued job of `workers` 1-CPU workers in one rack, with a FailJob rule (exit code 3) and
    progress; `spec` adds fields (cleanPodPolicy, ttlSecondsAfterFinished, ...)."""
    worker = devcluster_role(workers, containers=[container(DEVCLUSTER_IMAGE, requests={"cpu": "1", "memory": "1Gi"})],
                             annotations={topology.REQUIRED: RACK})
    labels = {kq.QUEUE_LABEL: "lq", kq.PRIORITY_CLASS_LABEL: priority}
    body = {"worker": worker, "failurePolicy": {"rules": [EXIT_3_FAILS]}, "progress": {"periodSeconds": 10}, **spec}
    return jobs.api.create(jobs.path(), tfjob(name, body, namespace=jobs.namespace, labels=labels))


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


def gang_path(jobs: TfJobs, name: str) -> str:
    """The job's gang: Kubernetes' own Workload (scheduling.k8s.io), named after the job."""
    return resource_path("scheduling.k8s.io", "v1beta1", "workloads", jobs.namespace, name)


def uids(objects: list[dict[str, Any]]) -> dict[str, str]:
    return {o["metadata"]["name"]: o["metadata"]["uid"] for o in objects}


def gone(jobs: TfJobs, path: str) -> bool:
    try:
        jobs.api.get(path)
    except ApiError as error:
        if error.not_found:
            return True
        raise
    return False


def assert_every_feature_applies(jobs: TfJobs, name: str) -> None:
    """The running job has its NetworkPolicy and its gang (Kubernetes' own Workload), and its pods
    share one rack by Kueue's topology assignment."""
    api, namespace = jobs.api, jobs.namespace
    assert api.get(resource_path("networking.k8s.io", "v1", "networkpolicies", namespace, policy_name(name)))
    assert api.get(gang_path(jobs, name))
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



def test_an_operator_killed_under_a_running_job_resumes_it_with_the_same_pods_workload_and_gang(
        jobs: TfJobs, queue: str, every_feature_operator: Operator) -> None:
    job = submit(jobs, "steady", 3, "low")
    running(jobs, "steady", 3)
    assert_every_feature_applies(jobs, "steady")
    wait_counts(jobs, queue, (1, 1, 0), "steady runs")
    pods, workload = uids(jobs.pods("steady")), workload_of(jobs, job)["metadata"]["uid"]
    gang = jobs.api.get(gang_path(jobs, "steady"))["metadata"]["uid"]

    every_feature_operator.kill()
    waiting = submit(jobs, "waiting", 2, "low")  # 3 + 2 CPUs > 4: queued while the operator is down
    every_feature_operator.start()

    jobs.wait_for(lambda: workload_of(jobs, waiting), 60, "the restarted operator to queue the new job")
    wait_counts(jobs, queue, (1, 1, 1), "steady keeps its quota, waiting waits")
    jobs.wait_for(lambda: jobs.has_condition("waiting", "Suspended", "WaitingForAdmission"), 60,
                  f"waiting to say why it waits ({jobs.status('waiting')})")
    assert uids(jobs.pods("steady")) == pods, "no pod of the running job was replaced or duplicated"
    assert workload_of(jobs, job)["metadata"]["uid"] == workload
    assert kq.admission(workload_of(jobs, job)).admitted
    assert jobs.api.get(gang_path(jobs, "steady"))["metadata"]["uid"] == gang
    assert jobs.has_condition("steady", "Running") and jobs.status("steady").get("restartCount", 0) == 0
    assert jobs.pods("waiting") == []


def test_a_finished_job_leaves_nothing_behind_its_pods_by_policy_its_quota_at_once_the_rest_by_ttl(
        jobs: TfJobs, queue: str) -> None:
    job = submit(jobs, "done", 2, "low", cleanPodPolicy="All", ttlSecondsAfterFinished=15)
    running(jobs, "done", 2)
    assert_every_feature_applies(jobs, "done")
    assert jobs.service("done")
    workload = workload_of(jobs, job)["metadata"]["name"]

    jobs.exit_pod("done-worker-0", 0)
    jobs.wait_condition("done", "Succeeded", timeout=60)
    wait_counts(jobs, queue, (0, 0, 0), "the finished job's quota is released")
    jobs.wait_for(lambda: jobs.pods("done") == [] and jobs.service("done") is None, 60,
                  "cleanPodPolicy All to delete the pods and the Service")

    jobs.wait_for(lambda: jobs.get("done") is None, 60, "the TTL to delete the job")
    leftovers = {"Workload": kq.workload_path(jobs.namespace, workload), "gang": gang_path(jobs, "done"),
                 "NetworkPolicy": resource_path("networking.k8s.io", "v1", "networkpolicies", jobs.namespace,
                                                policy_name("done"))}
    jobs.wait_for(lambda: all(gone(jobs, path) for path in leftovers.values()), 60,
                  f"garbage collection to remove {sorted(k for k, p in leftovers.items() if not gone(jobs, p))}")


def test_a_running_job_scaled_up_queues_again_and_runs_at_its_new_size_in_one_rack(jobs: TfJobs, queue: str) -> None:
    job = submit(jobs, "grows", 2, "low")
    running(jobs, "grows", 2)
    before = workload_of(jobs, job)["metadata"]["uid"]

    jobs.patch("grows", {"worker": {"replicas": 3}})
    jobs.wait_for(lambda: workload_of(jobs, job).get("metadata", {}).get("uid") not in (None, before), 60,
                  "the job to get a new Workload for its new size")
    running(jobs, "grows", 3)
    assert_every_feature_applies(jobs, "grows")
    wait_counts(jobs, queue, (1, 1, 0), "one Workload holds the quota: the new one")
    assert len(jobs.api.list(kq.workload_path(jobs.namespace))["items"]) == 1
    assert [p["count"] for p in workload_of(jobs, job)["spec"]["podSets"]] == [3]
    assert jobs.status("grows").get("restartCount", 0) == 0
