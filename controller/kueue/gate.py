"""Kueue in the reconcile loop: decide whether a queued job may have pods, and keep its Workload in step.

`controller/kueue/protocol.py` holds the protocol as pure functions; this module does the reads and writes
around one reconcile. Before planning, `KueueGate.before_plan(job)` makes sure the job's Workload
exists and matches the job, and answers either "run this (flavoured) job" or "hold it, for this
reason". After planning, `after_plan(...)` finishes the Workload when the job is terminal (which
releases the quota at once) and clears an evicted Workload's admission once the job has no active
pods (Kueue frees the quota only then, and re-queues it itself).

Workloads are created without Kueue's `resource-in-use` finalizer: the job's controller owner
reference lets garbage collection delete the Workload with the job, and Kueue releases quota on the
Workload's deletion, so no finalizer needs removing (and none can leak if the operator is down).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import structlog

from controller.kueue import protocol as kueue
from kube import ApiError, Kube, resource_path
from kube.clock import Clock
from kube.retry import retry_transient
from tfjob_api import conditions as cond
from tfjob_api.timeutil import format_time

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Decision:
    job: Mapping[str, Any]  # what to plan with: flavoured when admitted
    gate: tuple[str, str] | None  # (reason, message) while the job must have no pods
    workload: Mapping[str, Any] | None


class KueueGate:
    def __init__(
        self,
        kube: Kube,
        workload_of: Callable[[str], Mapping[str, Any] | None],
        flavor: Callable[[str], Mapping[str, Any] | None],
        clock: Clock,
    ) -> None:
        self.kube = kube
        self.workload_of = workload_of  # job uid → its Workload (informer cache)
        self.flavor = flavor  # ResourceFlavor name → object (informer cache)
        self.clock = clock

    def before_plan(self, job: Mapping[str, Any]) -> Decision:
        workload = self.workload_of(job["metadata"]["uid"])
        terminal = _terminal(job)
        if terminal:
            return Decision(job, None, workload)
        if workload is None:
            self._create(job)
            return Decision(job, kueue.waiting_message(job, None), None)
        info = kueue.admission(workload)
        if not kueue.workload_matches(job, workload):
            self._replace(job, workload, info.quota_reserved)
            return Decision(job, ("WaitingForAdmission", "the job changed; its Workload is being updated"),
                            workload)
        if not info.can_run:
            return Decision(job, kueue.waiting_message(job, workload), workload)
        flavors = {name: self.flavor(name) for name in info.flavor_names}
        missing = [name for name, obj in flavors.items() if obj is None]
        if missing:
            return Decision(job, ("WaitingForAdmission", f"ResourceFlavor(s) {', '.join(missing)} not found yet"),
                            workload)
        try:
            flavored = kueue.apply_flavors(job, workload, kueue.flavors_for_roles(workload, flavors))  # type: ignore[arg-type]
        except kueue.FlavorConflict as error:
            self._patch_status(workload, kueue.finish_status(workload, False, str(error), self._now(),
                                                             reason="FailedToStart"))
            return Decision(job, ("FailedToStart", str(error)), workload)
        return Decision(flavored, None, workload)

    def after_plan(self, job: Mapping[str, Any], status: Mapping[str, Any], workload: Mapping[str, Any] | None,
                   active_pods: int) -> None:
        if workload is None:
            return
        conditions = status.get("conditions") or []
        if cond.is_true(conditions, cond.SUCCEEDED) or cond.is_true(conditions, cond.FAILED):
            succeeded = cond.is_true(conditions, cond.SUCCEEDED)
            message = (cond.find(conditions, cond.SUCCEEDED if succeeded else cond.FAILED) or {}).get("message", "")
            self._patch_status(workload, kueue.finish_status(workload, succeeded, str(message), self._now()))
            return
        if kueue.admission(workload).must_clear and active_pods == 0:
            self._patch_status(workload, kueue.clear_admission_status(workload, self._now()))

    # ---- writes ----------------------------------------------------------------------------------

    def _create(self, job: Mapping[str, Any]) -> None:
        priority, ref = self._priority(job)
        body = kueue.build_workload(job, priority, ref)
        try:
            retry_transient(self.kube.create)(kueue.workload_path(body["metadata"]["namespace"]), body)
        except ApiError as error:
            if not error.already_exists:
                raise

    def _replace(self, job: Mapping[str, Any], workload: Mapping[str, Any], reserved: bool) -> None:
        meta = workload["metadata"]
        path = kueue.workload_path(meta["namespace"], meta["name"])
        try:
            if reserved:  # holds quota for the old shape: delete it; the next pass creates a new one
                retry_transient(self.kube.delete)(path, uid=meta["uid"])
            else:
                retry_transient(self.kube.patch)(path, {"metadata": {"resourceVersion": meta["resourceVersion"]},
                                                        "spec": {"podSets": kueue.podsets(job)}})
        except ApiError as error:
            if not (error.not_found or error.conflict):
                raise

    def _patch_status(self, workload: Mapping[str, Any], patch: dict[str, Any] | None) -> None:
        if patch is None:
            return
        meta = workload["metadata"]
        try:
            retry_transient(self.kube.patch)(kueue.workload_path(meta["namespace"], meta["name"], "status"), patch)
        except ApiError as error:
            if not (error.not_found or error.conflict):  # a conflict: the next event brings a fresh copy
                raise

    def _priority(self, job: Mapping[str, Any]) -> tuple[int | None, dict[str, str] | None]:
        name = kueue.priority_class_name(job)
        if not name:
            return None, None
        try:
            found = self.kube.get(resource_path(kueue.GROUP, kueue.VERSION, "workloadpriorityclasses", None, name))
        except ApiError as error:
            if error.not_found:
                log.warning("WorkloadPriorityClass not found; queuing without priority", priority_class=name)
                return None, None
            raise
        return int(found.get("value") or 0), kueue.priority_class_ref(name)

    def _now(self) -> str:
        return format_time(self.clock.wall())


def _terminal(job: Mapping[str, Any]) -> bool:
    conditions = (job.get("status") or {}).get("conditions") or []
    return cond.is_true(conditions, cond.SUCCEEDED) or cond.is_true(conditions, cond.FAILED)
