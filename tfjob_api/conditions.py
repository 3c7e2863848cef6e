"""Job conditions: one entry per type, with the exclusivity rules of docs/design.md §4.

`Succeeded` and `Failed` are terminal and exclusive, and neither stands beside `Running=True`;
`Running` and `Restarting` are never both True. `lastTransitionTime` moves only when the status
flips; `lastUpdateTime` when the reason or message changes. `state` is the type of the condition
that describes the job now, for `kubectl get` columns.

Part of `tfjob_api`: the condition types and the state precedence are what a user (`kubectl wait
--for=condition=...`, `kubectl tfjob wait`, the Python client) reads, so the client and the
planner that writes them share these definitions rather than copies.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from tfjob_api.bounds import CONDITION_MESSAGE_MAX, CONDITION_REASON_MAX, cut

CREATED = "Created"
RUNNING = "Running"
RESTARTING = "Restarting"
SUCCEEDED = "Succeeded"
FAILED = "Failed"
SUSPENDED = "Suspended"
PENDING = "Pending"  # some pod cannot be scheduled or started (controller/job/pending.py)

# Highest first: the first True one names the state. Pending only shows for a job that has not run
# yet: a running or restarting job keeps that state, and its Pending condition says what is stuck.
STATE_PRECEDENCE = (FAILED, SUCCEEDED, SUSPENDED, RESTARTING, RUNNING, PENDING, CREATED)


def find(conditions: Sequence[Mapping[str, Any]], kind: str) -> Mapping[str, Any] | None:
    return next((c for c in conditions if c.get("type") == kind), None)


def is_true(conditions: Sequence[Mapping[str, Any]], kind: str) -> bool:
    condition = find(conditions, kind)
    return condition is not None and condition.get("status") == "True"


def set_condition(
    conditions: list[dict[str, Any]], kind: str, status: bool, reason: str, message: str, now: str
) -> bool:
    """Set one condition in place (keeping list order); True when anything changed. The reason and
    message are cut to what the CRDs allow (they often quote a pod, the scheduler or Kueue)."""
    value = "True" if status else "False"
    reason, message = cut(reason, CONDITION_REASON_MAX), cut(message, CONDITION_MESSAGE_MAX)
    existing = next((c for c in conditions if c.get("type") == kind), None)
    if existing is None:
        conditions.append({
            "type": kind, "status": value, "reason": reason, "message": message,
            "lastTransitionTime": now, "lastUpdateTime": now,
        })
        return True
    changed = False
    if existing.get("status") != value:
        existing["status"] = value
        existing["lastTransitionTime"] = now
        changed = True
    if existing.get("reason") != reason or existing.get("message") != message:
        existing["reason"] = reason
        existing["message"] = message
        changed = True
    if changed:
        existing["lastUpdateTime"] = now
    return changed


def set_false_if_present(conditions: list[dict[str, Any]], kind: str, reason: str, message: str, now: str) -> bool:
    """Turn a condition False, but do not add it when it never existed."""
    if find(conditions, kind) is None or not is_true(conditions, kind):
        return False
    return set_condition(conditions, kind, False, reason, message, now)


def state(conditions: Sequence[Mapping[str, Any]]) -> str:
    for kind in STATE_PRECEDENCE:
        if is_true(conditions, kind):
            return kind
    return ""


def copy_conditions(status: Mapping[str, Any]) -> list[dict[str, Any]]:
    return copy.deepcopy(list(status.get("conditions") or []))
