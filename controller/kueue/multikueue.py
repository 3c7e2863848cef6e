"""Kueue's MultiKueue on both sides of a dispatch: the manager's job and the worker's copy.

MultiKueue (Kueue v0.17.0, pkg/controller/admissionchecks/multikueue/) admits a job on a *manager*
cluster and runs it on a *worker* cluster. For a TensorFlowJob it goes through its generic adapter
(externalframeworks/adapter.go), keyed on `spec.managedBy: kueue.x-k8s.io/multikueue`:

* **On the manager** the job keeps no pods: Kueue copies its Workload to a worker, creates a copy
  of the job there, and copies the worker's whole `status` back over the manager's. Kueue has no
  integration of its own for TensorFlowJob, so the operator still plays the job-owner's part of the
  Workload protocol, and nothing more (`MultiKueueGate.keep_dispatched`): it creates the Workload
  (MultiKueue finds the job through its controller owner reference), and after an eviction (a
  worker lost) clears its admission, which only the job's owner does and without which Kueue never
  re-dispatches. It never writes the job's status, creates nothing else, reads no progress and
  applies no TTL: the status is the worker's.
* **On a worker** the copy arrives without `managedBy` and with the label
  `kueue.x-k8s.io/prebuilt-workload-name`, and its Workload (the manager's, copied) is already
  there. The copy must run under that Workload, never one of its own (`MultiKueueGate.before_plan`):
  it is adopted as Kueue's own job reconciler does (jobframework `EnsurePrebuiltWorkloadOwnership`:
  a controller owner reference to the job and the `kueue.x-k8s.io/job-uid` label, so Kueue's
  garbage collection of worker objects finds the job, and the operator's Workload cache finds the
  Workload by the job's UID), and from then on it is the job's Workload like any other -- except that
  it is never replaced: one that no longer matches the job is finished (`OutOfSync`), as Kueue does.
  A TFJob's copy is dispatched by Kueue's built-in Kubeflow adapter (so the manager keeps Kueue's
  TFJob integration); it comes here when the worker's operator queues TFJobs (that integration off
  on the worker), and its prebuilt Workload, made by the manager's integration, names its podSets by
  replica type: `copy_matches` reads them as roles.

The pure rules are functions here; `MultiKueueGate` extends `controller.kueue.gate.KueueGate` with
the reads and writes (the gate serves both sides; a cluster that is neither sees no difference).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import structlog

from controller.kueue import protocol as kueue
from controller.kueue import suspension, tfjobs, topology
from controller.kueue.gate import Decision, KueueGate
from kube import ApiError, Kube
from kube.clock import Clock
from kube.retry import retry_transient
from tfjob_api import conditions as cond
from tfjob_api.names import API_VERSION as JOB_API_VERSION
from tfjob_api.names import KIND as JOB_KIND

log = structlog.get_logger(__name__)

PREBUILT_WORKLOAD_LABEL = suspension.PREBUILT_WORKLOAD_LABEL
ORIGIN_LABEL = f"{kueue.GROUP}/multikueue-origin"
CONTROLLER_NAME = f"{kueue.GROUP}/multikueue"
"""The value of `managedBy` that hands a job to MultiKueue (and the admission check's controllerName)."""

WAITING_FOR_WORKLOAD = "WaitingForWorkload"
OUT_OF_SYNC = "OutOfSync"
OUT_OF_SYNC_MESSAGE = "The prebuilt workload is out of sync with its user job"  # Kueue's words


def prebuilt_workload_name(job: Mapping[str, Any]) -> str:
    """The Workload a job must run under ('' when it names none: the operator creates its own)."""
    return str(((job.get("metadata") or {}).get("labels") or {}).get(PREBUILT_WORKLOAD_LABEL) or "")


def owner_reference(job: Mapping[str, Any]) -> dict[str, Any]:
    """The controller owner reference a Workload of this job carries (its own kind, TensorFlowJob by default)."""
    metadata = job["metadata"]
    return {"apiVersion": str(job.get("apiVersion") or JOB_API_VERSION), "kind": str(job.get("kind") or JOB_KIND),
            "name": metadata["name"], "uid": metadata.get("uid", ""), "controller": True,
            "blockOwnerDeletion": True}


def adopted(workload: Mapping[str, Any], job: Mapping[str, Any]) -> bool:
    """Whether the Workload's controller is this job incarnation (by UID)."""
    uid = job["metadata"].get("uid")
    return any(ref.get("controller") and ref.get("uid") == uid
               for ref in (workload.get("metadata") or {}).get("ownerReferences") or [])


def adoption_patch(workload: Mapping[str, Any], job: Mapping[str, Any]) -> dict[str, Any] | None:
    """The merge patch that makes the job the prebuilt Workload's controller, as Kueue's own job
    reconciler does: the controller owner reference (kept beside any others) and the
    `kueue.x-k8s.io/job-uid` label; guarded by the Workload's resourceVersion. None when already
    adopted; ValueError when another controller holds it (a Workload has one controller)."""
    if adopted(workload, job):
        return None
    metadata = workload.get("metadata") or {}
    references = [dict(ref) for ref in metadata.get("ownerReferences") or []]
    holder = next((ref for ref in references if ref.get("controller")), None)
    if holder is not None:
        raise ValueError(f"the prebuilt Workload {metadata.get('name')} is controlled by "
                         f"{holder.get('kind')} {holder.get('name')}, not by this job")
    return {"metadata": {"resourceVersion": metadata.get("resourceVersion"),
                         "labels": {kueue.JOB_UID_LABEL: job["metadata"].get("uid", "")},
                         "ownerReferences": [*references, owner_reference(job)]}}


def copy_matches(job: Mapping[str, Any], workload: Mapping[str, Any]) -> bool:
    """Whether the adopted prebuilt Workload still describes the worker's copy. A TFJob's Workload comes
    from Kueue's TFJob integration on the manager, its podSets named by replica type (`master` for the
    model's `chief`): it is read by role, and the copy's suspend flag is left to admission, as the gate
    reads the Workloads it makes itself (`controller.kueue.tfjobs`)."""
    if tfjobs.is_tfjob(job):
        job = tfjobs.run_by_admission(job)
        workload = tfjobs.as_roles(workload, job)
    return kueue.workload_matches(job, workload)


def placement(workload: Mapping[str, Any] | None) -> str:
    """The worker cluster a dispatched job runs on, as the manager's Workload says (`status.clusterName`,
    set once a worker reserved quota); '' while it is not placed."""
    return str(((workload or {}).get("status") or {}).get("clusterName") or "")


class MultiKueueGate(KueueGate):
    """The Kueue gate, plus a worker's prebuilt Workloads and a manager's dispatched jobs."""

    def __init__(
        self,
        kube: Kube,
        workload_of: Callable[[str], Mapping[str, Any] | None],
        flavor: Callable[[str], Mapping[str, Any] | None],
        clock: Clock,
        workload_named: Callable[[str, str], Mapping[str, Any] | None],
        queues_tfjobs: bool = False,
    ) -> None:
        super().__init__(kube, workload_of, flavor, clock, queues_tfjobs)
        self.workload_named = workload_named  # (namespace, name) → Workload (informer cache)

    def before_plan(self, job: Mapping[str, Any]) -> Decision:
        """A job naming a prebuilt Workload is held until it has adopted it; then, and for every other
        job, the Kueue gate decides."""
        prebuilt = prebuilt_workload_name(job)
        if not prebuilt:
            return super().before_plan(job)
        adopted_workload = self.workload_of(job["metadata"]["uid"])
        if adopted_workload is not None:
            stale = not copy_matches(job, adopted_workload)
            if stale and not _terminal(job) and not kueue.admission(adopted_workload).finished:
                # Never replaced (it is the manager's): finished, as Kueue's own job reconciler does.
                self._patch_status(adopted_workload, kueue.finish_status(
                    adopted_workload, False, OUT_OF_SYNC_MESSAGE, self._now(), reason=OUT_OF_SYNC))
                return Decision(job, (kueue.JOB_WORKLOAD_FINISHED, OUT_OF_SYNC_MESSAGE), adopted_workload)
            return super().before_plan(job)
        workload = self.workload_named(job["metadata"]["namespace"], prebuilt)
        if workload is None:
            return Decision(job, (WAITING_FOR_WORKLOAD, f"waiting for its prebuilt Workload {prebuilt}"), None)
        try:
            patch = adoption_patch(workload, job)
        except ValueError as error:
            return Decision(job, (WAITING_FOR_WORKLOAD, str(error)), None)
        if patch is not None:
            self._write(kueue.workload_path(job["metadata"]["namespace"], prebuilt), patch)
        return Decision(job, (WAITING_FOR_WORKLOAD, f"adopting its prebuilt Workload {prebuilt}"), None)

    def keep_dispatched(self, job: Mapping[str, Any]) -> None:
        """A job MultiKueue runs elsewhere, on its manager: keep its Workload (create it; clear its
        admission after an eviction, which has no pods to wait for here). Nothing else."""
        if not kueue.is_queued(job) or job["metadata"].get("deletionTimestamp"):
            return
        workload = self.workload_of(job["metadata"]["uid"])
        if workload is None:
            if not _terminal(job):
                try:
                    self._create(job, self._podsets(job))
                except topology.TopologyRequestError as error:  # no Workload, so never dispatched
                    log.warning("a dispatched job's topology request is invalid; it is not queued",
                                job=job["metadata"]["name"], namespace=job["metadata"]["namespace"], error=str(error))
            return
        if kueue.admission(workload).must_clear:
            self._patch_status(workload, kueue.clear_admission_status(workload, self._now()))

    def _write(self, path: str, patch: dict[str, Any]) -> None:
        try:
            retry_transient(self.kube.patch)(path, patch)
        except ApiError as error:
            if not (error.not_found or error.conflict):  # the next event brings a fresh copy
                raise


def _terminal(job: Mapping[str, Any]) -> bool:
    conditions = (job.get("status") or {}).get("conditions") or []
    return cond.is_true(conditions, cond.SUCCEEDED) or cond.is_true(conditions, cond.FAILED)
