"""The cluster takes a pod back from a job that needs all of its pods (restartScope All), on a real API
server with KWOK nodes: the Eviction API (what `kubectl drain` and Kueue-less preemption use), a
deletion by hand and a node lost without notice restart the whole group at once, and none of it counts
against backoffLimit."""

from __future__ import annotations

from typing import Any

from kube import resource_path
from tests.support.jobs import SIM_EXIT_AFTER, SIM_EXIT_CODE

RESTART_IN_PLACE = "sim.tensorflowjob.kubeflow.org/restart-in-place"


def uids(tfjobs: Any, job: str, count: int) -> dict[str, str]:
    return {p["metadata"]["name"]: p["metadata"]["uid"] for p in tfjobs.wait_pods(job, count)}


def evict(tfjobs: Any, pod: str) -> None:
    tfjobs.api.create(resource_path("", "v1", "pods", tfjobs.namespace, pod, "eviction"),
                      {"apiVersion": "policy/v1", "kind": "Eviction",
                       "metadata": {"name": pod, "namespace": tfjobs.namespace}})


def all_replaced(tfjobs: Any, job: str, before: dict[str, str]) -> bool:
    pods = tfjobs.pods(job, include_terminating=False)
    now = {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods if (p.get("status") or {}).get("phase") == "Running"}
    return set(now) == set(before) and all(now[name] != before[name] for name in before)


HOLD = "tests.tfjob-operator/hold"
"""A finalizer that keeps an evicted pod terminating until the test lets it go: KWOK deletes a pod the
moment its deletion is asked for, and the operator could otherwise see only its empty slot."""


def hold(tfjobs: Any, pod: str, finalizers: list[str]) -> None:
    tfjobs.api.patch(resource_path("", "v1", "pods", tfjobs.namespace, pod), {"metadata": {"finalizers": finalizers}})


def test_an_evicted_worker_restarts_every_pod_of_the_job_uncounted(tfjobs: Any) -> None:
    tfjobs.create("ev", ps=tfjobs.role(1), worker=tfjobs.role(2), restartScope="All")
    before = uids(tfjobs, "ev", 3)
    tfjobs.wait_condition("ev", "Running")
    hold(tfjobs, "ev-worker-1", [HOLD])
    try:
        evict(tfjobs, "ev-worker-1")
        event = tfjobs.wait_for(lambda: next((e for e in tfjobs.events("ev") if e["reason"] == "Disrupted"), None),
                                60, "a Disrupted event")
    finally:
        hold(tfjobs, "ev-worker-1", [])
    assert "ev-worker-1 (evicted)" in event["message"] and "not counted against backoffLimit" in event["message"]
    tfjobs.wait_for(lambda: all_replaced(tfjobs, "ev", before), 60, "every pod of the job to be replaced")
    tfjobs.wait_condition("ev", "Running")
    restarting = tfjobs.condition("ev", "Restarting")
    assert restarting["status"] == "False"
    assert tfjobs.status("ev")["restartCount"] == 0
    assert len([e for e in tfjobs.events("ev") if e["reason"] == "Disrupted"]) == 1


def test_a_worker_deleted_by_hand_restarts_every_pod_of_the_job_uncounted(tfjobs: Any) -> None:
    tfjobs.create("del", worker=tfjobs.role(3), restartScope="All", backoffLimit=0)
    before = uids(tfjobs, "del", 3)
    tfjobs.wait_condition("del", "Running")
    tfjobs.api.delete(resource_path("", "v1", "pods", tfjobs.namespace, "del-worker-2"))
    tfjobs.wait_for(lambda: all_replaced(tfjobs, "del", before), 60, "every pod of the job to be replaced")
    tfjobs.wait_condition("del", "Running")
    assert tfjobs.status("del")["restartCount"] == 0
    assert tfjobs.condition("del", "Failed") is None


def in_place_restarts(tfjobs: Any, pod: str) -> int:
    found = next((p for p in tfjobs.pods(pod.rsplit("-", 2)[0]) if p["metadata"]["name"] == pod), None)
    statuses = ((found or {}).get("status") or {}).get("containerStatuses") or []
    return sum(int(s.get("restartCount") or 0) for s in statuses)


def test_a_peer_restarted_by_a_node_lost_without_notice_is_not_counted(tfjobs: Any) -> None:
    tfjobs.create("lost", worker=tfjobs.role(2), restartScope="All", backoffLimit=0)
    before = uids(tfjobs, "lost", 2)
    tfjobs.wait_condition("lost", "Running")
    node = next(p["spec"]["nodeName"] for p in tfjobs.pods("lost") if p["metadata"]["name"] == "lost-worker-1")
    # A node lost without notice takes its processes at once: the peer's all-reduce fails and its kubelet
    # restarts it in place, before the API shows the node NotReady. Counted, that restart alone would
    # fail this job (backoffLimit 0).
    tfjobs.api.patch(resource_path("", "v1", "pods", tfjobs.namespace, "lost-worker-0"), {"metadata": {
        "annotations": {SIM_EXIT_CODE: "1", SIM_EXIT_AFTER: "0s", RESTART_IN_PLACE: "true"}}})
    tfjobs.wait_for(lambda: in_place_restarts(tfjobs, "lost-worker-0") >= 1, 60, "lost-worker-0 restarted in place")
    try:
        tfjobs.cluster.set_node_ready(node, False)
        event = tfjobs.wait_for(lambda: next((e for e in tfjobs.events("lost") if e["reason"] == "Disrupted"), None),
                                60, "a Disrupted event")
    finally:
        tfjobs.cluster.set_node_ready(node, True)
    assert "lost-worker-1 (" in event["message"] and "not counted against backoffLimit" in event["message"]
    tfjobs.wait_for(lambda: all_replaced(tfjobs, "lost", before), 90, "every pod of the job to be replaced")
    tfjobs.wait_condition("lost", "Running")
    assert tfjobs.status("lost")["restartCount"] == 0
    assert tfjobs.condition("lost", "Failed") is None
