"""Jobs under the operator's `--gang-scheduler=volcano`, placed by the real Volcano scheduler.

As with the coscheduler: on a pool with room for one 5-pod job, one job runs whole and the other has
no pod running (its Pending condition names its PodGroup, never with Volcano's `Schedulable`) until
the first finishes. A gang its queue's capability holds back says so (`queue resource quota
insufficient`, which Volcano writes only in an event on the group). The job's
`schedulingPolicy` queue and priority class reach its PodGroup, and a TFJob written for Kubeflow's
operator with `--gang-scheduler-name=volcano` runs the same way here. Volcano is built from its Go
module, so these tests carry the `tools` marker (`make test-tools`).
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kube import ApiError, Kube, resource_path
from tests.support.kinds import both_kinds
from tests.support.operator import Operator

from ..conftest import TfJobs
from .conftest import GangPool
from .test_gang_jobs import MEMBERS, STABLE_SECONDS, gang_role, running
from .test_gang_jobs import pod_group as find_pod_group

pytestmark = pytest.mark.tools

GROUP, VERSION = "scheduling.volcano.sh", "v1beta1"
VOLCANO_FLAGS = ["--gang-scheduler=volcano"]


def pod_group(api: Kube, namespace: str, name: str) -> dict[str, Any] | None:
    return find_pod_group(api, namespace, name, GROUP, VERSION)


@pytest.fixture
def volcano_operator(tfjobs: TfJobs, volcano: Any, no_session_operator: None,
                     start_operator: Callable[..., Operator]) -> Operator:
    """An operator with Volcano as its gang scheduler, in place of the session's (`tfjobs` first: it
    may switch the cluster's CRDs, which restarts the session operator)."""
    return start_operator(VOLCANO_FLAGS)


@pytest.fixture
def queue_and_priority(api: Kube) -> Iterator[tuple[str, str]]:
    """A Volcano Queue and a PriorityClass of this test's own (both cluster-scoped; deleted after)."""
    suffix = uuid.uuid4().hex[:6]
    queue, priority = f"research-{suffix}", f"high-{suffix}"
    api.create(resource_path(GROUP, "v1beta1", "queues"), {
        "apiVersion": f"{GROUP}/v1beta1", "kind": "Queue", "metadata": {"name": queue},
        "spec": {"weight": 1, "reclaimable": True}})
    api.create(resource_path("scheduling.k8s.io", "v1", "priorityclasses"), {
        "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": priority},
        "value": 1000})
    yield queue, priority
    with contextlib.suppress(ApiError):
        api.delete(resource_path("scheduling.k8s.io", "v1", "priorityclasses", None, priority))
    with contextlib.suppress(ApiError):
        api.delete(resource_path(GROUP, "v1beta1", "queues", None, queue))


@pytest.fixture
def small_queue(api: Kube) -> Iterator[str]:
    """A Volcano Queue of this test's own with room for 2 CPUs (cluster-scoped; deleted after)."""
    queue = f"small-{uuid.uuid4().hex[:6]}"
    api.create(resource_path(GROUP, "v1beta1", "queues"), {
        "apiVersion": f"{GROUP}/v1beta1", "kind": "Queue", "metadata": {"name": queue},
        "spec": {"weight": 1, "reclaimable": False, "capability": {"cpu": "2", "memory": "8Gi"}}})
    yield queue
    with contextlib.suppress(ApiError):
        api.delete(resource_path(GROUP, "v1beta1", "queues", None, queue))


@both_kinds
def test_of_two_jobs_that_fit_once_volcano_runs_one_whole_and_the_other_after_it(
        tfjobs: TfJobs, volcano_operator: Operator, gang_pool: Callable[..., GangPool]) -> None:
    pool = gang_pool(cpus=7, nodes=1)  # room for one 5-pod job of 1-CPU pods, not two
    tfjobs.create("first", worker=gang_role(MEMBERS, pool))
    tfjobs.wait_pods("first", MEMBERS, timeout=120)
    tfjobs.create("second", worker=gang_role(MEMBERS, pool))

    pending = tfjobs.wait_condition("second", "Pending", timeout=120)
    assert "PodGroup second (volcano)" in pending["message"], pending
    deadline = time.monotonic() + STABLE_SECONDS
    while time.monotonic() < deadline:  # whole: not one of its pods runs while the first holds the room
        assert running(tfjobs, "second") == 0
        assert running(tfjobs, "first") == MEMBERS
        # never Volcano's own PodScheduled reason `Schedulable` for pods it has not placed
        assert pending_reason(tfjobs, "second") != "Schedulable"
        time.sleep(0.5)

    tfjobs.exit_pod(tfjobs.pod_names("first", "worker")[0], 0)
    tfjobs.wait_condition("first", "Succeeded", timeout=60)
    tfjobs.wait_pods("second", MEMBERS, timeout=180)
    pods = tfjobs.pods("second")
    assert {p["spec"]["schedulerName"] for p in pods} == {"volcano"}
    assert {p["metadata"]["annotations"]["scheduling.k8s.io/group-name"] for p in pods} == {"second"}
    tfjobs.wait_for(lambda: pod_group(tfjobs.api, tfjobs.namespace, "first") is None, 60,
                    "the finished job's PodGroup to be deleted")
    warnings = [e["reason"] for job in ("first", "second") for e in tfjobs.events(job) if e["type"] == "Warning"
                and "being created" in e["message"]]
    assert warnings == []  # a PodGroup being created is no reason to warn


def pending_reason(tfjobs: TfJobs, job: str) -> str | None:
    """The reason of the job's Pending condition while it is True (None otherwise)."""
    found = tfjobs.condition(job, "Pending")
    return str(found["reason"]) if found is not None and found["status"] == "True" else None


def test_a_gang_its_queues_quota_holds_back_says_so(
        tfjobs: TfJobs, volcano_operator: Operator, small_queue: str, gang_pool: Callable[..., GangPool]) -> None:
    pool = gang_pool(cpus=10, nodes=1)  # room on the nodes: only the queue's capability holds it back
    tfjobs.create("capped", worker=gang_role(MEMBERS, pool), schedulingPolicy={"queue": small_queue})
    tfjobs.wait_for(lambda: "queue resource quota insufficient" in (
        tfjobs.condition("capped", "Pending") or {}).get("message", ""), 120,
        "the job's Pending condition naming the queue's quota")
    pending = tfjobs.condition("capped", "Pending")
    assert pending is not None and pending["reason"] == "PodGroupPending", pending
    assert f"waits for volcano to admit its gang of {MEMBERS} pod(s): PodGroup capped (volcano) is Pending" in (
        pending["message"])
    assert tfjobs.pods("capped") == []
    assert (pod_group(tfjobs.api, tfjobs.namespace, "capped") or {})["spec"]["minResources"] == {
        "cpu": "5", "memory": "5Gi"}


def test_the_queue_and_priority_class_reach_the_pod_group(
        tfjobs: TfJobs, volcano_operator: Operator, queue_and_priority: tuple[str, str],
        gang_pool: Callable[..., GangPool]) -> None:
    queue, priority = queue_and_priority
    pool = gang_pool(cpus=10, nodes=1)
    tfjobs.create("ranked", worker=gang_role(2, pool), schedulingPolicy={"queue": queue, "priorityClass": priority})
    tfjobs.wait_pods("ranked", 2, timeout=120)
    group = pod_group(tfjobs.api, tfjobs.namespace, "ranked")
    assert group is not None
    assert group["spec"]["queue"] == queue and group["spec"]["priorityClassName"] == priority
    assert group["spec"]["minMember"] == 2
    assert group["status"]["phase"] in ("Inqueue", "Running")


def test_a_tfjob_written_for_kubeflow_with_volcano_runs_as_it_did_there(
        kubeflow_tfjobs: TfJobs, volcano: Any, no_session_operator: None,
        start_operator: Callable[..., Operator], gang_pool: Callable[..., GangPool]) -> None:
    start_operator(VOLCANO_FLAGS)
    pool = gang_pool(cpus=10, nodes=1)
    kubeflow_tfjobs.create("mnist", ps=gang_role(1, pool), worker=gang_role(3, pool),
                           schedulingPolicy={"minAvailable": 3, "queue": "default"})
    kubeflow_tfjobs.wait_pods("mnist", 4, timeout=120)
    group = pod_group(kubeflow_tfjobs.api, kubeflow_tfjobs.namespace, "mnist")
    assert group is not None
    assert group["spec"]["minMember"] == 3 and group["spec"]["queue"] == "default"
    assert group["metadata"]["ownerReferences"][0]["kind"] == "TFJob"
    tasks = {p["metadata"]["annotations"]["volcano.sh/task-spec"] for p in kubeflow_tfjobs.pods("mnist")}
    assert tasks == {"ps", "worker"}
    assert not [e for e in kubeflow_tfjobs.events("mnist") if e["reason"] == "IgnoredField"]
