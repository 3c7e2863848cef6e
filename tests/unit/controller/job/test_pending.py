"""Why a job is not running: the scheduler's and the kubelet's reasons on its `Pending` condition, read
from what the pod cache keeps (docs/production.md)."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from controller.job import pending, podcache
from controller.job.builders import build_service
from controller.job.kinds import TENSORFLOWJOB
from controller.job.plan import PlanInputs, plan_job
from tests.support.jobs import make_job, pods_for

NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)
NO_PVC = "0/4 nodes are available: persistentvolumeclaim \"mnist-data\" not found. preemption: not eligible."
NO_GPU = "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."


def unschedulable(pod: dict[str, Any], message: str = NO_PVC, reason: str = "Unschedulable") -> dict[str, Any]:
    pod["spec"].pop("nodeName", None)
    pod["status"] = {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": reason, "message": message,
         "lastProbeTime": None, "lastTransitionTime": "2026-11-29T11:59:00Z"}]}
    return pod


def waiting(pod: dict[str, Any], reason: str, message: str = "", key: str = "containerStatuses") -> dict[str, Any]:
    pod["status"] = {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "True"}],
                     key: [{"name": "tensorflow", "restartCount": 0, "ready": False, "image": "tf",
                            "state": {"waiting": {"reason": reason, "message": message}}}]}
    return pod


def by_name(pods: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {p["metadata"]["name"]: p for p in pods}


def plan(job: dict[str, Any], pods: list[dict[str, Any]], now: datetime = NOW) -> Any:
    return plan_job(PlanInputs(job, pods, build_service(job, TENSORFLOWJOB), now=now, kind=TENSORFLOWJOB))


def settled(job: dict[str, Any], result: Any) -> dict[str, Any]:
    updated = copy.deepcopy(job)
    updated["status"] = result.status
    return updated


def condition(result: Any, kind: str = "Pending") -> dict[str, Any] | None:
    return next((c for c in result.status["conditions"] if c["type"] == kind), None)


# ---- one pod ---------------------------------------------------------------------------------------


def test_a_pod_the_scheduler_cannot_place_has_its_reason_and_message() -> None:
    pod = unschedulable(pods_for(make_job(worker=1))[0])
    assert pending.pod_problem(pod) == pending.PodProblem("j-worker-0", "Unschedulable", NO_PVC, scheduling=True)


def test_a_pod_volcano_has_not_placed_reads_unschedulable_not_its_schedulable_reason() -> None:
    pod = unschedulable(pods_for(make_job(worker=1))[0], "all nodes are unavailable", reason="Schedulable")
    assert pending.pod_problem(pod).reason == "Unschedulable"
    assert pending.summarize([pod]).message.startswith("1 pod(s) cannot be scheduled (Unschedulable): j-worker-0")


@pytest.mark.parametrize("reason", ["ImagePullBackOff", "CreateContainerConfigError", "InvalidImageName",
                                    "CreateContainerError"])
def test_a_container_the_kubelet_cannot_start_has_its_waiting_reason(reason: str) -> None:
    pod = waiting(pods_for(make_job(worker=1))[0], reason, "details")
    assert pending.pod_problem(pod) == pending.PodProblem("j-worker-0", reason, "container tensorflow: details",
                                                          scheduling=False)


def test_err_image_pull_reads_as_image_pull_back_off_so_the_reason_does_not_flip() -> None:
    pod = waiting(pods_for(make_job(worker=1))[0], "ErrImagePull", "manifest unknown")
    assert pending.pod_problem(pod).reason == "ImagePullBackOff"


def test_an_init_container_stuck_is_a_problem_of_the_pod() -> None:
    pod = waiting(pods_for(make_job(worker=1))[0], "CrashLoopBackOff", "back-off 5m0s", key="initContainerStatuses")
    assert pending.pod_problem(pod).reason == "CrashLoopBackOff"


@pytest.mark.parametrize("reason", ["ContainerCreating", "PodInitializing"])
def test_a_pod_on_its_way_is_not_a_problem(reason: str) -> None:
    assert pending.pod_problem(waiting(pods_for(make_job(worker=1))[0], reason)) is None


def test_a_running_pod_is_not_a_problem() -> None:
    assert pending.pod_problem(pods_for(make_job(worker=1))[0]) is None


# ---- what the pod cache keeps -------------------------------------------------------------------------


def test_the_cache_keeps_an_unschedulable_condition_with_its_message() -> None:
    full = unschedulable(pods_for(make_job(worker=1))[0])
    projected = podcache.project(copy.deepcopy(full))
    assert pending.pod_problem(projected) == pending.pod_problem(full)


def test_the_cache_drops_a_true_pod_scheduled_condition() -> None:
    pod = pods_for(make_job(worker=1))[0]
    pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "True", "lastTransitionTime": "t"}]
    assert "conditions" not in podcache.project(pod)["status"]


def test_the_cache_keeps_only_init_containers_waiting_for_a_problem() -> None:
    pod = waiting(pods_for(make_job(worker=1))[0], "ImagePullBackOff", "back-off", key="initContainerStatuses")
    pod["status"]["initContainerStatuses"].append(
        {"name": "done", "state": {"terminated": {"exitCode": 0}}, "image": "x", "imageID": "sha", "ready": True})
    kept = podcache.project(pod)["status"]["initContainerStatuses"]
    assert kept == [{"name": "tensorflow", "state": {"waiting": {"reason": "ImagePullBackOff", "message": "back-off"}}}]


def test_a_scheduled_healthy_pod_costs_the_cache_nothing_more() -> None:
    pod = pods_for(make_job(worker=1))[0]
    before = podcache.project(copy.deepcopy(pod))
    pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "True"}]
    pod["status"]["initContainerStatuses"] = [{"name": "init", "state": {"terminated": {"exitCode": 0}}}]
    assert json.dumps(podcache.project(pod)) == json.dumps(before)


def test_being_placed_after_being_unschedulable_wakes_the_job() -> None:
    old = podcache.project(unschedulable(pods_for(make_job(worker=1))[0]))
    placed = pods_for(make_job(worker=1), phase="Pending")[0]
    placed["status"]["conditions"] = [{"type": "PodScheduled", "status": "True"}]
    assert not podcache.only_bound(old, podcache.project(placed))


# ---- the job's message -----------------------------------------------------------------------------------


def test_the_message_names_the_pods_and_the_schedulers_words() -> None:
    job = make_job(chief=1, worker=2)
    pods = by_name(pods_for(job))
    summary = pending.summarize([unschedulable(pods["j-worker-1"]), unschedulable(pods["j-chief-0"]),
                                 pods["j-worker-0"]])
    assert summary == pending.Pending(
        "Unschedulable", f"2 pod(s) cannot be scheduled (Unschedulable): j-chief-0, j-worker-1: {NO_PVC}",
        ("j-chief-0", "j-worker-1"))


def test_other_problems_are_counted_after_the_first() -> None:
    pods = by_name(pods_for(make_job(chief=1, worker=2)))
    summary = pending.summarize([unschedulable(pods["j-worker-0"], NO_GPU), waiting(pods["j-chief-0"],
                                 "ImagePullBackOff", "Back-off pulling image"), waiting(pods["j-worker-1"],
                                 "ImagePullBackOff", "Back-off pulling image")])
    assert summary.reason == "ImagePullBackOff"
    assert summary.message == ("2 pod(s) cannot start (ImagePullBackOff): j-chief-0, j-worker-1: container "
                               "tensorflow: Back-off pulling image; also Unschedulable (1 pod(s))")


def test_a_long_list_of_pods_is_cut_short() -> None:
    pods = [unschedulable(p, NO_GPU) for p in pods_for(make_job(worker=8))]
    assert "j-worker-4 and 3 more:" in pending.summarize(pods).message


# ---- the Pending condition ---------------------------------------------------------------------------------


def test_a_job_whose_pod_cannot_be_scheduled_is_pending_with_the_reason() -> None:
    job = make_job(worker=2)
    pods = pods_for(job)
    unschedulable(pods[1])
    result = plan(job, pods)
    found = condition(result)
    assert (found["status"], found["reason"]) == ("True", "Unschedulable")
    assert "j-worker-1" in found["message"] and "persistentvolumeclaim" in found["message"]
    assert result.status["state"] == "Pending"


def test_becoming_pending_posts_one_warning_event() -> None:
    job = make_job(worker=1)
    pods = [unschedulable(pods_for(job)[0])]
    first = plan(job, pods)
    assert [(e.type, e.reason) for e in first.events if e.reason == "Unschedulable"] == [("Warning", "Unschedulable")]
    again = plan(settled(job, first), pods, NOW + timedelta(seconds=30))
    assert [e for e in again.events if e.reason == "Unschedulable"] == []
    assert again.status == first.status


def test_a_new_scheduler_message_updates_the_condition_without_another_event() -> None:
    job = make_job(worker=1)
    first = plan(job, [unschedulable(pods_for(job)[0], NO_PVC)])
    second = plan(settled(job, first), [unschedulable(pods_for(job)[0], NO_GPU)], NOW + timedelta(seconds=30))
    assert NO_GPU in condition(second)["message"]
    assert [e for e in second.events if e.reason == "Unschedulable"] == []


def test_the_condition_clears_when_the_pods_run() -> None:
    job = make_job(worker=1)
    first = plan(job, [unschedulable(pods_for(job)[0])])
    resolved = plan(settled(job, first), pods_for(job), NOW + timedelta(seconds=30))
    found = condition(resolved)
    assert (found["status"], found["reason"]) == ("False", "Resolved")
    assert resolved.status["state"] == "Running"


def test_the_condition_clears_when_the_pod_is_placed_and_starting() -> None:
    job = make_job(worker=1)
    first = plan(job, [unschedulable(pods_for(job)[0])])
    starting = waiting(pods_for(job)[0], "ContainerCreating")
    resolved = plan(settled(job, first), [starting], NOW + timedelta(seconds=30))
    assert condition(resolved)["status"] == "False"
    assert resolved.status["state"] == "Created"


def test_a_job_that_never_had_a_problem_carries_no_pending_condition() -> None:
    job = make_job(worker=2)
    assert condition(plan(job, pods_for(job, phase="Pending"))) is None
    assert condition(plan(job, pods_for(job))) is None


def test_a_suspended_job_is_not_pending() -> None:
    job = make_job(worker=1)
    first = plan(job, [unschedulable(pods_for(job)[0])])
    suspended = settled(job, first)
    suspended["spec"]["suspend"] = True
    result = plan(suspended, [unschedulable(pods_for(job)[0])], NOW + timedelta(seconds=5))
    assert condition(result)["status"] == "False"
    assert result.status["state"] == "Suspended"


def test_a_running_job_whose_replacement_pod_cannot_be_placed_stays_running_and_says_why() -> None:
    job = make_job(worker=2)
    running = settled(job, plan(job, pods_for(job)))
    pods = pods_for(job)
    unschedulable(pods[0], NO_GPU)
    result = plan(running, pods, NOW + timedelta(seconds=30))
    assert result.status["state"] == "Running"
    assert condition(result)["reason"] == "Unschedulable"
