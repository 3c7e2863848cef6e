"""What the pod cache keeps of a pod (`podcache.project`) is enough for every predicate of `tfjob_api.podstate`."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from controller.job import podcache
from controller.job.builders import build_pods
from controller.job.kinds import TENSORFLOWJOB
from tests.support.jobs import container, role, tfjob
from tfjob_api import podstate
from tfjob_api.defaults import apply_defaults

PREDICATES = [podstate.slot, podstate.uid, podstate.name, podstate.phase, podstate.is_terminating,
              podstate.is_active, podstate.cluster_hash, podstate.is_disrupted,
              podstate.exit_code, podstate.container_restarts, podstate.node_name]


def a_job() -> dict[str, Any]:
    tensorflow = container(env=[{"name": "A", "value": "x" * 2000}],
                           volumeMounts=[{"name": "data", "mountPath": "/data"}])
    worker = role(2, containers=[container("s", name="sidecar"), tensorflow],
                  volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "pvc"}}])
    return apply_defaults(tfjob("j", {"worker": worker}, namespace="ns", uid="job-uid"))


def a_cached_pod(status: dict[str, Any], deleting: bool = False) -> dict[str, Any]:
    pod = build_pods(a_job(), "", (), TENSORFLOWJOB)[1]
    pod["metadata"].update(uid="pod-uid", resourceVersion="7", managedFields=[{"manager": "kubectl"}])
    if deleting:
        pod["metadata"]["deletionTimestamp"] = "2026-11-29T12:00:00Z"
    pod["spec"]["nodeName"] = "node-1"
    pod["status"] = status
    return pod


TERMINATED = {"terminated": {"exitCode": 137, "reason": "OOMKilled", "startedAt": "2026-11-29T11:00:00Z"}}
STATUSES = {
    "pending": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "True",
                                                    "lastTransitionTime": "2026-11-29T11:00:00Z"}]},
    "running after a restart": {
        "phase": "Running", "startTime": "2026-11-29T11:00:00Z", "podIP": "10.0.0.1",
        "containerStatuses": [
            {"name": "sidecar", "restartCount": 0, "state": {"running": {}}, "image": "s", "ready": True},
            {"name": "tensorflow", "restartCount": 2, "state": {"running": {}}, "lastState": TERMINATED,
             "image": "tf", "imageID": "sha256:abc", "containerID": "c://1", "ready": True, "started": True}]},
    "failed": {"phase": "Failed", "containerStatuses": [
        {"name": "tensorflow", "restartCount": 0, "state": TERMINATED, "image": "tf"}]},
    "disrupted": {"phase": "Running", "conditions": [
        {"type": "DisruptionTarget", "status": "True", "reason": "DeletionByTaintManager", "message": "m"}]},
    "evicted": {"phase": "Failed", "reason": "Evicted", "message": "The node was low on resource: memory."},
}


@pytest.mark.parametrize("deleting", [False, True])
@pytest.mark.parametrize("situation", sorted(STATUSES))
def test_a_projected_pod_reads_exactly_like_the_full_pod(situation: str, deleting: bool) -> None:
    full = a_cached_pod(STATUSES[situation], deleting)
    projected = podcache.project(copy.deepcopy(full))
    for predicate in PREDICATES:
        assert predicate(projected) == predicate(full), predicate.__name__


def test_projection_drops_the_spec_the_controller_never_reads() -> None:
    full = a_cached_pod(STATUSES["running after a restart"])
    projected = podcache.project(copy.deepcopy(full))
    assert projected["spec"] == {"containers": [{"name": "sidecar"}, {"name": "tensorflow"}], "nodeName": "node-1"}
    assert "managedFields" not in projected["metadata"]
    assert len(json.dumps(projected)) < len(json.dumps(full)) / 3


def test_projections_of_decoded_pods_share_their_repeated_strings() -> None:
    # Decoded separately (as two watch events are), so nothing is shared to begin with.
    first, second = (json.loads(json.dumps(a_cached_pod(STATUSES["pending"]))) for _ in range(2))
    a, b = podcache.project(first), podcache.project(second)
    assert a == b
    label = "tensorflowjob.kubeflow.org/replica-type"
    key_a = next(k for k in a["metadata"]["labels"] if k == label)
    key_b = next(k for k in b["metadata"]["labels"] if k == label)
    assert key_a is key_b
    assert a["metadata"]["labels"][label] is b["metadata"]["labels"][label]
    assert a["metadata"]["namespace"] is b["metadata"]["namespace"]


def test_update_of_an_unkept_field_leaves_the_projection_unchanged_but_a_new_phase_does_not() -> None:
    old = podcache.project(a_cached_pod(STATUSES["pending"]))
    scheduled = a_cached_pod({**STATUSES["pending"], "qosClass": "BestEffort"})
    scheduled["metadata"]["resourceVersion"] = "8"
    assert podcache.same_projection(old, podcache.project(scheduled))
    started = a_cached_pod(STATUSES["running after a restart"])
    assert not podcache.same_projection(old, podcache.project(started))
    assert not podcache.is_urgent_change(old, podcache.project(started))
    assert podcache.is_urgent_change(old, podcache.project(a_cached_pod(STATUSES["failed"])))
    assert podcache.is_urgent_change(old, podcache.project(a_cached_pod(STATUSES["pending"], deleting=True)))


def projected(status: dict[str, Any], name: str = "j-worker-1", resource_version: str = "7") -> dict[str, Any]:
    pod = podcache.project(a_cached_pod(status))
    return {**pod, "metadata": {**pod["metadata"], "name": name, "resourceVersion": resource_version}}


RUNNING = {"phase": "Running", "containerStatuses": [{"name": "tensorflow", "restartCount": 0,
                                                       "state": {"running": {}}}]}
UNSCHEDULABLE = {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
                                                     "reason": "Unschedulable", "message": "no node"}]}


def test_a_pod_starting_waits_for_its_siblings_only_while_one_of_them_is_still_pending() -> None:
    pending, started = projected(STATUSES["pending"]), projected(RUNNING, resource_version="8")
    sibling_pending = projected(STATUSES["pending"], name="j-worker-0")
    sibling_running = projected(RUNNING, name="j-worker-0")
    assert podcache.changes_nothing_yet(pending, started, [sibling_pending, started])
    assert not podcache.changes_nothing_yet(pending, started, [sibling_running, started])  # the last one: now
    assert not podcache.changes_nothing_yet(pending, started, [started])


def test_a_pending_pod_moving_along_waits_but_one_with_a_problem_or_a_new_phase_does_not() -> None:
    pending = projected(STATUSES["pending"])
    creating = projected({"phase": "Pending", "containerStatuses": [
        {"name": "tensorflow", "restartCount": 0, "state": {"waiting": {"reason": "ContainerCreating"}}}]},
        resource_version="8")
    assert podcache.changes_nothing_yet(pending, creating, [])
    assert not podcache.changes_nothing_yet(pending, projected(UNSCHEDULABLE, resource_version="8"), [])
    assert not podcache.changes_nothing_yet(projected(UNSCHEDULABLE), projected(RUNNING, resource_version="8"),
                                           [projected(STATUSES["pending"], name="j-worker-0")])
    assert not podcache.changes_nothing_yet(pending, projected(STATUSES["failed"], resource_version="8"), [])
    relabelled = {**creating, "metadata": {**creating["metadata"], "labels": {"x": "y"}}}
    assert not podcache.changes_nothing_yet(pending, relabelled, [])
