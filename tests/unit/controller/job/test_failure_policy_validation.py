"""`spec.failurePolicy` and the per-role `backoffLimit` at validation: each mistake gets a message
naming the field, in the CRD's words."""

from __future__ import annotations

from typing import Any

import pytest

from controller.job.validation import validate_job
from tests.support.jobs import role, tfjob


def job_with(rules: list[Any], **worker: Any) -> dict[str, Any]:
    return tfjob("j", {"worker": {**role(2), **worker}, "failurePolicy": {"rules": rules}})


def messages(job: dict[str, Any]) -> list[str]:
    return [str(p) for p in validate_job(job)]


def test_rules_of_every_kind_are_valid() -> None:
    rules = [
        {"name": "bad-config", "action": "FailJob", "onExitCodes": {"operator": "In", "values": [3]}},
        {"action": "FailJob", "roles": ["worker"], "onReasons": ["OOMKilled"]},
        {"action": "Ignore", "onPodConditions": ["DisruptionTarget"]},
        {"action": "RestartJob", "onExitCodes": {"operator": "NotIn", "values": [0, 137]}},
        {"action": "Count", "onReasons": ["Stalled"]},
    ]
    assert messages(job_with(rules, backoffLimit=1)) == []


@pytest.mark.parametrize(("rules", "expected"), [
    ([{"action": "Explode", "roles": ["worker"]}], "spec.failurePolicy.rules[0].action: 'Explode' is not allowed"),
    ([{"roles": ["worker"]}], "spec.failurePolicy.rules[0].action: required field is missing"),
    ([{"action": "FailJob"}], "spec.failurePolicy.rules[0]: a rule needs at least one of roles, onExitCodes"),
    ([{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [0, 1]}}],
     "spec.failurePolicy.rules[0].onExitCodes.values: exit code 0 is not a failure"),
    ([{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [300]}}],
     "spec.failurePolicy.rules[0].onExitCodes.values[0]: 300 is above the maximum of 255"),
    ([{"action": "FailJob", "onReasons": ["Tired"]}], "spec.failurePolicy.rules[0].onReasons[0]: 'Tired' is not"),
    ([{"action": "Ignore", "roles": ["worker"]}, {"action": "Ignore", "roles": ["evaluator"]}],
     "spec.failurePolicy.rules[1].roles: names evaluator, not a role of this job (it has worker)"),
])
def test_a_bad_rule_gets_a_message_naming_its_field(rules: list[Any], expected: str) -> None:
    assert any(m.startswith(expected) for m in messages(job_with(rules))), messages(job_with(rules))


def test_a_negative_role_backoff_limit_is_refused() -> None:
    assert messages(job_with([], backoffLimit=-1)) == ["spec.worker.backoffLimit: -1 is below the minimum of 0"]
