"""A container restarted by its stall rule's liveness probe counts like any retried failure, and the job
says "Stalled" where the pod's status lets the operator tell (docs/production.md)."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

from controller.job.builders import build_service
from controller.job.kinds import TENSORFLOWJOB
from controller.job.plan import PlanInputs, plan_job
from tests.support.jobs import make_job, pods_for
from tfjob_api.timeutil import format_time

NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)
JUST_NOW = format_time(NOW - timedelta(seconds=3))
LONG_AGO = format_time(NOW - timedelta(hours=1))


def stall_job(policy: str = "OnFailure", **spec: Any) -> dict[str, Any]:
    job = make_job(worker=(2, policy), **spec)
    job["spec"]["worker"]["stall"] = {"timeoutSeconds": 600, "startupSeconds": 600, "heartbeat": "file"}
    return job


def restarted_in_place(pod: dict[str, Any], restarts: int, exit_code: int, finished: str = JUST_NOW,
                       reason: str = "Error") -> None:
    pod["status"]["containerStatuses"] = [{
        "name": "tensorflow", "restartCount": restarts, "state": {"running": {"startedAt": finished}},
        "lastState": {"terminated": {"exitCode": exit_code, "reason": reason, "finishedAt": finished}}}]


def failed(pod: dict[str, Any], exit_code: int, reason: str = "Error") -> None:
    pod["status"] = {"phase": "Failed", "containerStatuses": [{
        "name": "tensorflow", "restartCount": 0,
        "state": {"terminated": {"exitCode": exit_code, "reason": reason, "finishedAt": JUST_NOW}}}]}


def plan(job: dict[str, Any], pods: list[dict[str, Any]]) -> Any:
    return plan_job(PlanInputs(job, pods, build_service(job, TENSORFLOWJOB), now=NOW, kind=TENSORFLOWJOB))


def condition(result: Any, kind: str) -> dict[str, Any]:
    return next(c for c in result.status["conditions"] if c["type"] == kind)


def events(result: Any, reason: str) -> list[str]:
    return [e.message for e in result.events if e.reason == reason]


def settled(job: dict[str, Any], result: Any) -> dict[str, Any]:
    updated = copy.deepcopy(job)
    updated["status"] = result.status
    return updated


def running_job(job: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    pods = pods_for(job)
    return settled(job, plan(job, pods)), pods


def test_a_liveness_restart_in_place_counts_against_the_backoff_limit() -> None:
    job, pods = running_job(stall_job())
    restarted_in_place(pods[1], 1, 143)
    result = plan(job, pods)
    assert result.status["restartCount"] == 1
    assert result.delete_pods == []


def test_a_liveness_restart_in_place_is_reported_as_a_stall_event() -> None:
    job, pods = running_job(stall_job())
    restarted_in_place(pods[1], 1, 137)
    result = plan(job, pods)
    assert events(result, "Stalled") == [
        "Stalled: j-worker-1 (exit code 137) killed while the stall rule found no progress (the liveness probe's "
        "Unhealthy events on the pod have the details) (restart 1 of backoffLimit 6)."]
    assert condition(result, "Running")["status"] == "True"


def test_the_stall_event_is_posted_once_per_restart() -> None:
    job, pods = running_job(stall_job())
    restarted_in_place(pods[1], 1, 143)
    first = plan(job, pods)
    again = plan(settled(job, first), pods)
    assert events(again, "Stalled") == []


def test_an_old_kill_is_not_blamed_for_a_new_restart() -> None:
    job, pods = running_job(stall_job())
    restarted_in_place(pods[0], 1, 143, finished=LONG_AGO)
    assert events(plan(job, pods), "Stalled") == []


def test_an_oom_kill_is_not_a_stall() -> None:
    job, pods = running_job(stall_job())
    restarted_in_place(pods[1], 1, 137, reason="OOMKilled")
    result = plan(job, pods)
    assert result.status["restartCount"] == 1
    assert events(result, "Stalled") == []


def test_a_role_without_a_stall_rule_never_reports_a_stall() -> None:
    job, pods = running_job(make_job(worker=2))
    restarted_in_place(pods[1], 1, 143)
    assert events(plan(job, pods), "Stalled") == []


def test_a_stalled_pod_of_an_exit_code_role_is_recreated_with_reason_stalled() -> None:
    job, pods = running_job(stall_job(policy="ExitCode"))
    failed(pods[0], 143)
    result = plan(job, pods)
    assert [d.pod["metadata"]["name"] for d in result.delete_pods] == ["j-worker-0"]
    restarting = condition(result, "Restarting")
    assert (restarting["status"], restarting["reason"]) == ("True", "Stalled")
    assert "j-worker-0 (exit code 143) killed while the stall rule found no progress" in restarting["message"]
    assert result.status["restartCount"] == 1
    assert [e.type for e in result.events if e.reason == "Stalled"] == ["Warning"]


def test_a_stalled_pod_of_a_never_role_fails_the_job_saying_it_stalled() -> None:
    job, pods = running_job(stall_job(policy="Never"))
    failed(pods[1], 137)
    failed_condition = condition(plan(job, pods), "Failed")
    assert failed_condition["reason"] == "ReplicaFailed"
    assert failed_condition["message"] == (
        "TensorFlowJob j failed: worker pod j-worker-1 failed (exit code 137; most likely stalled: its stall "
        "rule's liveness probe found no progress) and its restartPolicy is Never.")


def test_stalls_past_the_backoff_limit_fail_the_job_naming_the_stall() -> None:
    job, pods = running_job(stall_job(backoffLimit=2))
    restarted_in_place(pods[0], 3, 143)
    failed_condition = condition(plan(job, pods), "Failed")
    assert failed_condition["reason"] == "BackoffLimitExceeded"
    assert failed_condition["message"].endswith("The last restarts: Stalled: j-worker-0 (exit code 143) killed while "
                                                "the stall rule found no progress (the liveness probe's Unhealthy "
                                                "events on the pod have the details).")
