"""Unit tests of `tfjobs.jobview`: a job and its pods as a person reads them (plain dicts)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.jobs import make_job, pods_for
from tfjobs.jobview import (
    job_state,
    pod_problem,
    pod_status,
    pod_task,
    pods_by_slot,
    roles,
    slot_name,
    state_detail,
    tf_container,
)

PVC_MESSAGE = ('0/4 nodes are available: persistentvolumeclaim "training-data" not found. preemption: 0/4 nodes are '
               'available: 4 Preemption is not helpful for scheduling.')


def with_status(pod: dict[str, Any], **status: Any) -> dict[str, Any]:
    pod["status"] = status
    return pod


def test_the_state_is_the_status_state_or_the_first_true_condition() -> None:
    assert job_state({"status": {"state": "Running"}}) == "Running"
    assert job_state({"status": {"conditions": [{"type": "Created", "status": "True"},
                                                {"type": "Failed", "status": "True"}]}}) == "Failed"
    assert job_state({}) == ""


def test_the_state_detail_is_the_reason_and_message_of_its_condition() -> None:
    job = {"status": {"state": "Failed", "conditions": [
        {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded", "message": "too many restarts"}]}}

    assert state_detail(job) == "BackoffLimitExceeded: too many restarts"


def test_roles_are_listed_in_the_operators_order_with_their_replicas() -> None:
    assert roles(make_job(worker=3, chief=1, ps=2)) == {"chief": 1, "ps": 2, "worker": 3}


def test_the_task_comes_from_the_tensorflow_containers_tf_config() -> None:
    pods = pods_for(make_job(chief=1, worker=2))

    assert [pod_task(p) for p in pods] == ["chief:0", "worker:0", "worker:1"]
    assert pod_task({"spec": {"containers": [{"name": "main"}]}}) == ""


def test_the_tensorflow_container_is_the_one_named_so_else_the_first() -> None:
    assert tf_container({"spec": {"containers": [{"name": "side"}, {"name": "tensorflow"}]}}) == "tensorflow"
    assert tf_container({"spec": {"containers": [{"name": "main"}, {"name": "side"}]}}) == "main"
    assert slot_name("worker", 1) == "worker-1"


@pytest.mark.parametrize(("status", "metadata", "expected"), [
    ({"phase": "Pending"}, {}, "Pending"),
    ({"phase": "Pending", "containerStatuses": [{"name": "t", "state": {"waiting": {"reason": "ImagePullBackOff"}}}]},
     {}, "ImagePullBackOff"),
    ({"phase": "Running"}, {}, "Running"),
    ({"phase": "Succeeded", "containerStatuses": [{"name": "t", "state": {"terminated": {"exitCode": 0}}}]}, {},
     "Completed"),
    ({"phase": "Failed", "containerStatuses": [{"name": "t", "state": {"terminated": {"exitCode": 137,
                                                                                         "reason": "OOMKilled"}}}]},
     {}, "OOMKilled"),
    ({"phase": "Failed", "reason": "Evicted"}, {}, "Evicted"),
    ({"phase": "Running"}, {"deletionTimestamp": "2030-01-01T00:00:00Z"}, "Terminating"),
])
def test_a_pods_status_reads_like_kubectls(status: dict[str, Any], metadata: dict[str, Any], expected: str) -> None:
    pod = {"metadata": {"name": "p", **metadata}, "spec": {}, "status": status}
    assert pod_status(pod) == expected


def test_a_pending_pod_gives_the_schedulers_reason() -> None:
    pod = with_status(pods_for(make_job(worker=1))[0], phase="Pending", conditions=[
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": PVC_MESSAGE}])

    assert pod_problem(pod) == f"Unschedulable: {PVC_MESSAGE}"


def test_a_waiting_container_gives_the_kubelets_reason_and_message() -> None:
    pod = with_status(pods_for(make_job(worker=1))[0], phase="Pending", containerStatuses=[
        {"name": "tensorflow", "state": {"waiting": {"reason": "ErrImagePull", "message": "manifest unknown"}}}])

    assert pod_problem(pod) == "container tensorflow: ErrImagePull: manifest unknown"


def test_a_failed_container_gives_its_exit_code() -> None:
    pod = with_status(pods_for(make_job(worker=1))[0], phase="Failed", containerStatuses=[
        {"name": "tensorflow", "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}])

    assert pod_problem(pod) == "container tensorflow: exited with code 1 (Error)"


def test_a_restarted_container_gives_its_last_exit() -> None:
    pod = with_status(pods_for(make_job(worker=1))[0], phase="Running", containerStatuses=[
        {"name": "tensorflow", "restartCount": 3, "state": {"running": {}},
         "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}])

    assert pod_problem(pod) == "container tensorflow: restarted 3x, last exit code 137 (OOMKilled)"


def test_an_evicted_pod_gives_the_eviction() -> None:
    pod = with_status(pods_for(make_job(worker=1))[0], phase="Failed", reason="Evicted",
                      message="The node was low on resource: memory.")

    assert pod_problem(pod) == "Evicted: The node was low on resource: memory."


def test_a_running_pod_has_no_problem() -> None:
    assert pod_problem(pods_for(make_job(worker=1))[0]) == ""


def test_pods_are_grouped_by_slot_and_strays_left_out() -> None:
    pods = pods_for(make_job(worker=2))
    stray = {"metadata": {"name": "x", "labels": {}}, "spec": {}, "status": {}}

    grouped = pods_by_slot([*pods, stray])

    assert sorted(grouped) == [("worker", 0), ("worker", 1)]
