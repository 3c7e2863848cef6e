"""`spec.failurePolicy`: which action a failed pod of a job calls for, decided by the job's rules.

The user's rules are ordered; the first whose every criterion matches the failed pod decides what
the failure means (docs/design.md §4, "Failure rules"):

* `FailJob` -- the job fails now, whatever budget is left;
* `Ignore` -- the pod is replaced and the failure is not counted (as a disruption is);
* `Count` -- the pod is replaced and the failure counts against the budgets (the default);
* `RestartJob` -- every pod of the job is replaced for this failure (restartScope All, for this
  failure only), and the failure counts.

A rule matches on a role (`roles`), the TensorFlow container's exit code (`onExitCodes`, In or NotIn
a set; NotIn never matches exit code 0), a pod condition that is True (`onPodConditions`) and/or a
termination reason (`onReasons`: the TensorFlow container's `terminated.reason` -- OOMKilled,
Error, ... --, the pod's `status.reason` -- Evicted, DeadlineExceeded, Preempted, ... -- and `Stalled`
when the role's stall rule most likely killed it, `controller.job.stalled`). Every criterion a rule
gives must hold; within one list, any entry will do.

A failure no rule matches gets the behaviour the operator has without rules (`default_decision`):
a disruption is repaired uncounted, a role with restartPolicy Never (or ExitCode with an exit code
of 1-127) fails the job, anything else is counted. Pure: plain dicts in, a `Decision` out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from controller.job import stalled
from tfjob_api import podstate
from tfjob_api.defaults import RESTART_POLICY

FAIL_JOB = "FailJob"
IGNORE = "Ignore"
COUNT = "Count"
RESTART_JOB = "RestartJob"
ACTIONS = (FAIL_JOB, IGNORE, COUNT, RESTART_JOB)
STALLED = "Stalled"
REASONS = ("OOMKilled", "Error", "DeadlineExceeded", "Evicted", "Preempted", "ContainerCannotRun", STALLED)
POD_CONDITIONS = ("DisruptionTarget",)  # the pod cache keeps no other condition of a pod (controller.job.podcache)
RULES_PATH = "spec.failurePolicy.rules"


@dataclass(frozen=True)
class Failure:
    """What is known about one failed pod, as the rules read it."""

    role: str
    exit_code: int | None
    reasons: frozenset[str]
    conditions: frozenset[str]
    disrupted: bool

    def describe(self) -> str:
        """`exit code 3, Error` for messages."""
        parts = [f"exit code {self.exit_code}"] if self.exit_code is not None else []
        parts += sorted(self.reasons)
        return ", ".join(parts) if parts else "pod failed"


@dataclass(frozen=True)
class Decision:
    """What one failure means: the action, and the rule that said so (None: no rule matched)."""

    action: str
    rule: int | None = None
    rule_name: str = ""

    def source(self) -> str:
        """`spec.failurePolicy.rules[0] (bad-config)`, or '' when no rule decided."""
        if self.rule is None:
            return ""
        named = f" ({self.rule_name})" if self.rule_name else ""
        return f"{RULES_PATH}[{self.rule}]{named}"

    @property
    def counted(self) -> bool:
        return self.action in (COUNT, RESTART_JOB)


def failure_of(job: Mapping[str, Any], role: str, pod: Mapping[str, Any]) -> Failure:
    """Read a failed pod the way the rules do."""
    status = pod.get("status") or {}
    reasons = set()
    if status.get("reason"):
        reasons.add(str(status["reason"]))
    container = podstate.tf_container_status(pod) or {}
    for key in ("state", "lastState"):
        terminated = (container.get(key) or {}).get("terminated")
        if isinstance(terminated, Mapping):
            if terminated.get("reason"):
                reasons.add(str(terminated["reason"]))
            break
    if stalled.failed_pod_stalled(job, role, pod):
        reasons.add(STALLED)
    true_conditions = {str(c.get("type")) for c in status.get("conditions") or [] if c.get("status") == "True"}
    return Failure(role, podstate.exit_code(pod), frozenset(reasons), frozenset(true_conditions),
                   podstate.is_disrupted(pod))


def rule_matches(rule: Mapping[str, Any], failure: Failure) -> bool:
    """Whether every criterion the rule gives holds for the failure."""
    roles = rule.get("roles")
    if roles and failure.role not in roles:
        return False
    codes = rule.get("onExitCodes")
    if codes is not None:
        code, values = failure.exit_code, set(codes.get("values") or [])
        if code is None:
            return False
        if codes.get("operator") == "In" and code not in values:
            return False
        if codes.get("operator") == "NotIn" and (code == 0 or code in values):
            return False
    wanted_conditions = rule.get("onPodConditions")
    if wanted_conditions and not failure.conditions & set(wanted_conditions):
        return False
    wanted_reasons = rule.get("onReasons")
    return not (wanted_reasons and not failure.reasons & set(wanted_reasons))


def matching_rule(rules: Sequence[Mapping[str, Any]], failure: Failure) -> int | None:
    """The index of the first rule that matches, None when none does."""
    return next((i for i, rule in enumerate(rules) if rule_matches(rule, failure)), None)


def default_decision(spec: Mapping[str, Any], failure: Failure) -> Decision:
    """The behaviour without a matching rule: disruptions repaired uncounted, restartPolicy Never (and
    ExitCode on 1-127) fails the job, the rest is counted."""
    if failure.disrupted:
        return Decision(IGNORE)
    policy = (spec.get(failure.role) or {}).get("restartPolicy", RESTART_POLICY)
    code = failure.exit_code
    if policy == "Never" or (policy == "ExitCode" and code is not None and 1 <= code <= 127):
        return Decision(FAIL_JOB)
    return Decision(COUNT)


def decide(spec: Mapping[str, Any], failure: Failure) -> Decision:
    """What the failure means for the job: its first matching rule's action, else the default."""
    rules = (spec.get("failurePolicy") or {}).get("rules") or []
    index = matching_rule(rules, failure)
    if index is None:
        return default_decision(spec, failure)
    rule = rules[index]
    return Decision(str(rule.get("action") or COUNT), index, str(rule.get("name") or ""))


def has_rules(spec: Mapping[str, Any]) -> bool:
    return bool((spec.get("failurePolicy") or {}).get("rules"))
