"""Jobs under the operator's `--gang-scheduler=kubernetes`, placed by the local cluster's own kube-scheduler.

Kubernetes 1.37 gang-schedules by itself (the Workload and PodGroup API, `scheduling.k8s.io/v1beta1`,
feature gate `GenericWorkload`, both turned on by the devcluster): no second scheduler to install.
On a pool of KWOK nodes with room for one 5-pod job, one job has all its pods bound and the other
none -- every pod's binding watched, not sampled -- until the first finishes; a gang that fits 4 of
its 5 pods binds none, where the default scheduler without a gang places 4; a gang asked to stay in
one rack (`topologyKey`) lands in one or waits. The job's Workload and PodGroup follow it: the gang's
size with scaling, one Workload across a suspension, both gone with the job.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kube import ApiError, Kube, resource_path
from tests.support.kinds import both_kinds
from tests.support.operator import Operator

from ..chaos.watching import PodWatch
from ..conftest import TfJobs
from .conftest import GangPool
from .test_gang_jobs import MEMBERS, STABLE_SECONDS, gang_role, running

GROUP, VERSION = "scheduling.k8s.io", "v1beta1"
KUBERNETES_FLAGS = ["--gang-scheduler=kubernetes"]


def scheduling_object(api: Kube, namespace: str, plural: str, name: str) -> dict[str, Any] | None:
    """The job's Workload or PodGroup (`plural`), None if there is none."""
    try:
        return api.get(resource_path(GROUP, VERSION, plural, namespace, name))
    except ApiError as error:
        if error.not_found:
            return None
        raise


def scheduling_objects(api: Kube, namespace: str, plural: str) -> list[dict[str, Any]]:
    return api.list(resource_path(GROUP, VERSION, plural, namespace))["items"]


def min_count(obj: dict[str, Any] | None) -> int | None:
    """The gang's size of a PodGroup, or of a Workload's one template."""
    spec = (obj or {}).get("spec") or {}
    policy = spec["podGroupTemplates"][0]["schedulingPolicy"] if "podGroupTemplates" in spec else spec.get(
        "schedulingPolicy")
    return ((policy or {}).get("gang") or {}).get("minCount")


@pytest.fixture
def kubernetes_operator(tfjobs: TfJobs, standing_operator: Callable[[list[str]], Operator]) -> Operator:
    """An operator with Kubernetes' own gang scheduling, in place of the session's, kept for the next
    test that wants it (`tfjobs` first: it may switch the cluster's CRDs, which the operator reads at
    start)."""
    return standing_operator(KUBERNETES_FLAGS)


@pytest.fixture
def pod_watch(tfjobs: TfJobs) -> Iterator[PodWatch]:
    """Every pod of the test's namespace, each binding seen as it happens (a raw watch)."""
    watch = PodWatch(tfjobs.api, tfjobs.namespace).start()
    yield watch
    watch.stop()


def bound(watch: PodWatch, job: str) -> int:
    """How many of the job's pods the watch ever saw bound to a node."""
    return sum(1 for pod in watch.pods(job) if pod.nodes)


@both_kinds
def test_of_two_jobs_that_fit_once_one_is_bound_whole_and_the_other_not_at_all_until_it_finishes(
        tfjobs: TfJobs, kubernetes_operator: Operator, pod_watch: PodWatch,
        gang_pool: Callable[..., GangPool]) -> None:
    pool = gang_pool(cpus=7, nodes=1)  # room for one 5-pod job of 1-CPU pods, not two
    tfjobs.create("first", worker=gang_role(MEMBERS, pool))
    tfjobs.wait_pods("first", MEMBERS, "Running", timeout=120)
    tfjobs.create("second", worker=gang_role(MEMBERS, pool))

    pending = tfjobs.wait_condition("second", "Pending", timeout=120)
    assert pending["reason"] == "Unschedulable", pending
    tfjobs.wait_for(lambda: "PodGroup second (kubernetes) is Unschedulable" in (
        tfjobs.condition("second", "Pending") or {}).get("message", ""), 60,
        "the Pending condition naming the PodGroup's Unschedulable state")
    time.sleep(STABLE_SECONDS)  # a window for a wrong binding to happen; the watch sees every one
    assert bound(pod_watch, "second") == 0 and len(pod_watch.pods("second")) == MEMBERS
    assert bound(pod_watch, "first") == MEMBERS
    pods = tfjobs.pods("second")
    assert {p["spec"]["schedulingGroup"]["podGroupName"] for p in pods} == {"second"}

    tfjobs.exit_pod(tfjobs.pod_names("first", "worker")[0], 0)  # worker 0 succeeds: the job does
    tfjobs.wait_condition("first", "Succeeded", timeout=60)
    finished = time.monotonic()
    assert bound(pod_watch, "second") == 0  # not one pod placed while the first held the room
    tfjobs.wait_for(lambda: bound(pod_watch, "second") == MEMBERS, 120, "the second job's gang bound")
    handover = time.monotonic() - finished
    tfjobs.wait_pods("second", MEMBERS, "Running", timeout=120)
    pod_watch.assert_healthy()
    assert handover < 10, f"the gang was bound {handover:.1f} s after the first job finished"
    tfjobs.wait_for(lambda: not tfjobs.has_condition("second", "Pending"), 30,
                    "the Pending condition to turn False once the gang runs")
    tfjobs.wait_for(lambda: scheduling_object(tfjobs.api, tfjobs.namespace, "workloads", "first") is None, 60,
                    "the finished job's Workload to be given back")


def test_a_gang_that_fits_four_of_its_five_pods_binds_none(
        tfjobs: TfJobs, kubernetes_operator: Operator, pod_watch: PodWatch,
        gang_pool: Callable[..., GangPool]) -> None:
    pool = gang_pool(cpus=4, nodes=1)
    tfjobs.create("short", worker=gang_role(MEMBERS, pool))
    tfjobs.wait_for(lambda: "PodGroup short (kubernetes) is Unschedulable" in (
        tfjobs.condition("short", "Pending") or {}).get("message", ""), 120,
        "the Pending condition naming the PodGroup's Unschedulable state")
    time.sleep(STABLE_SECONDS)
    assert len(pod_watch.pods("short")) == MEMBERS and bound(pod_watch, "short") == 0
    pod_watch.assert_healthy()
    group = scheduling_object(tfjobs.api, tfjobs.namespace, "podgroups", "short")
    condition = next(c for c in group["status"]["conditions"] if c["type"] == "PodGroupInitiallyScheduled")  # type: ignore[index]
    assert condition["status"] == "False" and condition["reason"] == "Unschedulable"


def test_without_a_gang_scheduler_four_of_the_five_pods_are_placed(
        tfjobs: TfJobs, pod_watch: PodWatch, gang_pool: Callable[..., GangPool]) -> None:
    pool = gang_pool(cpus=4, nodes=1)
    tfjobs.create("short", worker=gang_role(MEMBERS, pool))
    tfjobs.wait_for(lambda: running(tfjobs, "short") == 4, 120, "4 of the 5 pods running")
    assert bound(pod_watch, "short") == 4  # the partial placement a gang prevents
    assert scheduling_objects(tfjobs.api, tfjobs.namespace, "workloads") == []  # the operator made none
    assert scheduling_objects(tfjobs.api, tfjobs.namespace, "podgroups") == []
    assert all("schedulingGroup" not in p["spec"] for p in tfjobs.pods("short"))


@both_kinds
def test_the_workload_and_pod_group_follow_scaling_suspension_and_deletion(
        tfjobs: TfJobs, kubernetes_operator: Operator, gang_pool: Callable[..., GangPool]) -> None:
    pool = gang_pool(cpus=10, nodes=1)
    tfjobs.create("elastic", worker=gang_role(2, pool, cpu="500m"))
    tfjobs.wait_pods("elastic", 2, "Running", timeout=120)
    workload = scheduling_object(tfjobs.api, tfjobs.namespace, "workloads", "elastic")
    group = scheduling_object(tfjobs.api, tfjobs.namespace, "podgroups", "elastic")
    assert workload is not None and group is not None
    assert min_count(workload) == 2 and min_count(group) == 2
    assert group["spec"]["workloadRef"] == {"workloadName": "elastic", "templateName": "gang"}
    assert all(p["metadata"]["creationTimestamp"] >= group["metadata"]["creationTimestamp"]
               for p in tfjobs.pods("elastic"))
    kind = tfjobs.get("elastic")["kind"]  # type: ignore[index]
    assert workload["metadata"]["ownerReferences"][0]["kind"] == kind == workload["spec"]["controllerRef"]["kind"]

    tfjobs.patch("elastic", {"worker": {"replicas": 3}})
    tfjobs.wait_for(lambda: min_count(scheduling_object(tfjobs.api, tfjobs.namespace, "podgroups", "elastic")) == 3
                    and min_count(scheduling_object(tfjobs.api, tfjobs.namespace, "workloads", "elastic")) == 3,
                    60, "minCount 3 after scaling")
    tfjobs.wait_pods("elastic", 3, "Running", timeout=120)

    tfjobs.patch("elastic", {"suspend": True})
    tfjobs.wait_condition("elastic", "Suspended", timeout=60)
    tfjobs.wait_for(lambda: scheduling_object(tfjobs.api, tfjobs.namespace, "podgroups", "elastic") is None, 60,
                    "the suspended job's PodGroup to be deleted")
    tfjobs.patch("elastic", {"suspend": False})
    tfjobs.wait_pods("elastic", 3, "Running", timeout=120)
    assert [w["metadata"]["uid"] for w in scheduling_objects(tfjobs.api, tfjobs.namespace, "workloads")] == [
        workload["metadata"]["uid"]]  # one Workload, kept across the suspension
    assert [g["metadata"]["name"] for g in scheduling_objects(tfjobs.api, tfjobs.namespace, "podgroups")] == [
        "elastic"]

    tfjobs.delete("elastic")
    tfjobs.wait_for(lambda: scheduling_objects(tfjobs.api, tfjobs.namespace, "workloads") == []
                    and scheduling_objects(tfjobs.api, tfjobs.namespace, "podgroups") == [], 60,
                    "the deleted job's Workload and PodGroup to be gone")


def test_a_replaced_pod_joins_its_gang_again(
        tfjobs: TfJobs, kubernetes_operator: Operator, gang_pool: Callable[..., GangPool]) -> None:
    pool = gang_pool(cpus=10, nodes=1)
    tfjobs.create("mended", worker=gang_role(3, pool))
    tfjobs.wait_pods("mended", 3, "Running", timeout=120)
    lost = tfjobs.pods("mended")[0]
    tfjobs.api.delete(resource_path("", "v1", "pods", tfjobs.namespace, lost["metadata"]["name"]))
    tfjobs.wait_for(lambda: lost["metadata"]["uid"] not in {p["metadata"]["uid"] for p in tfjobs.pods("mended")}
                    and running(tfjobs, "mended") == 3, 120, "the deleted pod replaced and running")
    assert {p["spec"]["schedulingGroup"]["podGroupName"] for p in tfjobs.pods("mended")} == {"mended"}


RACK = "tfjob-test/rack"


def label_racks(api: Kube, pool: GangPool) -> dict[str, str]:
    """One rack per node of the pool (`rack-0`, `rack-1`, ...); the node of each rack."""
    racks = {}
    for i, node in enumerate(pool.nodes):
        api.patch(resource_path("", "v1", "nodes", None, node), {"metadata": {"labels": {RACK: f"rack-{i}"}}})
        racks[node] = f"rack-{i}"
    return racks


def test_a_gang_asked_to_stay_in_one_rack_lands_in_one_or_waits(
        tfjobs: TfJobs, kubernetes_operator: Operator, pod_watch: PodWatch,
        gang_pool: Callable[..., GangPool]) -> None:
    pool = gang_pool(cpus=3, nodes=2)  # two racks of 3 CPUs: 6 in all, never 4 in one rack
    racks = label_racks(tfjobs.api, pool)
    tfjobs.create("wide", worker=gang_role(4, pool), schedulingPolicy={"topologyKey": RACK})
    tfjobs.wait_for(lambda: "PodGroup wide (kubernetes) is Unschedulable" in (
        tfjobs.condition("wide", "Pending") or {}).get("message", ""), 120,
        "the 4-pod gang Pending: no rack has room for it")
    time.sleep(STABLE_SECONDS)
    assert len(pod_watch.pods("wide")) == 4 and bound(pod_watch, "wide") == 0  # 6 CPUs free, 3 per rack
    group = scheduling_object(tfjobs.api, tfjobs.namespace, "podgroups", "wide")
    assert (group or {})["spec"]["schedulingConstraints"] == {"topology": [{"key": RACK}]}

    tfjobs.create("narrow", worker=gang_role(3, pool), schedulingPolicy={"topologyKey": RACK})
    tfjobs.wait_pods("narrow", 3, "Running", timeout=120)
    assert len({racks[p["spec"]["nodeName"]] for p in tfjobs.pods("narrow")}) == 1  # one rack
    assert bound(pod_watch, "wide") == 0
    pod_watch.assert_healthy()
