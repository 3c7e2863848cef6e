"""A TFJob's status as Kubeflow writes it, translated to and from the planner's status.

Out (`to_tfjob_status`): the conditions keep their types (Created, Running, Restarting, Succeeded,
Failed, Suspended, and this operator's Pending) with Kubeflow's reasons -- `TFJobCreated`,
`TFJobRunning`, `TFJobRestarting`, `TFJobSucceeded`, `TFJobFailed`, `TFJobSuspended`,
`TFJobResumed` -- and the condition that describes the job now comes last (Kubeflow's State column
reads `.status.conditions[-1:].type`). `replicaStatuses` are keyed by replica type (`Worker`, `PS`,
...) with `active`, `succeeded`, `failed`, `selector` and `labelSelector` in Kubeflow's labels;
`startTime`, `completionTime` and `lastReconcileTime` (stamped whenever anything else changed) as
Kubeflow names them. Beside those, the fields this operator keeps for itself: `restartCount`,
`observedGeneration`, the crash-safe failure count (`retriedFailures`, `countedFailedPods`) and
`conditionReasons` -- the operator's own reason where Kubeflow's word says less (a Failed condition's
`BackoffLimitExceeded`, say).

Back (`to_model_status`): the planner's status, exactly as it was written, so a status that did not
change translates to the same TFJob status and costs no write. A status Kubeflow's operator wrote
(before a hand-over) translates too, its reasons mapped to the planner's nearest ones.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from tfjob_api import conditions as cond
from tfjob_api.kubeflow import (
    JOB_NAME_LABEL,
    REPLICA_TYPE_LABEL,
    ROLE_OF_TYPE,
    TYPE_OF_ROLE,
    canonical_type,
    role_selector,
)

# The planner's reasons and the Kubeflow reason each becomes; others fall back on the condition type's.
KUBEFLOW_REASON = {
    "JobCreated": "TFJobCreated",
    "JobRunning": "TFJobRunning",
    "JobSucceeded": "TFJobSucceeded",
    "Resumed": "TFJobResumed",
    "Suspended": "TFJobSuspended",
    "PodFailed": "TFJobRestarting",
    "Rescaled": "TFJobRestarting",
    "Stalled": "TFJobRestarting",
    "Restarting": "TFJobRestarting",
    "ReplicaFailed": "TFJobFailed",
    "BackoffLimitExceeded": "TFJobFailed",
    "DeadlineExceeded": "TFJobFailed",
    "InvalidSpec": "TFJobFailed",
    "InvalidPodTemplate": "TFJobFailed",
}
TYPE_REASON = {
    cond.CREATED: "TFJobCreated",
    cond.RESTARTING: "TFJobRestarting",
    cond.SUCCEEDED: "TFJobSucceeded",
    cond.FAILED: "TFJobFailed",
    cond.SUSPENDED: "TFJobSuspended",
}
# For statuses Kubeflow's operator wrote: its reason → the planner's.
PLANNER_REASON = {
    "TFJobCreated": "JobCreated",
    "TFJobRunning": "JobRunning",
    "TFJobSucceeded": "JobSucceeded",
    "TFJobResumed": "Resumed",
    "TFJobSuspended": "Suspended",
    "TFJobRestarting": "PodFailed",
    "TFJobFailed": "ReplicaFailed",
}
# The order conditions are listed in (the current state's is moved last).
CONDITION_ORDER = (cond.CREATED, cond.PENDING, cond.SUSPENDED, cond.RUNNING, cond.RESTARTING, cond.FAILED,
                   cond.SUCCEEDED)
KEPT_FIELDS = ("startTime", "completionTime", "restartCount", "retriedFailures", "countedFailedPods",
               "observedGeneration")
LAST_RECONCILE = "lastReconcileTime"
REASONS = "conditionReasons"


def kubeflow_reason(kind: str, reason: str) -> str:
    """Kubeflow's reason for a condition of this type with the planner's `reason` (a reason Kubeflow
    has no word for, on Running or Pending, is kept as it is)."""
    return KUBEFLOW_REASON.get(reason) or TYPE_REASON.get(kind) or reason


def _order(conditions: list[dict[str, Any]], state: str) -> list[dict[str, Any]]:
    def rank(condition: Mapping[str, Any]) -> tuple[int, int]:
        kind = condition.get("type", "")
        position = CONDITION_ORDER.index(kind) if kind in CONDITION_ORDER else len(CONDITION_ORDER)
        return (1 if kind == state else 0, position)
    return sorted(conditions, key=rank)


def replica_statuses(model_status: Mapping[str, Any], replica_types: Mapping[str, str],
                     job_name: str) -> dict[str, dict[str, Any]]:
    out = {}
    for role, counts in (model_status.get("replicaStatuses") or {}).items():
        replica_type = replica_types.get(role) or TYPE_OF_ROLE.get(role, role)
        out[replica_type] = {
            "active": counts.get("active", 0), "succeeded": counts.get("succeeded", 0),
            "failed": counts.get("failed", 0),
            "selector": role_selector(job_name, replica_type),
            "labelSelector": {"matchLabels": {JOB_NAME_LABEL: job_name, REPLICA_TYPE_LABEL: replica_type.lower()}},
        }
    return out


def to_tfjob_status(model_status: Mapping[str, Any], replica_types: Mapping[str, str], job_name: str,
                    previous: Mapping[str, Any], now: str) -> dict[str, Any]:
    """The TFJob status for the planner's status. `previous` is the TFJob's status as stored: its
    `lastReconcileTime` is kept when nothing else changed (so an unchanged status is not written)."""
    conditions = []
    reasons = {}
    for condition in model_status.get("conditions") or []:
        translated = dict(condition)
        reason = kubeflow_reason(condition.get("type", ""), condition.get("reason", ""))
        if PLANNER_REASON.get(reason, reason) != condition.get("reason", ""):  # not told by Kubeflow's word
            reasons[condition["type"]] = condition.get("reason", "")
        translated["reason"] = reason
        conditions.append(translated)
    status: dict[str, Any] = {
        "conditions": _order(conditions, model_status.get("state") or cond.state(conditions)),
        "replicaStatuses": replica_statuses(model_status, replica_types, job_name),
    }
    for field in KEPT_FIELDS:
        if field in model_status:
            status[field] = copy.deepcopy(model_status[field])
    if reasons:
        status[REASONS] = reasons
    if {k: v for k, v in previous.items() if k != LAST_RECONCILE} != status:
        status[LAST_RECONCILE] = now
    elif LAST_RECONCILE in previous:
        status[LAST_RECONCILE] = previous[LAST_RECONCILE]
    return status


def to_model_status(tfjob_status: Mapping[str, Any]) -> dict[str, Any]:
    """The planner's status for a TFJob's stored status."""
    reasons = tfjob_status.get(REASONS) or {}
    conditions = []
    for condition in tfjob_status.get("conditions") or []:
        translated = dict(condition)
        kind = condition.get("type", "")
        stored = condition.get("reason", "")
        translated["reason"] = reasons.get(kind) or PLANNER_REASON.get(stored, stored)
        conditions.append(translated)
    status: dict[str, Any] = {"conditions": conditions, "state": cond.state(conditions)}
    by_role = {}
    for replica_type, counts in (tfjob_status.get("replicaStatuses") or {}).items():
        known = canonical_type(str(replica_type))
        role = ROLE_OF_TYPE[known] if known else str(replica_type).lower()
        by_role[role] = {k: counts.get(k, 0) for k in ("active", "succeeded", "failed")}
    if by_role:
        status["replicaStatuses"] = by_role
    for field in KEPT_FIELDS:
        if field in tfjob_status:
            status[field] = copy.deepcopy(tfjob_status[field])
    return status
