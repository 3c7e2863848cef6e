"""Kueue in the reconcile loop: decide whether a queued job may have pods, and keep its Workload in step.

`controller/kueue/protocol.py` holds the protocol as pure functions; this module does the reads and writes
around one reconcile. Before planning, `KueueGate.before_plan(job)` makes sure the job's Workload
exists and matches the job, and answers either "run this (flavoured) job" or "hold it, for this
reason". After planning, `after_plan(...)` finishes the Workload when the job is terminal (which
releases the quota at once) and clears an evicted Workload's admission once the job has no active
pods (Kueue frees the quota only then, and re-queues it itself). A job its user suspends holds no
quota: its Workload is deactivated (created inactive, for a job created suspended) and reactivated on
resume (`controller.kueue.suspension`).

Workloads are created without Kueue's `resource-in-use` finalizer: the job's controller owner
reference lets garbage collection delete the Workload with the job, and Kueue releases quota on the
Workload's deletion, so no finalizer needs removing (and none can leak if the operator is down).

Both kinds go through here: TensorFlowJobs always, Kubeflow TFJobs when the operator queues them
(`queues_tfjobs`, see `controller.kueue.tfjobs`, which also gives a TFJob's Workload Kueue's identity
for it and adopts one Kueue's own integration left). Every Workload asks for the topology its role
templates' annotations name, and admitted pods wait behind Kueue's topology gate when placed by
topology (`controller.kueue.topology`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import structlog

from controller.job.kinds import JobKind
from controller.kueue import protocol as kueue
from controller.kueue import suspension, tfjobs, topology
from kube import ApiError, Kube, resource_path
from kube.clock import Clock
from kube.retry import retry_transient
from tfjob_api import conditions as cond
from tfjob_api import kinds as api_kinds
from tfjob_api.kubeflow import REPLICA_INDEX_LABEL as KUBEFLOW_INDEX_LABEL
from tfjob_api.names import REPLICA_INDEX_LABEL
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
        queues_tfjobs: bool = False,
    ) -> None:
        self.kube = kube
        self.queues_tfjobs = queues_tfjobs  # Kueue's own TFJob integration is off: TFJobs queue here
        self.workload_of = workload_of  # job uid → its Workload (informer cache)
        self.flavor = flavor  # ResourceFlavor name → object (informer cache)
        self.clock = clock

    def queues(self, kind: JobKind) -> bool:
        """Whether jobs of this kind queue through this gate."""
        return kind.kueue_gate or (self.queues_tfjobs and kind.name == api_kinds.TFJOB.name)

    def before_plan(self, job: Mapping[str, Any]) -> Decision:
        stored_workload = self.workload_of(job["metadata"]["uid"])
        if _terminal(job):
            return Decision(job, None, stored_workload)
        model = job
        held = suspension.user_suspended(job, stored_workload)  # the user's suspension: no quota either
        if tfjobs.is_tfjob(job):
            job = tfjobs.run_by_admission(job)
            if held:
                job = {**job, "spec": {**job["spec"], "suspend": True}}
        try:
            podsets = self._podsets(job)
        except topology.TopologyRequestError as error:
            return Decision(job, ("InvalidTopologyRequest", str(error)), stored_workload)
        if stored_workload is None:
            self._create(job, podsets, model)
            return Decision(job, None if held else kueue.waiting_message(job, None), None)
        self._keep_in_step(model, stored_workload)
        workload = tfjobs.as_roles(stored_workload, job) if tfjobs.is_tfjob(job) else stored_workload
        if held:  # the planner suspends it for its user; its Workload only has to describe it
            if not kueue.workload_matches(job, workload):
                self._replace(workload, kueue.admission(workload).quota_reserved, podsets)
            return Decision(job, None, stored_workload)
        decision = self._decide(job, workload, podsets)
        return Decision(decision.job, decision.gate, stored_workload)

    def _decide(self, job: Mapping[str, Any], workload: Mapping[str, Any], podsets: list[dict[str, Any]]) -> Decision:
        """Run (flavoured, gated where placed by topology) or hold the job, given its Workload (pod sets
        named by role) and the pod sets it would have now."""
        info = kueue.admission(workload)
        if not kueue.workload_matches(job, workload):
            self._replace(workload, info.quota_reserved, podsets)
            return Decision(job, ("WaitingForAdmission", "the job changed; its Workload is being updated"),
                            workload)
        if not info.can_run:
            return Decision(job, suspension.waiting_message(job, workload), workload)
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
        flavored = topology.gate_assigned_roles(flavored, workload)
        if tfjobs.is_tfjob(job):
            tfjobs.podset_label_fix(flavored, job)
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

    def _create(self, job: Mapping[str, Any], podsets: list[dict[str, Any]],
                model: Mapping[str, Any] | None = None) -> None:
        """Create the Workload of `job` (as planned); given the job's `model` (its suspend flag as
        stored), inactive while its user suspends it."""
        priority, ref = self._priority(job)
        body = kueue.build_workload(job, priority, ref)
        if tfjobs.is_tfjob(job):
            body = tfjobs.for_tfjob(body, job, api_kinds.TFJOB.api_version)
        body["spec"]["podSets"] = podsets
        if model is not None:
            body = suspension.new_workload(body, model)
        try:
            retry_transient(self.kube.create)(kueue.workload_path(body["metadata"]["namespace"]), body)
        except ApiError as error:
            if not error.already_exists:
                raise

    def _replace(self, workload: Mapping[str, Any], reserved: bool, podsets: list[dict[str, Any]]) -> None:
        meta = workload["metadata"]
        path = kueue.workload_path(meta["namespace"], meta["name"])
        try:
            if reserved:  # holds quota for the old shape: delete it; the next pass creates a new one
                retry_transient(self.kube.delete)(path, uid=meta["uid"])
            else:
                retry_transient(self.kube.patch)(path, {"metadata": {"resourceVersion": meta["resourceVersion"]},
                                                        "spec": {"podSets": podsets}})
        except ApiError as error:
            if not (error.not_found or error.conflict):
                raise

    def _podsets(self, job: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The podSets of the Workload the job would get now (with its topology requests and names)."""
        body = {"spec": {"podSets": kueue.podsets(job)}}
        if tfjobs.is_tfjob(job):
            named = tfjobs.podset_names(job)
            body = topology.with_topology_requests(body, KUBEFLOW_INDEX_LABEL)
            for podset in body["spec"]["podSets"]:
                podset["name"] = named.get(podset["name"], podset["name"])
        else:
            body = topology.with_topology_requests(body, REPLICA_INDEX_LABEL)
        return list(body["spec"]["podSets"])

    def _keep_in_step(self, model: Mapping[str, Any], workload: Mapping[str, Any]) -> None:
        """Deactivate the Workload while the job's user suspends it, reactivate it on resume, and adopt one
        Kueue's TFJob integration left (`controller.kueue.suspension.workload_patch`)."""
        patch = suspension.workload_patch(model, workload)
        if patch is None:
            return
        meta = workload["metadata"]
        try:
            retry_transient(self.kube.patch)(kueue.workload_path(meta["namespace"], meta["name"]), patch)
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


def decide_tfjobs(kube: Kube, mode: tfjobs.Mode) -> bool:
    """Whether the operator queues TFJobs itself (`--kueue-tfjob`); `auto` reads Kueue's ConfigMap
    when the operator may (asked first, so an install without that grant -- the shipped roles, a
    namespaced install -- makes no refused call: its 403s mean a missing grant, checked by tests)."""
    config_map = None
    if mode == "auto" and may_read_kueue_config(kube):
        try:
            config_map = kube.get(resource_path("", "v1", "configmaps", tfjobs.CONFIG_NAMESPACE, tfjobs.CONFIG_MAP))
        except ApiError as error:
            if not (error.not_found or error.status in (401, 403)):
                raise
    queues, why = tfjobs.queues_tfjobs(mode, config_map)
    log.info("queueing TFJobs through " + ("the operator" if queues else "Kueue's TFJob integration"), why=why)
    return queues


def may_read_kueue_config(kube: Kube) -> bool:
    """Whether this operator's identity may read Kueue's ConfigMap: a SelfSubjectAccessReview, which
    every authenticated account may create. An answer that cannot be had counts as no."""
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": {
        "resourceAttributes": {"verb": "get", "resource": "configmaps", "namespace": tfjobs.CONFIG_NAMESPACE,
                               "name": tfjobs.CONFIG_MAP}}}
    try:
        answer = kube.create("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", review)
    except ApiError:
        return False
    return bool((answer.get("status") or {}).get("allowed"))


def _terminal(job: Mapping[str, Any]) -> bool:
    conditions = (job.get("status") or {}).get("conditions") or []
    return cond.is_true(conditions, cond.SUCCEEDED) or cond.is_true(conditions, cond.FAILED)
