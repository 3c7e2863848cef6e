"""A disruption of one member of a job whose training needs all of them: the group restarts as one.

All-reduce training (MultiWorkerMirroredStrategy) cannot go on with one member replaced: when a worker
is evicted, preempted, deleted or lost with its node, its peers fail a moment later (UnavailableError,
exit 1), and were each failure counted, a disruption would cost the job its `backoffLimit`. With
`restartScope: All` (docs/design.md §4, "Disruptions") the operator therefore acts on the disruption
itself, before the peers fail: it deletes every other pod of the job at once, with each pod's own grace
period (so TensorFlow can save on SIGTERM), and counts none of it. Pods it deletes are terminating from
then on, and the planner never judges a terminating pod, so the peers' failures that follow within the
restart never count either.

A member is a pod of a role in TF_CONFIG's cluster (chief, ps, worker); the evaluator is not one, and
its disruption replaces only itself. A member counts as disrupted when

* it is being deleted (someone's kubectl delete, the Eviction API under a drain, the scheduler's
  preemption, the node controller's taint eviction), since the time its deletion was asked for
  (`deletionTimestamp` minus `deletionGracePeriodSeconds`: a later, shorter grace period keeps it);
* it carries a disruption (a `DisruptionTarget` condition, an eviction reason) while not yet deleted
  -- a Failed pod only when no failure rule of the job claims it (`uncounted`), so the rules still
  decide what such a failure means;
* its slot is empty while the job was Running (the pod vanished without the operator seeing it end:
  deleted with grace 0, or while the operator was down), and the other members still have the
  current TF_CONFIG (an empty slot beside stale pods is a scale-up, `plan._rescale`'s);
* its node is lost (not Ready, or gone) and another member's container restarted in place within
  `NODE_LOSS_HOLD`: a node lost without notice takes its processes at once, so their peers fail and
  restart within seconds, while the API shows the node NotReady only after the node controller's grace
  period (50 s by default) and evicts its pods only after the pods' toleration (300 s by default). The
  peer's restart is the evidence that the loss broke the training (a node NotReady while its pods train
  on, cut off from the control plane only, restarts nothing), and it is not counted: the failure
  counting (`controller.job.failures`) leaves a member's in-place restart of a restartScope All job
  uncounted for `NODE_LOSS_HOLD` after it, longer than the grace period, and the group restart deletes
  the pod before that.

The pods restarted are those still live (not deleted, not Succeeded) that were created before the
disruption: for a member being deleted, before its deletion was asked for (creation times have whole
seconds: a pod created in the very second of the deletion is taken for a replacement). That keeps a
restart from feeding on itself: the replacements the restart brings are younger than every deletion
that caused it. A live disrupted member, or one gone unseen, restarts every live pod: the first is
deleted by the restart itself, and the second is only looked for in a Running job, which a restart
leaves Restarting until every pod runs again. Pure: plain dicts in, a `GroupRestart` out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from tfjob_api import podstate
from tfjob_api.timeutil import parse_time

MEMBER_ROLES = ("chief", "ps", "worker")
"""The roles in TF_CONFIG's cluster: the training needs every one of their pods."""

NODE_LOSS_HOLD = timedelta(seconds=90)
"""How long a member's in-place restart of a restartScope All job waits before it counts: long enough
for a lost node (the node controller's grace period, 50 s by default) to show as NotReady, after which
the group restart for the lost node takes the restart's pod with it, uncounted."""

HOW = {  # a DisruptionTarget condition's reason, in words
    "EvictionByEvictionAPI": "evicted",
    "PreemptionByScheduler": "preempted",
    "PreemptionByKubeScheduler": "preempted",
    "DeletionByTaintManager": "evicted from its unreachable node",
    "DeletionByPodGC": "deleted with its lost node",
    "TerminationByKubelet": "evicted by its node",
}


@dataclass(frozen=True)
class GroupRestart:
    """The members that were taken (`taken`: "name (how)") and the live pods to delete with them."""

    taken: tuple[str, ...]
    restart: tuple[Mapping[str, Any], ...]

    def message(self, kind: str, name: str) -> str:
        return (f"Pod(s) {', '.join(self.taken)} of {kind} {name} were disrupted; restarting every pod of the job "
                "together (restartScope All; not counted against backoffLimit).")


def how(pod: Mapping[str, Any]) -> str:
    """How a member was taken, in words: `evicted`, `preempted`, ..., else `deleted` (or `disrupted`
    for a pod not being deleted, whose status says why)."""
    status = pod.get("status") or {}
    for condition in status.get("conditions") or []:
        if condition.get("type") == "DisruptionTarget" and condition.get("status") == "True":
            return HOW.get(str(condition.get("reason")), "disrupted")
    if status.get("reason") in podstate.DISRUPTION_REASONS:
        return str(status["reason"]).lower()
    return "deleted" if podstate.is_terminating(pod) else "disrupted"


def deletion_asked(pod: Mapping[str, Any]) -> datetime | None:
    """When the pod's deletion was asked for: its deletionTimestamp less its grace period (None when it
    is not being deleted)."""
    meta = pod.get("metadata") or {}
    deadline = parse_time(meta.get("deletionTimestamp"))
    if deadline is None:
        return None
    return deadline - timedelta(seconds=int(meta.get("deletionGracePeriodSeconds") or 0))


def is_member(pod: Mapping[str, Any]) -> bool:
    key = podstate.slot(pod)
    return key is not None and key[0] in MEMBER_ROLES


def group_restart(
    spec: Mapping[str, Any],
    pods: Iterable[Mapping[str, Any]],
    live: Iterable[Mapping[str, Any]],
    now: datetime,
    *,
    empty_slots: Iterable[str] = (),
    uncounted: Callable[[Mapping[str, Any]], bool] = lambda _pod: True,
    node_lost: Callable[[Mapping[str, Any]], bool] = lambda _pod: False,
) -> GroupRestart | None:
    """The group restart one or more disrupted members call for, or None.

    `pods` are every pod of the job as the cache shows them, `live` those neither terminating nor
    being deleted by the operator; `empty_slots` name the pods of member slots with no pod at all, given only
    while the job is Running and its live members have the current TF_CONFIG; `uncounted(pod)` says
    whether a Failed, disrupted pod is a disruption to repair (no failure rule claims it); `node_lost(pod)`
    whether a live pod's node is lost (not Ready, or gone)."""
    if spec.get("restartScope") != "All":
        return None
    live = list(live)
    live_uids = {podstate.uid(p) for p in live}
    taken: list[str] = []
    since: datetime | None = None  # the latest deletion asked for by someone else
    now_too = False  # a live member disrupted, or one gone unseen: every live pod predates this pass
    restarted = [p for p in live if is_member(p) and restarted_in_hold(p, now)]
    for pod in pods:
        if not is_member(pod):
            continue
        asked = deletion_asked(pod)
        if asked is None and podstate.uid(pod) in live_uids and node_lost(pod) \
                and any(other is not pod for other in restarted):
            now_too = True
            taken.append(f"{podstate.name(pod)} (lost with its node)")
            continue
        if asked is None:
            if podstate.uid(pod) not in live_uids or not podstate.is_disrupted(pod):
                continue
            if podstate.phase(pod) == "Failed" and not uncounted(pod):
                continue
            now_too = True
        else:
            since = asked if since is None else max(since, asked)
        taken.append(f"{podstate.name(pod)} ({how(pod)})")
    for missing in empty_slots:
        taken.append(f"{missing} (gone)")
        now_too = True
    if since is None and not now_too:
        return None
    restart = tuple(p for p in live if podstate.phase(p) != "Succeeded"
                    and (now_too or since is None or _created_before(p, since)))
    if not restart:
        return None
    return GroupRestart(tuple(taken), restart)


def hold_left(pod: Mapping[str, Any], now: datetime) -> timedelta | None:
    """How long the hold after the pod's latest in-place restart still runs; None when it came
    `NODE_LOSS_HOLD` ago or more, or never."""
    last = podstate.last_restart_at(pod)
    if last is None or now - last >= NODE_LOSS_HOLD:
        return None
    return last + NODE_LOSS_HOLD - now


def restarted_in_hold(pod: Mapping[str, Any], now: datetime) -> bool:
    """Whether the pod's latest in-place restart came less than `NODE_LOSS_HOLD` ago."""
    return hold_left(pod, now) is not None


def _created_before(pod: Mapping[str, Any], moment: datetime) -> bool:
    created = parse_time((pod.get("metadata") or {}).get("creationTimestamp"))
    return created is None or created < moment.replace(microsecond=0)
