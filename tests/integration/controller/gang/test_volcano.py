"""The real Volcano scheduler on the devcluster, without the operator.

What the operator will rely on when it asks Volcano for gang scheduling: a PodGroup of
scheduling.volcano.sh/v1beta1 that someone else created (as the operator, or Kubeflow's training
operator, does) is moved Pending -> Inqueue -> Running by the scheduler alone (no Volcano
controller-manager runs); pods that name it (`spec.schedulerName: volcano`, annotation
`scheduling.k8s.io/group-name`) are bound all together or not at all; a group that does not fit
waits, whole, with an Unschedulable condition on its PodGroup, until room is made; and a PodGroup
may name its own Queue and PriorityClass.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from devcluster.volcano import API_VERSION, DEFAULT_QUEUE, POD_GROUP_ANNOTATION, SCHEDULER_NAME, Volcano
from kube import ApiError, Kube, resource_path
from tests.support.polling import wait_for

from .conftest import GangPool

pytestmark = pytest.mark.tools  # the scheduler is built from its Go module (`make test-tools`)

GROUP, VERSION = API_VERSION.split("/")
MEMBERS = 5
STABLE_SECONDS = 5  # how long a "nothing more gets scheduled" observation is held
# The message of the PodGroup condition Unschedulable (reason NotEnoughResources) Volcano's gang
# plugin writes for a group short of room: "<n>/5 tasks in gang unschedulable: pod group is not
# ready, 5 Pending, 5 minAvailable; Pending: ..." (then, when a node was tried, "Origin reason is
# <pod>: 0/5 nodes are unavailable: 1 Insufficient cpu, ...").
GANG_UNSCHEDULABLE = re.compile(rf"^\d+/{MEMBERS} tasks in gang unschedulable: pod group is not ready, "
                                rf"{MEMBERS} Pending, {MEMBERS} minAvailable; Pending: ")


def pods_path(namespace: str, name: str | None = None) -> str:
    return resource_path("", "v1", "pods", namespace, name)


def pod_groups_path(namespace: str, name: str | None = None) -> str:
    return resource_path(GROUP, VERSION, "podgroups", namespace, name)


def pod_group(name: str, min_member: int = MEMBERS, queue: str = DEFAULT_QUEUE, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": "PodGroup", "metadata": {"name": name},
            "spec": {"minMember": min_member, "queue": queue, **spec}}


def member(name: str, group: str, pool: GangPool, cpu: str = "1", **spec: Any) -> dict[str, Any]:
    """A pod of `group` for Volcano, on `pool` only, requesting `cpu` CPUs."""
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"tfjob-test/group": group},
                     "annotations": {POD_GROUP_ANNOTATION: group}},
        "spec": {"schedulerName": SCHEDULER_NAME, "restartPolicy": "Never", **pool.placement(), **spec,
                 "containers": [{"name": "tensorflow", "image": "tensorflow/tensorflow:2.21.0",
                                 "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]},
    }


def group_pods(api: Kube, namespace: str, group: str) -> list[dict[str, Any]]:
    return api.list(pods_path(namespace), labelSelector=f"tfjob-test/group={group}")["items"]


def bound(pods: list[dict[str, Any]]) -> list[str]:
    return sorted(p["metadata"]["name"] for p in pods if p["spec"].get("nodeName"))


def running(pods: list[dict[str, Any]]) -> list[str]:
    return sorted(p["metadata"]["name"] for p in pods if p.get("status", {}).get("phase") == "Running")


def status(api: Kube, namespace: str, group: str) -> dict[str, Any]:
    return api.get(pod_groups_path(namespace, group)).get("status") or {}


def condition(group_status: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for c in group_status.get("conditions") or []:
        if c.get("type") == kind and c.get("status") == "True":
            return c
    return None


def create_group(api: Kube, namespace: str, pool: GangPool, group: str, queue: str = DEFAULT_QUEUE,
                 pod_spec: dict[str, Any] | None = None, **spec: Any) -> None:
    api.create(pod_groups_path(namespace), pod_group(group, queue=queue, **spec))
    for i in range(MEMBERS):
        api.create(pods_path(namespace), member(f"{group}-{i}", group, pool, **(pod_spec or {})))


def hold(check: Callable[[], object], seconds: float, what: str) -> None:
    """Assert that `check()` stays truthy for `seconds` (it is polled, not sampled once)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert check(), f"no longer true: {what}"
        time.sleep(0.25)


def phases_until_running(api: Kube, namespace: str, group: str, timeout: float) -> list[str]:
    """The distinct phases the PodGroup shows (polled every 0.1 s; "" before the scheduler wrote a
    status), in order, until it is Running."""
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        phase = status(api, namespace, group).get("phase", "")
        if not seen or seen[-1] != phase:
            seen.append(phase)
        if phase == "Running":
            return seen
        time.sleep(0.1)
    raise AssertionError(f"PodGroup {group} not Running after {timeout:g}s; phases seen: {seen}")


def test_of_two_groups_that_fit_once_the_first_runs_whole_and_the_second_waits_whole(
        volcano: Volcano, api: Kube, namespace: str, gang_pool: Callable[..., GangPool]) -> None:
    # One node of 7 CPUs: room for one group of five 1-CPU pods, not two; the two spare CPUs must
    # not let a single pod of the second group start.
    pool = gang_pool(cpus=7, nodes=1)
    create_group(api, namespace, pool, "first")
    phases = phases_until_running(api, namespace, "first", 60)
    # Only the scheduler runs: it writes every phase (no controller-manager moves Pending -> Inqueue).
    # With room, enqueue and allocate happen in one cycle: no status, then Running.
    assert phases[-1] == "Running" and set(phases) <= {"", "Pending", "Inqueue", "Running"}, phases
    wait_for(lambda: len(running(group_pods(api, namespace, "first"))) == MEMBERS, 60, "all five pods of first Running")
    assert {p["spec"]["nodeName"] for p in group_pods(api, namespace, "first")} == set(pool.nodes)
    wait_for(lambda: status(api, namespace, "first").get("running") == MEMBERS, 30, "PodGroup first running: 5")
    scheduled = condition(status(api, namespace, "first"), "Scheduled")
    assert scheduled and scheduled["reason"] == "tasks in gang are ready to be scheduled", scheduled

    create_group(api, namespace, pool, "second")
    # The second group gets nothing, not even the two spare CPUs, and keeps waiting whole; Volcano
    # says why on its PodGroup (condition Unschedulable).
    unschedulable = wait_for(lambda: condition(status(api, namespace, "second"), "Unschedulable"), 30,
                             "PodGroup second with condition Unschedulable")
    assert unschedulable["reason"] == "NotEnoughResources", unschedulable
    assert GANG_UNSCHEDULABLE.match(unschedulable["message"]), unschedulable["message"]
    hold(lambda: bound(group_pods(api, namespace, "second")) == [], STABLE_SECONDS, "no pod of second bound")
    # Enqueued (no minResources: its queue has room for nothing in particular), not allocated.
    second = status(api, namespace, "second")
    assert second.get("phase") == "Inqueue" and not second.get("running"), second
    # Its pods say PodScheduled=False (reason Unschedulable, or Schedulable for the ones a node was
    # found for: the gang holds them back).
    for pod in group_pods(api, namespace, "second"):
        conditions = {c["type"]: c for c in pod.get("status", {}).get("conditions") or []}
        assert conditions["PodScheduled"]["status"] == "False", conditions
        assert conditions["PodScheduled"]["reason"] in ("Unschedulable", "Schedulable"), conditions

    # Room is made: the waiting group starts, whole, on the same node.
    for pod in group_pods(api, namespace, "first"):
        api.delete(pods_path(namespace, pod["metadata"]["name"]), grace_seconds=0)
    wait_for(lambda: len(running(group_pods(api, namespace, "second"))) == MEMBERS, 60,
             "all five pods of second Running after first's pods were deleted")
    wait_for(lambda: status(api, namespace, "second").get("phase") == "Running", 30, "PodGroup second Running")
    # Scheduled is added; the old Unschedulable condition is left True beside it (Volcano does not
    # clear it), so the phase, not that condition, says whether a group waits.
    assert condition(status(api, namespace, "second"), "Scheduled")


@pytest.fixture
def queue_and_priority(api: Kube, namespace: str) -> Iterator[tuple[str, str]]:
    """A Queue and a PriorityClass of this test alone (both cluster-scoped), deleted after it."""
    queue, priority = f"q-{namespace}", f"p-{namespace}"
    queues = resource_path(GROUP, VERSION, "queues")
    priorities = resource_path("scheduling.k8s.io", "v1", "priorityclasses")
    api.create(queues, {"apiVersion": API_VERSION, "kind": "Queue", "metadata": {"name": queue},
                        "spec": {"weight": 1, "reclaimable": True}})
    api.create(priorities, {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                            "metadata": {"name": priority}, "value": 1000})
    yield queue, priority
    with contextlib.suppress(ApiError):
        api.request("DELETE", resource_path("", "v1", "pods", namespace), query={"gracePeriodSeconds": 0})
    for path in (resource_path(GROUP, VERSION, "queues", None, queue),
                 resource_path("scheduling.k8s.io", "v1", "priorityclasses", None, priority)):
        with contextlib.suppress(ApiError):
            api.delete(path)


def test_a_group_of_its_own_queue_and_priority_class_is_scheduled(
        volcano: Volcano, api: Kube, namespace: str, gang_pool: Callable[..., GangPool],
        queue_and_priority: tuple[str, str]) -> None:
    queue, priority = queue_and_priority
    pool = gang_pool(cpus=7, nodes=1)
    create_group(api, namespace, pool, "ranked", queue=queue, priorityClassName=priority,
                 pod_spec={"priorityClassName": priority})
    phases_until_running(api, namespace, "ranked", 60)
    wait_for(lambda: len(running(group_pods(api, namespace, "ranked"))) == MEMBERS, 60, "all five pods Running")
    assert all(p["spec"].get("priority") == 1000 for p in group_pods(api, namespace, "ranked"))
    group = api.get(pod_groups_path(namespace, "ranked"))
    assert group["spec"]["queue"] == queue and group["spec"]["priorityClassName"] == priority, group["spec"]
    # `running` (pods Running) is written a scheduling cycle after the phase.
    wait_for(lambda: status(api, namespace, "ranked").get("running") == MEMBERS, 30, "PodGroup ranked running: 5")


def test_a_group_whose_min_resources_exceed_the_cluster_stays_pending(
        volcano: Volcano, api: Kube, namespace: str, gang_pool: Callable[..., GangPool]) -> None:
    pool = gang_pool(cpus=7, nodes=1)
    create_group(api, namespace, pool, "huge", minResources={"cpu": "100000"})
    # The enqueue action refuses it (its queue, all the cluster, has not the room): it stays Pending,
    # with the gang's Unschedulable condition and an event saying so.
    unschedulable = wait_for(lambda: condition(status(api, namespace, "huge"), "Unschedulable"), 30,
                             "PodGroup huge with condition Unschedulable")
    assert unschedulable["message"] == (f"{MEMBERS}/{MEMBERS} tasks in gang unschedulable: pod group is not ready, "
                                        f"{MEMBERS} Pending, {MEMBERS} minAvailable; Pending: {MEMBERS} Unschedulable")
    hold(lambda: bound(group_pods(api, namespace, "huge")) == [], STABLE_SECONDS, "no pod of huge bound")
    assert status(api, namespace, "huge").get("phase") == "Pending"

    def quota_event() -> bool:
        events = api.list(resource_path("", "v1", "events", namespace))["items"]
        return any(e["involvedObject"].get("kind") == "PodGroup" and e["reason"] == "Unschedulable"
                   and e["message"] == "queue resource quota insufficient" for e in events)
    wait_for(quota_event, 30, 'PodGroup event Unschedulable "queue resource quota insufficient"')
