"""Per-role restart budgets: each role's counted restarts, and what is left of its `backoffLimit`.

A role may carry its own `backoffLimit` beside the job-wide one ("the evaluator may restart 20
times, the chief twice"): the job fails when either is exceeded. Each role's count is kept like
the job's (`controller.job.failures`): failed pods retried by the controller, persisted in
`status.retriedFailuresByRole` so a crash never loses one, plus the in-place container restarts of
its live pods, and the published count never goes down. The status shows the counts in
`status.replicaStatuses.<role>.restarts` (for a role with restarts or a budget) and what is left in
`.restartsLeft` (for a role with a budget). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tfconfig import ROLES

PERSISTED = "retriedFailuresByRole"


def role_limits(spec: Mapping[str, Any]) -> dict[str, int]:
    """The roles that have a `backoffLimit` of their own, with it."""
    limits = {}
    for role in ROLES:
        role_spec = spec.get(role)
        limit = role_spec.get("backoffLimit") if isinstance(role_spec, Mapping) else None
        if isinstance(limit, int):
            limits[role] = limit
    return limits


def published_counts(status: Mapping[str, Any]) -> dict[str, int]:
    """Each role's restart count as the status last published it."""
    return {role: int(entry.get("restarts") or 0)
            for role, entry in (status.get("replicaStatuses") or {}).items() if isinstance(entry, Mapping)}


def exceeded(spec: Mapping[str, Any], counts: Mapping[str, int]) -> tuple[str, int, int] | None:
    """The first role (in role order) whose count is over its own backoffLimit: (role, count, limit)."""
    for role, limit in role_limits(spec).items():
        if counts.get(role, 0) > limit:
            return role, counts.get(role, 0), limit
    return None


def add_budgets(replica_statuses: dict[str, dict[str, Any]], spec: Mapping[str, Any],
                counts: Mapping[str, int]) -> None:
    """Write each role's `restarts` and `restartsLeft` into its replica status, in place."""
    limits = role_limits(spec)
    for role, entry in replica_statuses.items():
        count = counts.get(role, 0)
        if count or role in limits:
            entry["restarts"] = count
        if role in limits:
            entry["restartsLeft"] = max(limits[role] - count, 0)
