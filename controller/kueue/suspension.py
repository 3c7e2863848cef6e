"""A user's suspension of a queued job, in Kueue's terms: its Workload is deactivated, its quota freed.

A queued job whose user sets `spec.suspend: true` (a TFJob: `runPolicy.suspend`) has no pods, so it
must hold no quota either, and a job created suspended must not be admitted while it is. Kueue's own
job integrations own their jobs' suspend flag (they unsuspend an admitted job again), and the one way
Kueue gives a user to stop a queued job is the Workload's `spec.active: false`: Kueue then evicts it
(reason `Deactivated`), the job's owner clears the admission once no pod is active (Kueue frees the
quota only then; `protocol.clear_admission_status`), and an inactive Workload is never admitted. Setting
`spec.active` back to true re-queues it. So the operator translates the user's suspension into exactly
that, as pure functions here (the gate sends the patch; docs/design.md §4 says why deactivating, and
not clearing the admission alone, which Kueue would simply re-admit):

* `user_suspended(job, workload)`: whether the job's suspend flag is its user's. It is not on a
  MultiKueue worker's copy (its suspension is the manager's, and the copy runs by admission), nor on
  a TFJob whose flag Kueue's own TFJob integration set before the operator took it over: that
  integration suspends every TFJob it queues, so a waiting TFJob adopted at switch-over carries
  `runPolicy.suspend: true` that no user asked for. The Workload remembers that (`QUEUE_SUSPEND`,
  written when the operator adopts it, dropped once the flag is false), so the user can still suspend
  the job later by setting the flag false and then true.
* `new_workload(body, job)`: a job created suspended gets its Workload inactive from the start.
* `waiting_message(job, workload)`: once reactivated, the job waits as any queued job, not as evicted.
* `workload_patch(job, workload)`: one merge patch, or None, that adopts a Workload Kueue's TFJob
  integration left (drops its finalizer, marks its suspend flag as the queue's) and deactivates the
  Workload while the user suspends the job, marking it `DEACTIVATED` so that a resume reactivates it.
  A Workload someone else deactivated (a user with `spec.active: false`, or Kueue itself) carries no
  mark and stays inactive on resume: that deactivation is not the operator's to undo.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from controller.kueue import protocol as kueue
from controller.kueue import tfjobs
from tfjob_api.names import PREFIX

PREBUILT_WORKLOAD_LABEL = f"{kueue.GROUP}/prebuilt-workload-name"
DEACTIVATED = f"{PREFIX}/deactivated-by-suspend"
"""On a Workload the operator deactivated because its job's user suspended the job."""
DEACTIVATED_REASON = "Deactivated"
"""The reason of Kueue's Evicted condition for an inactive Workload (also `DeactivatedDueTo<cause>`)."""
QUEUE_SUSPEND = f"{PREFIX}/suspend-set-by-kueue"
"""On an adopted TFJob's Workload: the TFJob's `runPolicy.suspend: true` was Kueue's TFJob integration's."""


def _meta(workload: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return (workload or {}).get("metadata") or {}


def _marked(workload: Mapping[str, Any] | None, annotation: str) -> bool:
    return (_meta(workload).get("annotations") or {}).get(annotation) == "true"


def is_active(workload: Mapping[str, Any]) -> bool:
    """The Workload's `spec.active` (Kueue's default: true)."""
    return (workload.get("spec") or {}).get("active") is not False


def suspend_is_kueues(job: Mapping[str, Any], workload: Mapping[str, Any] | None) -> bool:
    """Whether a TFJob's suspend flag was set by Kueue's own TFJob integration: its Workload still
    carries that integration's finalizer (not adopted yet) or the operator's mark from the adoption."""
    if not tfjobs.is_tfjob(job):
        return False
    return tfjobs.RESOURCE_IN_USE in (_meta(workload).get("finalizers") or []) or _marked(workload, QUEUE_SUSPEND)


def _copy(job: Mapping[str, Any]) -> bool:
    """A MultiKueue worker's copy of a job (it runs under its manager's prebuilt Workload)."""
    return bool(((job.get("metadata") or {}).get("labels") or {}).get(PREBUILT_WORKLOAD_LABEL))


def user_suspended(job: Mapping[str, Any], workload: Mapping[str, Any] | None) -> bool:
    """Whether the job's user suspends it (see the module docstring); `job` is the job's model, whose
    `spec.suspend` is a TFJob's `runPolicy.suspend`."""
    if not job["spec"].get("suspend") or _copy(job):
        return False
    return not suspend_is_kueues(job, workload)


def new_workload(body: Mapping[str, Any], job: Mapping[str, Any]) -> dict[str, Any]:
    """The Workload to create for the job: `body` as is, or inactive (and marked) while its user
    suspends it, so that it is never admitted then. A new dict."""
    result = copy.deepcopy(dict(body))
    if user_suspended(job, None):
        result["spec"]["active"] = False
        result["metadata"].setdefault("annotations", {})[DEACTIVATED] = "true"
    return result


def workload_patch(job: Mapping[str, Any], workload: Mapping[str, Any]) -> dict[str, Any] | None:
    """The merge patch that keeps the job's Workload in step with its user's suspension (and adopts one
    Kueue's TFJob integration left), guarded by the Workload's resourceVersion; None when it is in step."""
    meta = _meta(workload)
    patch_meta: dict[str, Any] = {}
    annotations: dict[str, str | None] = {}
    suspend = bool(job["spec"].get("suspend"))
    adoption = tfjobs.finalizer_patch(workload)
    if adoption is not None:  # adopting it from Kueue's TFJob integration
        patch_meta["finalizers"] = adoption["metadata"]["finalizers"]
        if tfjobs.is_tfjob(job) and suspend and not _copy(job):
            annotations[QUEUE_SUSPEND] = "true"
    elif _marked(workload, QUEUE_SUSPEND) and not suspend:
        annotations[QUEUE_SUSPEND] = None  # from now on the flag is the user's
    spec: dict[str, Any] = {}
    held = user_suspended(job, workload)
    if held and is_active(workload):
        spec["active"] = False
        annotations[DEACTIVATED] = "true"
    elif not held and not is_active(workload) and _marked(workload, DEACTIVATED):
        spec["active"] = True
        annotations[DEACTIVATED] = None
    if not patch_meta and not annotations and not spec:
        return None
    if annotations:
        patch_meta["annotations"] = annotations
    patch: dict[str, Any] = {"metadata": {"resourceVersion": meta.get("resourceVersion"), **patch_meta}}
    if spec:
        patch["spec"] = spec
    return patch


def waiting_message(job: Mapping[str, Any], workload: Mapping[str, Any]) -> tuple[str, str]:
    """`protocol.waiting_message`, except for a Workload reactivated after a deactivation and not admitted
    again yet: Kueue leaves its `Evicted` (reason `Deactivated`) True until the next admission, but the
    job is simply queued again, so it waits as any queued job does, with Kueue's reason."""
    info = kueue.admission(workload)
    if is_active(workload) and info.evicted and info.eviction_reason.startswith(DEACTIVATED_REASON):
        status = dict(workload.get("status") or {})
        status["conditions"] = [c for c in status.get("conditions") or [] if c.get("type") != kueue.EVICTED]
        workload = {**workload, "status": status}
    return kueue.waiting_message(job, workload)
