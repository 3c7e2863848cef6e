"""The failure rules as a table: which action a failed pod gets, the first matching rule winning, and
the behaviour without rules (restartPolicy, disruptions uncounted)."""

from __future__ import annotations

from typing import Any

import pytest

from controller.job.failurepolicy import Decision, Failure, decide, failure_of
from tests.support.jobs import make_job, pods_for


def failure(role: str = "worker", code: int | None = 1, reasons: tuple[str, ...] = ("Error",),
            conditions: tuple[str, ...] = (), disrupted: bool = False) -> Failure:
    return Failure(role, code, frozenset(reasons), frozenset(conditions), disrupted)


def spec(*rules: dict[str, Any], policy: str = "OnFailure") -> dict[str, Any]:
    return {"worker": {"replicas": 2, "restartPolicy": policy}, "evaluator": {"replicas": 1, "restartPolicy": policy},
            "failurePolicy": {"rules": list(rules)}}


EXIT_3_FAILS = {"name": "bad-config", "action": "FailJob", "onExitCodes": {"operator": "In", "values": [3]}}
OOM_FAILS = {"action": "FailJob", "onReasons": ["OOMKilled"]}
DISRUPTION_COUNTS = {"action": "Count", "onPodConditions": ["DisruptionTarget"]}
EVALUATOR_IGNORED = {"action": "Ignore", "roles": ["evaluator"]}
NOT_137_RESTARTS_ALL = {"action": "RestartJob", "onExitCodes": {"operator": "NotIn", "values": [137]}}

CASES = [
    # (rules, failure, expected decision)
    pytest.param([EXIT_3_FAILS], failure(code=3), Decision("FailJob", 0, "bad-config"), id="exit code In fails"),
    pytest.param([EXIT_3_FAILS], failure(code=4), Decision("Count"), id="exit code not listed: default Count"),
    pytest.param([OOM_FAILS], failure(code=137, reasons=("OOMKilled",)), Decision("FailJob", 0), id="reason"),
    pytest.param([EVALUATOR_IGNORED], failure(role="evaluator"), Decision("Ignore", 0), id="role Ignore"),
    pytest.param([EVALUATOR_IGNORED], failure(role="worker"), Decision("Count"), id="other role: default"),
    pytest.param([DISRUPTION_COUNTS], failure(code=137, conditions=("DisruptionTarget",), disrupted=True),
                 Decision("Count", 0), id="condition Count makes a disruption count"),
    pytest.param([NOT_137_RESTARTS_ALL], failure(code=2), Decision("RestartJob", 0), id="NotIn RestartJob"),
    pytest.param([NOT_137_RESTARTS_ALL], failure(code=137), Decision("Count"), id="NotIn listed: default"),
    pytest.param([NOT_137_RESTARTS_ALL], failure(code=0, reasons=("Completed",)), Decision("Count"),
                 id="NotIn never matches exit code 0"),
    pytest.param([EXIT_3_FAILS], failure(code=None, reasons=()), Decision("Count"), id="no exit code: no match"),
    pytest.param([EVALUATOR_IGNORED, EXIT_3_FAILS], failure(role="evaluator", code=3), Decision("Ignore", 0),
                 id="first match wins"),
    pytest.param([EXIT_3_FAILS, EVALUATOR_IGNORED], failure(role="evaluator", code=3),
                 Decision("FailJob", 0, "bad-config"), id="first match wins, the other order"),
    pytest.param([{"action": "Ignore", "roles": ["worker"], "onExitCodes": {"operator": "In", "values": [3]}}],
                 failure(role="worker", code=4), Decision("Count"), id="every criterion must hold"),
    pytest.param([], failure(code=1), Decision("Count"), id="no rule: OnFailure counts"),
    pytest.param([], failure(code=137, reasons=("Evicted",), disrupted=True), Decision("Ignore"),
                 id="no rule: a disruption is not counted"),
]


@pytest.mark.parametrize(("rules", "failed", "expected"), CASES)
def test_rules_decide_what_a_failure_means(rules: list[dict[str, Any]], failed: Failure, expected: Decision) -> None:
    assert decide(spec(*rules), failed) == expected


@pytest.mark.parametrize(("policy", "code", "action"), [
    ("Never", 1, "Count"), ("Never", 137, "Count"), ("ExitCode", 2, "Count"), ("ExitCode", 137, "Count"),
])
def test_a_matching_count_rule_overrides_the_restart_policy(policy: str, code: int, action: str) -> None:
    rule = {"action": "Count", "roles": ["worker"]}
    assert decide(spec(rule, policy=policy), failure(code=code)).action == action


@pytest.mark.parametrize(("policy", "code", "action"), [
    ("Never", 1, "FailJob"), ("Never", 137, "FailJob"), ("ExitCode", 2, "FailJob"), ("ExitCode", 137, "Count"),
    ("OnFailure", 2, "Count"), ("Always", 2, "Count"),
])
def test_without_a_matching_rule_the_restart_policy_decides_as_before(policy: str, code: int, action: str) -> None:
    assert decide(spec(policy=policy), failure(code=code)) == Decision(action)


def test_a_failed_pod_is_read_with_its_reasons_conditions_and_exit_code() -> None:
    job = make_job(worker=1)
    pod = pods_for(job)[0]
    pod["status"] = {"phase": "Failed", "reason": "Evicted",
                     "conditions": [{"type": "DisruptionTarget", "status": "True"}],
                     "containerStatuses": [{"name": "tensorflow", "state": {
                         "terminated": {"exitCode": 137, "reason": "OOMKilled"}}}]}
    read = failure_of(job, "worker", pod)
    assert read == Failure("worker", 137, frozenset({"Evicted", "OOMKilled"}), frozenset({"DisruptionTarget"}), True)
    assert read.describe() == "exit code 137, Evicted, OOMKilled"


def test_a_kill_under_a_stall_rule_reads_as_stalled() -> None:
    job = make_job(worker=1)
    job["spec"]["worker"]["stall"] = {"timeoutSeconds": 60}
    pod = pods_for(job)[0]
    pod["status"] = {"phase": "Failed", "containerStatuses": [{"name": "tensorflow", "state": {
        "terminated": {"exitCode": 143, "reason": "Error"}}}]}
    assert "Stalled" in failure_of(job, "worker", pod).reasons


def test_decision_names_its_rule() -> None:
    assert Decision("FailJob", 2, "bad-config").source() == "spec.failurePolicy.rules[2] (bad-config)"
    assert Decision("Ignore", 0).source() == "spec.failurePolicy.rules[0]"
    assert Decision("Count").source() == ""
