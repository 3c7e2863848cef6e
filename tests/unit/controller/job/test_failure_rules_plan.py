"""The planner with failure rules and per-role budgets: each action's effect on the job, the rule
named in the status and an event, each role's count and what is left of its budget."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

from controller.job.builders import build_pod, build_service
from controller.job.kinds import TENSORFLOWJOB
from controller.job.plan import PlanInputs, plan_job
from tests.support.jobs import make_job, pods_for

NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)
EXIT_3_FAILS = {"name": "bad-config", "action": "FailJob", "onExitCodes": {"operator": "In", "values": [3]}}


def failed(pods: list[dict[str, Any]], name: str, code: int, reason: str = "Error") -> None:
    pod = next(p for p in pods if p["metadata"]["name"] == name)
    pod["status"] = {"phase": "Failed", "containerStatuses": [
        {"name": "tensorflow", "restartCount": 0, "state": {"terminated": {"exitCode": code, "reason": reason}}}]}


def run(job: dict[str, Any], pods: list[dict[str, Any]]) -> Any:
    return plan_job(PlanInputs(job, pods, build_service(job, TENSORFLOWJOB), now=NOW, kind=TENSORFLOWJOB))


def settle(job: dict[str, Any], plan: Any) -> dict[str, Any]:
    updated = copy.deepcopy(job)
    updated["status"] = plan.status
    return updated


def condition(plan: Any, kind: str) -> dict[str, Any] | None:
    return next((c for c in plan.status["conditions"] if c["type"] == kind), None)


def deleted(plan: Any) -> list[str]:
    return sorted(d.pod["metadata"]["name"] for d in plan.delete_pods)


def with_rules(*rules: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return make_job(failurePolicy={"rules": list(rules)}, **spec)


def test_fail_job_rule_fails_at_once_and_names_the_rule() -> None:
    job = with_rules(EXIT_3_FAILS, worker=2, backoffLimit=6)
    pods = pods_for(job)
    failed(pods, "j-worker-1", 3)
    plan = run(job, pods)
    fail = condition(plan, "Failed")
    assert fail is not None and fail["reason"] == "PodFailurePolicy"
    assert "spec.failurePolicy.rules[0] (bad-config)" in fail["message"] and "exit code 3" in fail["message"]
    assert [e.reason for e in plan.events] == ["PodFailurePolicy"]
    assert plan.status["restartCount"] == 0


def test_ignore_rule_replaces_the_pod_without_counting() -> None:
    job = with_rules({"action": "Ignore", "onExitCodes": {"operator": "In", "values": [42]}}, worker=2)
    pods = pods_for(job)
    failed(pods, "j-worker-0", 42)
    plan = run(job, pods)
    assert deleted(plan) == ["j-worker-0"]
    assert plan.status["restartCount"] == 0
    restarting = condition(plan, "Restarting")
    assert restarting is not None and restarting["reason"] == "PodFailurePolicy"
    assert "rules[0]: Ignore" in restarting["message"]


def test_count_rule_retries_a_role_whose_restart_policy_is_never() -> None:
    job = with_rules({"action": "Count", "onExitCodes": {"operator": "In", "values": [1]}}, worker=(2, "Never"))
    pods = pods_for(job)
    failed(pods, "j-worker-0", 1)
    plan = run(job, pods)
    assert condition(plan, "Failed") is None
    assert deleted(plan) == ["j-worker-0"]
    assert plan.status["restartCount"] == 1
    assert plan.status["replicaStatuses"]["worker"]["restarts"] == 1


def test_restart_job_rule_restarts_every_pod_and_counts_once() -> None:
    job = with_rules({"action": "RestartJob", "roles": ["ps"]}, ps=1, worker=2)
    pods = pods_for(job)
    failed(pods, "j-ps-0", 1)
    plan = run(job, pods)
    assert deleted(plan) == ["j-ps-0", "j-worker-0", "j-worker-1"]
    assert plan.status["restartCount"] == 1
    restarting = condition(plan, "Restarting")
    assert restarting is not None and "RestartJob" in restarting["message"]


def test_no_matching_rule_keeps_the_restart_policy() -> None:
    job = with_rules(EXIT_3_FAILS, worker=(2, "Never"))
    pods = pods_for(job)
    failed(pods, "j-worker-0", 1)
    fail = condition(run(job, pods), "Failed")
    assert fail is not None and fail["reason"] == "ReplicaFailed"


def test_role_backoff_limit_fails_on_the_second_worker_failure_while_the_evaluator_keeps_its_budget() -> None:
    job = make_job(worker=2, evaluator=1, backoffLimit=10)
    job["spec"]["worker"]["backoffLimit"] = 1
    job["spec"]["evaluator"]["backoffLimit"] = 5
    pods = pods_for(job)
    failed(pods, "j-evaluator-0", 1)
    failed(pods, "j-worker-0", 1)
    plan = run(job, pods)
    assert condition(plan, "Failed") is None
    statuses = plan.status["replicaStatuses"]
    assert (statuses["worker"]["restarts"], statuses["worker"]["restartsLeft"]) == (1, 0)
    assert (statuses["evaluator"]["restarts"], statuses["evaluator"]["restartsLeft"]) == (1, 4)
    job = settle(job, plan)
    pods = pods_for(job)
    failed(pods, "j-worker-1", 1)
    plan = run(job, pods)
    fail = condition(plan, "Failed")
    assert fail is not None and fail["reason"] == "BackoffLimitExceeded"
    assert "spec.worker.backoffLimit=1" in fail["message"]
    assert plan.status["replicaStatuses"]["evaluator"]["restartsLeft"] == 4


def test_role_counts_survive_a_finished_plan() -> None:
    job = make_job(worker=1)
    job["spec"]["worker"]["backoffLimit"] = 3
    pods = pods_for(job)
    failed(pods, "j-worker-0", 1)
    job = settle(job, run(job, pods))
    job["spec"]["suspend"] = True
    plan = run(job, pods_for(job))
    assert plan.status["replicaStatuses"]["worker"]["restarts"] == 1
    assert plan.status["replicaStatuses"]["worker"]["restartsLeft"] == 2


def test_pods_of_a_job_with_rules_leave_every_failure_to_the_controller() -> None:
    job = with_rules(EXIT_3_FAILS, worker=1, ps=(1, "Always"))
    assert build_pod(job, "worker", 0, "", None, (), TENSORFLOWJOB)["spec"]["restartPolicy"] == "Never"
    assert build_pod(job, "ps", 0, "", None, (), TENSORFLOWJOB)["spec"]["restartPolicy"] == "Always"
    assert build_pod(make_job(worker=1), "worker", 0, "", None, (), TENSORFLOWJOB)["spec"]["restartPolicy"] == "OnFailure"
