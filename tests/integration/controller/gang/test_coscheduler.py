"""The real Coscheduling gang scheduler on the devcluster, without the operator.

What the operator will rely on when it asks for gang scheduling: pods that name the second
scheduler (`spec.schedulerName: scheduler-plugins-scheduler`) and a PodGroup (label
`scheduling.x-k8s.io/pod-group`) are bound all together or not at all; a group that does not fit
waits, whole, until room is made; the PodGroup controller reports the group's phase; and the
pending pods say why they wait (PodScheduled=False, reason Unschedulable, with the scheduler's
message), which the operator can surface as the job's Pending reason.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from devcluster.schedulerplugins import API_VERSION, POD_GROUP_LABEL, SCHEDULER_NAME, SchedulerPlugins
from kube import Kube, resource_path
from tests.support.polling import wait_for

from .conftest import GangPool

pytestmark = pytest.mark.tools  # the scheduler is built from its Go module (`make test-tools`)

GROUP, VERSION = API_VERSION.split("/")
EXIT_CODE = "sim.tensorflowjob.kubeflow.org/exit-code"
MEMBERS = 5
STABLE_SECONDS = 5  # how long a "nothing more gets scheduled" observation is held


def pods_path(namespace: str, name: str | None = None) -> str:
    return resource_path("", "v1", "pods", namespace, name)


def pod_groups_path(namespace: str, name: str | None = None) -> str:
    return resource_path(GROUP, VERSION, "podgroups", namespace, name)


def pod_group(name: str, min_member: int = MEMBERS, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": "PodGroup", "metadata": {"name": name},
            "spec": {"minMember": min_member, **spec}}


def member(name: str, group: str, pool: GangPool, cpu: str = "1") -> dict[str, Any]:
    """A pod of `group` for the gang scheduler, on `pool` only, requesting `cpu` CPUs."""
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {POD_GROUP_LABEL: group}},
        "spec": {"schedulerName": SCHEDULER_NAME, "restartPolicy": "Never", **pool.placement(),
                 "containers": [{"name": "tensorflow", "image": "tensorflow/tensorflow:2.21.0",
                                 "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]},
    }


def group_pods(api: Kube, namespace: str, group: str) -> list[dict[str, Any]]:
    return api.list(pods_path(namespace), labelSelector=f"{POD_GROUP_LABEL}={group}")["items"]


def bound(pods: list[dict[str, Any]]) -> list[str]:
    return sorted(p["metadata"]["name"] for p in pods if p["spec"].get("nodeName"))


def running(pods: list[dict[str, Any]]) -> list[str]:
    return sorted(p["metadata"]["name"] for p in pods if p.get("status", {}).get("phase") == "Running")


def unschedulable(pod: dict[str, Any]) -> dict[str, Any] | None:
    """The pod's PodScheduled condition when it says Unschedulable."""
    for condition in pod.get("status", {}).get("conditions") or []:
        if condition["type"] == "PodScheduled" and condition["status"] == "False" \
                and condition.get("reason") == "Unschedulable":
            return condition
    return None


def phase(api: Kube, namespace: str, group: str) -> dict[str, Any]:
    return api.get(pod_groups_path(namespace, group)).get("status") or {}


def create_group(api: Kube, namespace: str, pool: GangPool, group: str, members: int = MEMBERS,
                 min_member: int = MEMBERS, **spec: Any) -> None:
    api.create(pod_groups_path(namespace), pod_group(group, min_member, **spec))
    for i in range(members):
        api.create(pods_path(namespace), member(f"{group}-{i}", group, pool))


def hold(check: Callable[[], object], seconds: float, what: str) -> None:
    """Assert that `check()` stays truthy for `seconds` (it is polled, not sampled once)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert check(), f"no longer true: {what}"
        time.sleep(0.25)


def test_of_two_groups_that_fit_once_one_runs_whole_and_the_other_waits_whole(
        scheduler_plugins: SchedulerPlugins, api: Kube, namespace: str, gang_pool: Callable[..., GangPool]) -> None:
    # Two nodes of 3 CPUs: room for one group of five 1-CPU pods, not two; the spare CPU must not
    # let a single pod of the other group start.
    pool = gang_pool(cpus=3, nodes=2)
    for group in ("alpha", "beta"):
        create_group(api, namespace, pool, group)

    def one_group_runs() -> tuple[str, str] | None:
        counts = {g: running(group_pods(api, namespace, g)) for g in ("alpha", "beta")}
        for winner, loser in (("alpha", "beta"), ("beta", "alpha")):
            if len(counts[winner]) == MEMBERS:
                return winner, loser
        return None

    winner, loser = wait_for(one_group_runs, 60, "all five pods of one group Running")
    assert {p["spec"]["nodeName"] for p in group_pods(api, namespace, winner)} == set(pool.nodes)
    # The other group gets nothing, not even the spare CPU, and keeps waiting whole.
    hold(lambda: bound(group_pods(api, namespace, loser)) == [], STABLE_SECONDS, f"no pod of {loser} bound")
    waiting = wait_for(lambda: all(unschedulable(p) for p in group_pods(api, namespace, loser))
                       and group_pods(api, namespace, loser), 30, f"every pod of {loser} PodScheduled=False Unschedulable")
    for pod in waiting:
        condition = unschedulable(pod)
        assert condition is not None and condition["message"], pod["status"]
    # The controller: the winner Running (all five running), the loser Scheduling (enough pods, none running).
    wait_for(lambda: phase(api, namespace, winner).get("phase") == "Running"
             and phase(api, namespace, winner).get("running") == MEMBERS, 30, f"PodGroup {winner} Running")
    wait_for(lambda: phase(api, namespace, loser).get("phase") == "Scheduling", 30, f"PodGroup {loser} Scheduling")
    assert not phase(api, namespace, loser).get("running")

    # Room is made: the waiting group starts, whole, on the same nodes.
    for pod in group_pods(api, namespace, winner):
        api.delete(pods_path(namespace, pod["metadata"]["name"]), grace_seconds=0)
    wait_for(lambda: len(running(group_pods(api, namespace, loser))) == MEMBERS, 60,
             f"all five pods of {loser} Running after {winner}'s pods were deleted")
    wait_for(lambda: phase(api, namespace, loser).get("phase") == "Running", 30, f"PodGroup {loser} Running")


def test_a_group_short_of_min_member_is_not_scheduled_at_all(
        scheduler_plugins: SchedulerPlugins, api: Kube, namespace: str, gang_pool: Callable[..., GangPool]) -> None:
    pool = gang_pool(cpus=8, nodes=2)  # plenty of room: only the missing members hold the group back
    create_group(api, namespace, pool, "short", members=3, min_member=MEMBERS)
    pods = wait_for(lambda: all(unschedulable(p) for p in group_pods(api, namespace, "short"))
                    and group_pods(api, namespace, "short"), 30, "the three pods PodScheduled=False Unschedulable")
    messages = {unschedulable(p)["message"] for p in pods}  # type: ignore[index]
    assert all("cannot find enough sibling pods" in m and "minMember of group: 5" in m for m in messages), messages
    hold(lambda: bound(group_pods(api, namespace, "short")) == [], STABLE_SECONDS, "no pod of the short group bound")
    assert phase(api, namespace, "short").get("phase") == "Pending"

    # The last two members arrive: the whole group is placed.
    for i in (3, 4):
        api.create(pods_path(namespace), member(f"short-{i}", "short", pool))
    wait_for(lambda: len(running(group_pods(api, namespace, "short"))) == MEMBERS, 60, "all five pods Running")


def test_the_controller_follows_a_group_from_pending_to_finished(
        scheduler_plugins: SchedulerPlugins, api: Kube, namespace: str, gang_pool: Callable[..., GangPool]) -> None:
    pool = gang_pool(cpus=5, nodes=1)
    api.create(pod_groups_path(namespace), pod_group("steps", scheduleTimeoutSeconds=30))
    wait_for(lambda: phase(api, namespace, "steps").get("phase") == "Pending", 30, "phase Pending (no pods yet)")
    for i in range(MEMBERS):
        api.create(pods_path(namespace), member(f"steps-{i}", "steps", pool))
    wait_for(lambda: phase(api, namespace, "steps").get("phase") == "Running"
             and phase(api, namespace, "steps").get("running") == MEMBERS, 60, "phase Running, running 5")
    for pod in group_pods(api, namespace, "steps"):
        api.patch(pods_path(namespace, pod["metadata"]["name"]), {"metadata": {"annotations": {EXIT_CODE: "0"}}})
    wait_for(lambda: phase(api, namespace, "steps").get("phase") == "Finished"
             and phase(api, namespace, "steps").get("succeeded") == MEMBERS, 60, "phase Finished, succeeded 5")
