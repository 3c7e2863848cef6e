"""A plan and the draft it is written in: what the planner and the API server's refusals share.

`Plan` is what one reconcile is to do for one job (creates, deletes, the full new status, events,
when to look again). `PlanDraft` is a plan being written: the job, the pods and Service it owns as
the cache shows them, the status being computed, and the edits every rule makes through it --
conditions, pod deletions (never one pod twice, never a pod whose deletion is still pending), and
failing the job. `controller.job.plan` writes a draft from scratch; `controller.job.refusals`
resumes one from a finished plan to fold in what the API server refused, so a job failed by the
planner and a job failed by a rejected create go through the same `PlanDraft.fail`: the same
conditions, the same cleanup of its pods and the same TTL requeue. Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from controller.job.children import Step
from tfjob_api import conditions as cond
from tfjob_api import podstate
from tfjob_api.defaults import CLEAN_POD_POLICY
from tfjob_api.names import REPLICA_TYPE_LABEL
from tfjob_api.timeutil import format_time


@dataclass(frozen=True)
class Event:
    type: str  # Normal | Warning
    reason: str
    message: str


@dataclass(frozen=True)
class PodDeletion:
    pod: Mapping[str, Any]
    reason: str
    force: bool = False


@dataclass
class Plan:
    create_pods: list[dict[str, Any]] = field(default_factory=list)
    delete_pods: list[PodDeletion] = field(default_factory=list)
    create_service: dict[str, Any] | None = None
    delete_service: Mapping[str, Any] | None = None
    # The other owned objects (NetworkPolicy, PodGroup, declared types), by kind: `controller.job.children`
    children: dict[str, Step] = field(default_factory=dict)
    status: dict[str, Any] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    requeue_after: float | None = None
    delete_job: bool = False
    # The job's first pass: its Created condition, written with the pods' first state, tells of the
    # pods and Service this pass creates, so they need no `SuccessfulCreate` event of their own.
    creates_told_by_condition: bool = False

    def child(self, kind: str) -> Step:
        """The step for the owned object of that kind (an empty one, added, when none is planned yet)."""
        return self.children.setdefault(kind, Step())

    def count_created_as_active(self, created: AbstractSet[str]) -> None:
        """Count pods the API server has accepted but the cache does not show yet as active.

        The planner sees only the cache, so without this a burst of creates would be reported as
        active 0, then 1, 2, ... as the ADDED events arrive: one status write per event instead of
        one. (The planner lists every slot without a pod in `create_pods`, created or not.)"""
        statuses = self.status.get("replicaStatuses") or {}
        for pod in self.create_pods:
            meta = pod["metadata"]
            entry = statuses.get(meta["labels"].get(REPLICA_TYPE_LABEL))
            if meta["name"] in created and entry is not None:
                entry["active"] = entry.get("active", 0) + 1

    def status_first(self, stored_status: Mapping[str, Any]) -> bool:
        """Whether the status must be written before anything is deleted: when the failure count
        changed (a crash between deleting the failed pods and counting them must not lose one), and
        when the plan finishes the job -- deleted pods of a job not yet marked finished (a crash, a
        refused status write) would be created again by the next pass: a finished job revived."""
        if self.status.get("retriedFailures") != stored_status.get("retriedFailures"):
            return True
        before, after = stored_status.get("conditions") or [], self.status.get("conditions") or []
        return bool(self.delete_pods or self.delete_service) and any(
            cond.is_true(after, kind) and not cond.is_true(before, kind) for kind in (cond.SUCCEEDED, cond.FAILED))

    def requeue_in(self, seconds: float) -> None:
        seconds = max(seconds, 0.0)
        self.requeue_after = seconds if self.requeue_after is None else min(self.requeue_after, seconds)


@dataclass
class Observed:
    """What the cache says about one job's children, sorted into slots."""

    by_slot: dict[tuple[str, int], list[Mapping[str, Any]]]
    strays: list[Mapping[str, Any]]  # ours, but with labels that name no slot

    @classmethod
    def sort(cls, pods: list[Mapping[str, Any]]) -> Observed:
        by_slot: dict[tuple[str, int], list[Mapping[str, Any]]] = {}
        strays = []
        for pod in pods:
            key = podstate.slot(pod)
            if key is None:
                strays.append(pod)
            else:
                by_slot.setdefault(key, []).append(pod)
        return cls(by_slot, strays)

    def all(self) -> list[Mapping[str, Any]]:
        return [p for pods in self.by_slot.values() for p in pods] + self.strays


class PlanDraft:
    """A plan being written for one (defaulted) job.

    `status` is the status being computed (its conditions are `conditions`, put back into it when
    the plan is finished); `out` receives creates, deletes, events and requeues. `pending_deletes`
    holds UIDs of pods already deleted whose deletion the cache has not shown yet."""

    def __init__(
        self,
        job: Mapping[str, Any],
        pods: list[Mapping[str, Any]],
        service: Mapping[str, Any] | None,
        status: dict[str, Any],
        now: datetime,
        pending_deletes: frozenset[str] = frozenset(),
        out: Plan | None = None,
    ) -> None:
        self.job = job
        self.spec = job["spec"]
        self.name = job["metadata"]["name"]
        self.kind = str(job.get("kind") or "TensorFlowJob")
        self.observed = Observed.sort(pods)
        self.service = service
        self.now = now
        self.stamp = format_time(now)
        self.pending_deletes = pending_deletes
        self.status = status
        self.conditions = cond.copy_conditions(status)
        self.out = out if out is not None else Plan()
        self.deleting: set[str] = {podstate.uid(d.pod) for d in self.out.delete_pods}  # pod UIDs this plan deletes

    # ---- conditions ------------------------------------------------------------------------------

    def condition(self, kind: str, value: bool, reason: str, message: str) -> bool:
        return cond.set_condition(self.conditions, kind, value, reason, message, self.stamp)

    def condition_false(self, kind: str, reason: str, message: str) -> bool:
        return cond.set_false_if_present(self.conditions, kind, reason, message, self.stamp)

    # ---- pods ------------------------------------------------------------------------------------

    def live_pods(self) -> list[Mapping[str, Any]]:
        return [p for p in self.observed.all()
                if not podstate.is_terminating(p) and podstate.uid(p) not in self.deleting
                and podstate.uid(p) not in self.pending_deletes]

    def delete(self, pod: Mapping[str, Any], reason: str, force: bool = False) -> None:
        pod_uid = podstate.uid(pod)
        # A UID still pending was deleted by us and the cache has not caught up. (The informer
        # lowers a graceful delete's expectation as soon as the pod shows its deletionTimestamp,
        # so a terminating pod is only still pending when it was already force-deleted.)
        if pod_uid in self.deleting or pod_uid in self.pending_deletes:
            return
        self.deleting.add(pod_uid)
        self.out.delete_pods.append(PodDeletion(pod, reason, force))

    # ---- finishing -------------------------------------------------------------------------------

    def fail(self, reason: str, message: str) -> None:
        """Fail the job for good: Failed True, Running and Restarting False, the completion time, a
        Warning event, its active pods deleted, and a requeue for its TTL."""
        self.condition(cond.FAILED, True, reason, message)
        self.condition_false(cond.RUNNING, reason, message)
        self.condition_false(cond.RESTARTING, reason, message)
        self.status["completionTime"] = self.stamp
        self.out.events.append(Event("Warning", reason, message))
        self.clean_up(succeeded=False)
        self.requeue_for_ttl()

    def clean_up(self, succeeded: bool) -> None:
        """Failed jobs delete active pods; finished pods then follow cleanPodPolicy."""
        policy = self.spec.get("cleanPodPolicy", CLEAN_POD_POLICY)
        for pod in self.live_pods():
            still_running = podstate.is_active(pod) and (policy != "None" or not succeeded)
            if still_running or policy == "All":
                self.delete(pod, "JobFinished")
        if policy == "All" and self.service is not None and not self.service["metadata"].get("deletionTimestamp"):
            self.out.delete_service = self.service

    def requeue_for_ttl(self) -> None:
        ttl = self.spec.get("ttlSecondsAfterFinished")
        if isinstance(ttl, int):
            self.out.requeue_in(float(ttl))
