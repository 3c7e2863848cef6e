"""What the API server's refusals mean for a job: pure rules on its plan, tested with plain dicts.

Some things only the API server can tell. The reconciler carries a plan out, classifies each error
it gets back as a `Refusal` (and a name it finds held by an object the job does not own as one too),
and asks `fold_refusals` what they mean. The rules, in the order the refusals came:

* a body the server rejects as invalid (422: a pod template, the Service, the NetworkPolicy's
  `allowFrom` peers) fails the job for good through `PlanDraft.fail`, exactly as the planner fails
  a job: Failed True (reason `InvalidPodTemplate` or `InvalidNetworkPolicy`), its active pods
  deleted by its cleanup, a requeue for its TTL; `Pending` turns False with the same reason;
* a name held by an object the job does not own: `Running` False with reason `NameConflict`, a
  Warning event when that is news, and a retry; the object is left alone;
* a quota refusal: `Running` False with reason `QuotaExceeded`, a Warning event, and a retry
  (with the work queue's back-off);
* a refusal because the namespace or the job is going away: nothing;
* anything else: a Warning event `FailedCreate<Kind>` and a retry.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Any

from controller.job.draft import Event, Plan, PlanDraft, PodDeletion
from tfjob_api import conditions as cond
from tfjob_api import podstate


class Cause(Enum):
    INVALID = "invalid"  # 422: the body itself is wrong
    NAME_TAKEN = "name taken"  # an object the job does not own holds the name
    QUOTA = "quota"  # a ResourceQuota refused it
    GOING_AWAY = "going away"  # the namespace or the job is being deleted
    OTHER = "other"


@dataclass(frozen=True)
class Refusal:
    """One object the API server would not take, as the reconciler classified it."""

    kind: str  # what was refused: Pod | Service | NetworkPolicy
    name: str
    cause: Cause
    detail: str = ""  # the server's message (for OTHER, the whole error)
    invalid_reason: str = "InvalidPodTemplate"  # the Failed reason when the cause is INVALID


@dataclass
class Folded:
    """What the refusals added to the plan that the reconciler has still to carry out."""

    problems: list[str]  # why the reconcile must be retried (empty: nothing to retry)
    delete_pods: list[PodDeletion]  # a failed job's cleanup
    delete_service: Mapping[str, Any] | None = None  # likewise, with cleanPodPolicy All


def fold_refusals(
    plan: Plan,
    job: Mapping[str, Any],
    refusals: Sequence[Refusal],
    *,
    pods: list[Mapping[str, Any]],
    service: Mapping[str, Any] | None,
    now: datetime,
    pending_deletes: frozenset[str] = frozenset(),
) -> Folded:
    """Fold `refusals` into `plan` (its status, events and requeue) for `job`, the (defaulted) model
    it was planned for; `pods` and `service` are the job's own as the cache showed them, and
    `pending_deletes` the UIDs of pods deleted whose deletion it has not shown yet. Returns the
    deletions the plan gained, which the reconciler has still to make, and the problems to retry for."""
    deletions_before = len(plan.delete_pods)
    service_before = plan.delete_service
    draft = PlanDraft(job, pods, service, plan.status, now, pending_deletes, out=plan)
    problems: list[str] = []
    for refusal in refusals:
        problem = _fold(draft, refusal)
        if problem:
            problems.append(problem)
    plan.status["conditions"] = draft.conditions
    plan.status["state"] = cond.state(draft.conditions)
    added = plan.delete_pods[deletions_before:]
    for deletion in added:
        _uncount(plan.status, deletion.pod)
    service_added = plan.delete_service if plan.delete_service is not service_before else None
    return Folded(problems, list(added), service_added)


def name_conflict(draft: PlanDraft, kind: str, name: str) -> str:
    """`Running` False with reason `NameConflict` (a Warning event when that is news); the problem."""
    message = (f"{kind} {name} already exists and is not owned by this {draft.kind}; it is left untouched. "
               "Delete or rename it, or rename the job.")
    if draft.condition(cond.RUNNING, False, "NameConflict", message):
        draft.out.events.append(Event("Warning", "NameConflict", message))
    return f"{kind} {name}: name held by an object this job does not own"


def quota_refused(draft: PlanDraft, kind: str, name: str, detail: str) -> str:
    """`Running` False with reason `QuotaExceeded` and a Warning event; the problem."""
    message = f"Cannot create {kind} {name}: {detail}; retrying with back-off."
    draft.condition(cond.RUNNING, False, "QuotaExceeded", message)
    draft.out.events.append(Event("Warning", "QuotaExceeded", message))
    return f"create {kind} {name}: quota exceeded"


def rejected(draft: PlanDraft, refusal: Refusal) -> None:
    """The job fails for good: the server will never take what its spec asks for."""
    reason = refusal.invalid_reason
    message = f"{refusal.kind} {refusal.name} was rejected by the API server: {refusal.detail}"
    draft.fail(reason, message)
    draft.condition_false(cond.PENDING, reason, message)


def _fold(draft: PlanDraft, refusal: Refusal) -> str | None:
    if refusal.cause is Cause.INVALID:
        rejected(draft, refusal)
        return None  # permanent: the job is Failed, nothing to retry
    if refusal.cause is Cause.NAME_TAKEN:
        return name_conflict(draft, refusal.kind, refusal.name)
    if refusal.cause is Cause.QUOTA:
        return quota_refused(draft, refusal.kind, refusal.name, refusal.detail)
    if refusal.cause is Cause.GOING_AWAY:
        return None
    message = f"Cannot create {refusal.kind} {refusal.name}: {refusal.detail}"
    draft.out.events.append(Event("Warning", f"FailedCreate{refusal.kind}", message))
    return message


def _uncount(status: dict[str, Any], pod: Mapping[str, Any]) -> None:
    """Take a pod the plan now deletes out of its role's counts, as the planner does for its own
    deletions, so the status does not report it until its deletion shows."""
    slot = podstate.slot(pod)
    entry = (status.get("replicaStatuses") or {}).get(slot[0]) if slot else None
    if entry is None:
        return
    phase = podstate.phase(pod)
    bucket = "active" if podstate.is_active(pod) else {"Succeeded": "succeeded", "Failed": "failed"}.get(phase or "")
    if bucket and entry.get(bucket):
        entry[bucket] -= 1
