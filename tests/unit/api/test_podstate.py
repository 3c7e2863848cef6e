"""Why a pod is not running (`tfjob_api.podstate.why_not_running`), and the two ways it is worded: the job's
`Pending` condition (`controller.job.pending`) and `kubectl tfjob describe` (`tfjobs.jobview`)."""

from __future__ import annotations

from typing import Any

import pytest

from controller.job import pending
from tests.support.jobs import make_job, pods_for
from tfjob_api.podstate import Obstacle, why_not_running
from tfjobs import jobview

NO_PVC = 'persistentvolumeclaim "data" not found'


def a_pod(**status: Any) -> dict[str, Any]:
    pod = pods_for(make_job(worker=1))[0]
    pod["status"] = status
    return pod


def unscheduled(reason: str = "Unschedulable", message: str = NO_PVC) -> dict[str, Any]:
    return {"type": "PodScheduled", "status": "False", "reason": reason, "message": message}


def waiting(name: str, reason: str, message: str = "") -> dict[str, Any]:
    return {"name": name, "restartCount": 0, "state": {"waiting": {"reason": reason, "message": message}}}


def test_an_unscheduled_pending_pod_is_held_back_by_the_scheduler() -> None:
    pod = a_pod(phase="Pending", conditions=[unscheduled()])

    assert why_not_running(pod) == [Obstacle("Unschedulable", NO_PVC, scheduling=True)]


def test_the_scheduler_comes_first_then_init_containers_then_containers() -> None:
    pod = a_pod(phase="Pending", conditions=[unscheduled("SchedulingGated", "")],
                initContainerStatuses=[waiting("fetch", "CrashLoopBackOff", "back-off 10s")],
                containerStatuses=[waiting("tensorflow", "ImagePullBackOff")])

    assert why_not_running(pod) == [Obstacle("SchedulingGated", "", scheduling=True),
                                    Obstacle("CrashLoopBackOff", "back-off 10s", container="fetch"),
                                    Obstacle("ImagePullBackOff", "", container="tensorflow")]


@pytest.mark.parametrize("reason", ["", "ContainerCreating", "PodInitializing"])
def test_a_container_on_its_way_is_no_obstacle(reason: str) -> None:
    assert why_not_running(a_pod(phase="Pending", containerStatuses=[waiting("tensorflow", reason)])) == []


def test_a_running_pod_reports_no_scheduling_obstacle_but_a_crash_looping_container() -> None:
    pod = a_pod(phase="Running", conditions=[unscheduled()],
                containerStatuses=[waiting("sidecar", "CrashLoopBackOff")])

    assert why_not_running(pod) == [Obstacle("CrashLoopBackOff", "", container="sidecar")]


@pytest.mark.parametrize("pod", [
    a_pod(phase="Pending", conditions=[unscheduled()]),
    a_pod(phase="Pending", containerStatuses=[waiting("tensorflow", "CreateContainerConfigError",
                                                      'secret "token" not found')]),
    a_pod(phase="Pending", initContainerStatuses=[waiting("fetch", "ImagePullBackOff", "manifest unknown")]),
], ids=["scheduler", "container", "init container"])
def test_the_pending_condition_and_describe_name_the_same_first_obstacle(pod: dict[str, Any]) -> None:
    first = why_not_running(pod)[0]
    condition = pending.pod_problem(pod)

    assert condition is not None and condition.reason == first.reason
    assert first.message in condition.detail
    assert jobview.pod_problem(pod).startswith(
        f"{first.reason}: {first.message}" if first.scheduling else f"container {first.container}: {first.reason}")
