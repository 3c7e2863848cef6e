"""Kueue's Workload protocol for TensorFlowJobs, as pure functions over plain dicts.

Kueue (sigs.k8s.io/kueue, v0.17.0, API `kueue.x-k8s.io/v1beta2`) integrates Kubeflow's TFJob
natively but knows nothing about `TensorFlowJob`, so the operator plays the part of Kueue's generic
job reconciler (pkg/controller/jobframework/reconciler.go) itself. This module holds every rule of
that protocol and no I/O: the reconciler reads the job and its Workload from caches, calls these
functions and sends what they return (docs/design.md §4, "Queueing with Kueue", describes it).

The loop, for a job carrying the `kueue.x-k8s.io/queue-name` label (`is_queued`):

1. The job is kept suspended (no pods) until its Workload is admitted.
2. No Workload yet (and no active pods): create `build_workload(job, priority, ref)`, named
   `workload_name(job)`. A Workload that no longer `workload_matches` the job (e.g. the job was
   scaled while suspended) is updated in place when it holds no quota, else deleted and recreated.
3. Read the Workload with `admission(workload)`:
   * `can_run` (Admitted, not Evicted, not Finished): fetch the ResourceFlavors it names
     (`admission.flavor_names`), build pods from `apply_flavors(job, workload, flavors_by_role)`.
   * `evicted` (preempted, deactivated, ...): stop the job (delete its pods); once no pod is active,
     patch the Workload's status with `clear_admission_status(workload, now)`. Kueue frees the quota
     only then, and re-queues the Workload (preemption, node failure) on its own.
   * otherwise it is waiting: `waiting_message(job, workload)` says why, for the job's
     `Suspended` condition.
4. The job finished: patch `finish_status(workload, succeeded, message, now)` (this releases the
   quota at once). A deleted job's Workload goes with it: garbage collection deletes it through its
   owner reference (it carries no finalizer).

Every status patch here is a JSON merge patch for `.../workloads/<name>/status` carrying
`metadata.resourceVersion` (a 409 Conflict means: re-read and recompute) and the *full* conditions
list (merge patches replace lists). Kueue itself writes status by server-side apply; mixing the two
is what Kueue's own merge-patch mode does and works. `lastTransitionTime` changes only when a
condition's status flips, as `meta.SetStatusCondition` does.

Decisions worth knowing:

* PodSet templates are the **user's role templates** (containers untouched, so their
  `resources.requests` are what Kueue sums; Kueue itself treats limits as missing requests), plus
  the role's identity labels, `subdomain` and pod `restartPolicy`. Not the exact pods the builders
  make: the TF port and TF_CONFIG matter nothing to quota, and keeping operator-added details out
  means an operator upgrade never makes existing Workloads look stale (a mismatch stops a running job).
* Only v1beta2 is read and written: the base CRDs have no conversion webhook.
* Topology-aware scheduling (topology requests, the topology gate) is `topology.py`'s, a TFJob's
  Workload identity `tfjobs.py`'s (this one is full). Admission-check `podSetUpdates` are merged.
"""

from __future__ import annotations

import copy
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from controller.job.builders import POD_RESTART_POLICY
from tfconfig import ROLES, role_replicas
from tfjob_api.names import API_VERSION as JOB_API_VERSION
from tfjob_api.names import GROUP as JOB_GROUP
from tfjob_api.names import JOB_NAME_LABEL, REPLICA_TYPE_LABEL
from tfjob_api.names import KIND as JOB_KIND
from tfjob_api.timeutil import parse_time

GROUP = "kueue.x-k8s.io"
VERSION = "v1beta2"
API_VERSION = f"{GROUP}/{VERSION}"
WORKLOAD_KIND = "Workload"
WORKLOAD_PLURAL = "workloads"

# Labels and annotations (Kueue's pkg/controller/constants and apis/kueue/v1beta2/constants.go).
QUEUE_LABEL = f"{GROUP}/queue-name"
PRIORITY_CLASS_LABEL = f"{GROUP}/priority-class"
JOB_UID_LABEL = f"{GROUP}/job-uid"
PODSET_LABEL = f"{GROUP}/podset"
LOCAL_QUEUE_LABEL = f"{GROUP}/local-queue-name"
CLUSTER_QUEUE_LABEL = f"{GROUP}/cluster-queue-name"
WORKLOAD_ANNOTATION = f"{GROUP}/workload"

# Workload condition types and the reasons this module reads or writes.
QUOTA_RESERVED = "QuotaReserved"
ADMITTED = "Admitted"
EVICTED = "Evicted"
PREEMPTED = "Preempted"
REQUEUED = "Requeued"
FINISHED = "Finished"
REASON_PENDING = "Pending"
REASON_INADMISSIBLE = "Inadmissible"
REASON_NO_RESERVATION = "NoReservation"
REASON_NO_RESERVATION_UNSATISFIED_CHECKS = "NoReservationUnsatisfiedChecks"
EVICTED_BY_PREEMPTION = "Preempted"
EVICTED_DUE_TO_NODE_FAILURES = "NodeFailures"
FINISHED_SUCCEEDED = "Succeeded"
FINISHED_FAILED = "Failed"
FINISHED_FAILED_TO_START = "FailedToStart"

# Reasons of the job's `Suspended` condition while Kueue holds it (waiting_message).
WAITING_FOR_ADMISSION = "WaitingForAdmission"
JOB_PREEMPTED = "Preempted"
JOB_EVICTED = "Evicted"
JOB_INADMISSIBLE = "Inadmissible"
JOB_WORKLOAD_FINISHED = "WorkloadFinished"

_HASH_LENGTH = 5
_MAX_NAME_LENGTH = 253  # Kueue's default; the alpha ShortWorkloadNames gate (off) would use 63
_MAX_MESSAGE_LENGTH = 32768  # metav1.Condition.message
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


class FlavorConflict(ValueError):
    """An admitted flavor (or admission check) sets a nodeSelector key, label or annotation that the
    role's template already sets to another value. Permanent for this admission: Kueue's own job
    reconciler then finishes the Workload with reason `FailedToStart` and the error as message."""


# --------------------------------------------------------------------------- job side


def queue_name(job: Mapping[str, Any]) -> str:
    """The LocalQueue the job asks for ('' when it has no queue-name label)."""
    return str(((job.get("metadata") or {}).get("labels") or {}).get(QUEUE_LABEL) or "")


def is_queued(job: Mapping[str, Any]) -> bool:
    """True when Kueue manages the job: it has a non-empty `kueue.x-k8s.io/queue-name` label.
    (Kueue runs with manageJobsWithoutQueueName=false: unlabelled jobs are none of its business.)"""
    return bool(queue_name(job))


def priority_class_name(job: Mapping[str, Any]) -> str:
    """The WorkloadPriorityClass the job names in its `kueue.x-k8s.io/priority-class` label, or ''.
    The caller looks its `value` up and passes both to build_workload."""
    return str(((job.get("metadata") or {}).get("labels") or {}).get(PRIORITY_CLASS_LABEL) or "")


def priority_class_ref(name: str) -> dict[str, str]:
    """The `spec.priorityClassRef` of a Workload whose priority comes from WorkloadPriorityClass `name`."""
    return {"group": GROUP, "kind": "WorkloadPriorityClass", "name": name}


def workload_name(job: Mapping[str, Any]) -> str:
    """Kueue's name for the job's Workload (jobframework/workload_names.go):
    `tensorflowjob-<job name>` cut to 247 characters, `-`, and the first 5 hex digits of
    sha1("TensorFlowJob\\nkubeflow.org\\n<name>\\n<uid>"). Distinct per job incarnation (UID)."""
    metadata = job["metadata"]
    name = metadata["name"]
    prefix = f"{JOB_KIND.lower()}-{name}"[: _MAX_NAME_LENGTH - 1 - _HASH_LENGTH]
    digest = hashlib.sha1(f"{JOB_KIND}\n{JOB_GROUP}\n{name}\n{metadata.get('uid', '')}".encode()).hexdigest()
    return f"{prefix}-{digest[:_HASH_LENGTH]}"


def job_uid_selector(job: Mapping[str, Any]) -> str:
    """Label selector for the Workloads created for this job incarnation (also after it is deleted)."""
    return f"{JOB_UID_LABEL}={job['metadata'].get('uid', '')}"


def workload_path(namespace: str, name: str | None = None, subresource: str | None = None) -> str:
    """REST path of the Workloads of a namespace, one Workload, or its `status` subresource."""
    path = f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{WORKLOAD_PLURAL}"
    if name:
        path += f"/{name}"
        if subresource:
            path += f"/{subresource}"
    return path


def queued_roles(job: Mapping[str, Any]) -> list[str]:
    """The roles that become podSets: replicas > 0, in Kueue's Kubeflow order chief, ps, worker, evaluator."""
    return [role for role in ROLES if role_replicas(job["spec"], role) > 0]


def podset_template(job: Mapping[str, Any], role: str) -> dict[str, Any]:
    """The podSet template of one role: the role's template with only labels and annotations in its
    metadata, the role's identity labels (job-name, replica-type), `subdomain` and the pod
    restartPolicy the builders give. Containers are the user's, untouched (see the module docstring)."""
    job_name = job["metadata"]["name"]
    role_spec = job["spec"][role]
    template = copy.deepcopy(role_spec.get("template") or {})
    template_meta = template.get("metadata") or {}
    metadata: dict[str, Any] = {
        "labels": {**(template_meta.get("labels") or {}), JOB_NAME_LABEL: job_name, REPLICA_TYPE_LABEL: role},
    }
    if template_meta.get("annotations"):
        metadata["annotations"] = dict(template_meta["annotations"])
    spec = template.get("spec") or {}
    spec["subdomain"] = job_name
    spec["restartPolicy"] = POD_RESTART_POLICY[role_spec.get("restartPolicy", "OnFailure")]
    return {"metadata": metadata, "spec": spec}


def podsets(job: Mapping[str, Any]) -> list[dict[str, Any]]:
    """`spec.podSets` for the job: one per role with replicas > 0 (name = role, count = replicas)."""
    return [{"name": role, "count": role_replicas(job["spec"], role), "template": podset_template(job, role)}
            for role in queued_roles(job)]


def build_workload(
    job: Mapping[str, Any],
    priority: int | None = None,
    priority_class_ref: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The v1beta2 Workload to create for a queued job.

    Same namespace as the job; label `kueue.x-k8s.io/job-uid`; a controller owner reference to the
    job (garbage collection deletes the Workload with the job); `spec.queueName` from the job's label;
    `podsets(job)`; and, when given, `priority` and `priorityClassRef` (the CRD requires `priority`
    whenever a ref is set). No finalizer: Kueue's own integrations add `kueue.x-k8s.io/resource-in-use`
    and must remove it later; here the owner reference is enough, since garbage collection deletes the
    Workload with the job and Kueue releases its quota then, and nothing can leak while the operator
    is down.
    """
    if priority_class_ref is not None and priority is None:
        raise ValueError("a priorityClassRef needs its priority (the WorkloadPriorityClass value)")
    metadata = job["metadata"]
    uid = metadata.get("uid") or ""
    if not uid:
        raise ValueError("the job has no uid: a Workload is only built for a job read from the API server")
    queue = queue_name(job)
    if not queue:
        raise ValueError(f"the job has no {QUEUE_LABEL} label")
    spec: dict[str, Any] = {"queueName": queue, "podSets": podsets(job)}
    if priority is not None:
        spec["priority"] = int(priority)
    if priority_class_ref is not None:
        spec["priorityClassRef"] = dict(priority_class_ref)
    workload_meta: dict[str, Any] = {
        "name": workload_name(job),
        "namespace": metadata.get("namespace") or "default",
        "labels": {JOB_UID_LABEL: uid},
        "ownerReferences": [{"apiVersion": JOB_API_VERSION, "kind": JOB_KIND, "name": metadata["name"],
                             "uid": uid, "controller": True, "blockOwnerDeletion": True}],
    }
    return {"apiVersion": API_VERSION, "kind": WORKLOAD_KIND, "metadata": workload_meta, "spec": spec}


def owned_by(workload: Mapping[str, Any], job: Mapping[str, Any]) -> bool:
    """True when the Workload's controller owner reference is this job incarnation (by UID)."""
    uid = job["metadata"].get("uid")
    return any(ref.get("controller") and ref.get("uid") == uid
               for ref in (workload.get("metadata") or {}).get("ownerReferences") or [])


# --------------------------------------------------------------------------- matching


def _normalized(value: Any, key: str = "") -> Any:
    """A container (or any part of one) with the API server's CRD defaults and empty values evened
    out: Kueue's CRD defaults `ports[].protocol` to TCP and some reference names to '' or false,
    which a job's template (stored through another CRD) does not carry."""
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            v = _normalized(v, k)
            if v in (None, "", [], {}) or (k == "optional" and v is False):
                continue
            out[k] = v
        if key == "ports[]":
            out.setdefault("protocol", "TCP")
        return out
    if isinstance(value, list):
        return [_normalized(item, f"{key}[]") for item in value]
    return value


def _containers(template: Mapping[str, Any], kind: str) -> Any:
    return _normalized(list((template.get("spec") or {}).get(kind) or []), "containers")


def workload_matches(job: Mapping[str, Any], workload: Mapping[str, Any]) -> bool:
    """True when the Workload still describes the job (Kueue's EquivalentToWorkload for podSets):
    the same podSet names in the same order, the same counts, and equal containers and
    initContainers; tolerations too, unless the Workload is admitted (flavors may have added some).
    A False answer means: update the Workload's spec in place if it holds no quota, else stop the
    job, delete the Workload and create a new one."""
    wanted = podsets(job)
    have = list((workload.get("spec") or {}).get("podSets") or [])
    if [p["name"] for p in wanted] != [p.get("name") for p in have]:
        return False
    admitted = _is_true(workload, ADMITTED)
    for mine, theirs in zip(wanted, have, strict=True):
        if mine["count"] != theirs.get("count", 1) or theirs.get("minCount") is not None:
            return False
        mine_t, theirs_t = mine["template"], theirs.get("template") or {}
        for kind in ("containers", "initContainers"):
            if _containers(mine_t, kind) != _containers(theirs_t, kind):
                return False
        if not admitted and _normalized(mine_t["spec"].get("tolerations") or []) != _normalized(
                (theirs_t.get("spec") or {}).get("tolerations") or []):
            return False
    return True


# --------------------------------------------------------------------------- workload status


def _conditions(workload: Mapping[str, Any]) -> list[dict[str, Any]]:
    return list(((workload.get("status") or {}).get("conditions")) or [])


def _condition(workload: Mapping[str, Any], kind: str) -> dict[str, Any] | None:
    return next((c for c in _conditions(workload) if c.get("type") == kind), None)


def _is_true(workload: Mapping[str, Any], kind: str) -> bool:
    condition = _condition(workload, kind)
    return condition is not None and condition.get("status") == "True"


@dataclass(frozen=True)
class Admission:
    """What a Workload's status says about running the job (see `admission`)."""

    quota_reserved: bool = False
    admitted: bool = False
    evicted: bool = False
    eviction_reason: str = ""
    eviction_message: str = ""
    preempted: bool = False
    requeued: bool | None = None  # the Requeued condition, None when absent
    finished: bool = False
    finished_reason: str = ""
    finished_message: str = ""
    pending_reason: str = ""  # QuotaReserved=False's reason (Pending, Inadmissible) and message
    pending_message: str = ""
    cluster_queue: str = ""
    flavors_by_podset: dict[str, list[str]] = field(default_factory=dict)

    @property
    def can_run(self) -> bool:
        """Pods may exist: admitted, and neither evicted nor finished."""
        return self.admitted and not self.evicted and not self.finished

    @property
    def must_clear(self) -> bool:
        """Evicted while still holding quota: once the job has no active pods, send
        clear_admission_status (Kueue frees the quota only then)."""
        return self.evicted and self.quota_reserved and not self.finished

    @property
    def flavor_names(self) -> list[str]:
        """Every ResourceFlavor named by the admission, sorted (the ones to fetch for apply_flavors)."""
        return sorted({name for names in self.flavors_by_podset.values() for name in names})


def admission(workload: Mapping[str, Any]) -> Admission:
    """Read a Workload's conditions and `status.admission` into an `Admission`.

    `flavors_by_podset` maps each podSet name to its distinct flavor names in first-seen order
    (`status.admission.podSetAssignments[].flavors` maps resource → flavor).
    """
    status = workload.get("status") or {}
    evicted = _condition(workload, EVICTED)
    finished = _condition(workload, FINISHED)
    reserved = _condition(workload, QUOTA_RESERVED)
    requeued = _condition(workload, REQUEUED)
    flavors: dict[str, list[str]] = {}
    for assignment in (status.get("admission") or {}).get("podSetAssignments") or []:
        names: list[str] = []
        for flavor in (assignment.get("flavors") or {}).values():
            if flavor not in names:
                names.append(flavor)
        flavors[assignment.get("name", "")] = names
    is_evicted = evicted is not None and evicted.get("status") == "True"
    is_finished = finished is not None and finished.get("status") == "True"
    waiting = reserved is not None and reserved.get("status") == "False"
    return Admission(
        quota_reserved=_is_true(workload, QUOTA_RESERVED),
        admitted=_is_true(workload, ADMITTED),
        evicted=is_evicted,
        eviction_reason=str(evicted.get("reason") or "") if is_evicted and evicted else "",
        eviction_message=str(evicted.get("message") or "") if is_evicted and evicted else "",
        preempted=_is_true(workload, PREEMPTED),
        requeued=None if requeued is None else requeued.get("status") == "True",
        finished=is_finished,
        finished_reason=str(finished.get("reason") or "") if is_finished and finished else "",
        finished_message=str(finished.get("message") or "") if is_finished and finished else "",
        pending_reason=str(reserved.get("reason") or "") if waiting and reserved else "",
        pending_message=str(reserved.get("message") or "") if waiting and reserved else "",
        cluster_queue=str((status.get("admission") or {}).get("clusterQueue") or ""),
        flavors_by_podset=flavors,
    )


def _set_condition(conditions: list[dict[str, Any]], kind: str, status: bool, reason: str, message: str,
                   now: str, generation: int | None) -> None:
    """meta.SetStatusCondition: lastTransitionTime moves only when the status flips (or is new)."""
    value = "True" if status else "False"
    message = message[:_MAX_MESSAGE_LENGTH]
    existing = next((c for c in conditions if c.get("type") == kind), None)
    if existing is None:
        existing = {"type": kind, "status": value, "lastTransitionTime": now}
        conditions.append(existing)
    elif existing.get("status") != value:
        existing["status"] = value
        existing["lastTransitionTime"] = now
    existing["reason"] = reason
    existing["message"] = message
    if generation is not None:
        existing["observedGeneration"] = generation


def _status_patch(workload: Mapping[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    metadata = workload.get("metadata") or {}
    return {"metadata": {"resourceVersion": metadata.get("resourceVersion")}, "status": status}


def clear_admission_status(workload: Mapping[str, Any], now: str) -> dict[str, Any] | None:
    """The status merge patch the job's owner sends after an eviction, once the job has no active
    pods (jobframework reconciler step 6.2; workload.UnsetQuotaReservationWithCondition and
    SyncAdmittedCondition). None when there is nothing to clear (not evicted, or no quota reserved).

    * `Requeued`: True only when the eviction reason is Preempted or NodeFailures (False blocks
      requeueing), with the Evicted condition's reason and message;
    * `QuotaReserved`: False, reason Pending, the Evicted message;
    * `status.admission`: null (this is what frees the quota);
    * `Admitted` (when it was True): False, NoReservation "The workload has no reservation", and the
      time it was admitted added to `accumulatedPastExecutionTimeSeconds`.
    `now` is an RFC 3339 timestamp (tfjob_api.timeutil.format_time).
    """
    evicted = _condition(workload, EVICTED)
    if evicted is None or evicted.get("status") != "True" or not _is_true(workload, QUOTA_RESERVED):
        return None
    status = workload.get("status") or {}
    generation = (workload.get("metadata") or {}).get("generation")
    conditions = copy.deepcopy(_conditions(workload))
    reason, message = str(evicted.get("reason") or ""), str(evicted.get("message") or "")
    requeue = reason in (EVICTED_BY_PREEMPTION, EVICTED_DUE_TO_NODE_FAILURES)
    _set_condition(conditions, REQUEUED, requeue, reason, message, now, generation)
    _set_condition(conditions, QUOTA_RESERVED, False, REASON_PENDING, message, now, generation)
    patch: dict[str, Any] = {"admission": None, "conditions": conditions}
    admitted = _condition(workload, ADMITTED)
    if admitted is not None and admitted.get("status") == "True":
        checks_ready = all(c.get("state") == "Ready" for c in status.get("admissionChecks") or [])
        if checks_ready:
            why, text = REASON_NO_RESERVATION, "The workload has no reservation"
        else:
            why = REASON_NO_RESERVATION_UNSATISFIED_CHECKS
            text = "The workload has no reservation and not all checks ready"
        since, until = parse_time(admitted.get("lastTransitionTime")), parse_time(now)
        if since is not None and until is not None:
            elapsed = max(0, int((until - since).total_seconds()))
            before = int(status.get("accumulatedPastExecutionTimeSeconds") or 0)
            patch["accumulatedPastExecutionTimeSeconds"] = before + elapsed
        _set_condition(conditions, ADMITTED, False, why, text, now, generation)
    return _status_patch(workload, patch)


def finish_status(workload: Mapping[str, Any], succeeded: bool, message: str, now: str,
                  reason: str | None = None) -> dict[str, Any] | None:
    """The status merge patch that marks the Workload Finished=True (reason Succeeded or Failed, or
    `reason`, e.g. FailedToStart), which releases its quota at once. None when already finished."""
    if _is_true(workload, FINISHED):
        return None
    conditions = copy.deepcopy(_conditions(workload))
    why = reason or (FINISHED_SUCCEEDED if succeeded else FINISHED_FAILED)
    _set_condition(conditions, FINISHED, True, why, message, now, (workload.get("metadata") or {}).get("generation"))
    return _status_patch(workload, {"conditions": conditions})


# --------------------------------------------------------------------------- starting the job


def flavors_for_roles(workload: Mapping[str, Any],
                      flavors: Mapping[str, Mapping[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Map each admitted podSet (role) to its ResourceFlavor objects, given the flavors by name
    (`flavors` must hold every name in admission(workload).flavor_names; KeyError otherwise)."""
    return {role: [dict(flavors[name]) for name in names]
            for role, names in admission(workload).flavors_by_podset.items()}


def _merge_map(target: dict[str, str], extra: Mapping[str, str], what: str, role: str, source: str) -> None:
    for key, value in extra.items():
        if key in target and target[key] != value:
            raise FlavorConflict(f"cannot start role {role}: {source} sets {what} {key}={value!r} but the "
                                 f"template has {key}={target[key]!r}")
        target[key] = value


def apply_flavors(
    job: Mapping[str, Any], workload: Mapping[str, Any], flavors_by_role: Mapping[str, list[Mapping[str, Any]]]
) -> dict[str, Any]:
    """A new job dict whose role templates carry what Kueue's admission adds to the pods
    (podset.FromAssignment + Merge; getPodSetsInfoFromStatus). For every admitted podSet (role):

    * each distinct flavor's `spec.nodeLabels` into `nodeSelector` (later flavors win among flavors)
      and its `spec.tolerations` appended (no duplicates);
    * labels `kueue.x-k8s.io/podset=<role>`, `kueue.x-k8s.io/local-queue-name=<spec.queueName>`,
      `kueue.x-k8s.io/cluster-queue-name=<clusterQueue>` (only when a valid DNS label) and the
      annotation `kueue.x-k8s.io/workload=<workload name>`;
    * admission checks' `podSetUpdates` for the role (labels, annotations, nodeSelector, tolerations).

    A key the template already sets to another value raises `FlavorConflict`. The input is never
    mutated; the result is meant for the builders (it is not written back to the job).
    """
    result = copy.deepcopy(dict(job))
    info = admission(workload)
    name = str((workload.get("metadata") or {}).get("name") or "")
    for role in queued_roles(job):
        if role not in info.flavors_by_podset:
            raise ValueError(f"the Workload {name} has no admitted podSet {role}: it does not match the job")
    for role in info.flavors_by_podset:
        if role not in ROLES or role_replicas(result["spec"], role) == 0:
            raise ValueError(f"the Workload {name} admits podSet {role}, which the job does not run")
        template = result["spec"][role].setdefault("template", {})
        _merge_updates(template, role, _role_updates(role, workload, info, flavors_by_role.get(role, [])))
    return result


# What to merge into a role's pod template, and whence: (source, labels, annotations, nodeSelector,
# tolerations); the source names the update in a `FlavorConflict`.
_Update = tuple[str, Mapping[str, Any], Mapping[str, Any], Mapping[str, Any], list[Any]]


def _role_updates(role: str, workload: Mapping[str, Any], info: Admission,
                  flavors: list[Mapping[str, Any]]) -> list[_Update]:
    """What Kueue's admission adds to one role's pods, in the order it merges them: the admitted
    flavors with the queue labels and workload annotation first, then each admission check's
    `podSetUpdates` for the role (apart from `apply_flavors` so it reads as gather, then merge)."""
    queue = str((workload.get("spec") or {}).get("queueName") or "")
    name = str((workload.get("metadata") or {}).get("name") or "")
    node_selector: dict[str, str] = {}
    tolerations: list[dict[str, Any]] = []
    for flavor in flavors:
        flavor_spec = flavor.get("spec") or {}
        node_selector.update(flavor_spec.get("nodeLabels") or {})
        tolerations += [dict(t) for t in flavor_spec.get("tolerations") or []]
    labels = {PODSET_LABEL: role, LOCAL_QUEUE_LABEL: queue}
    if _DNS_LABEL.match(info.cluster_queue) and len(info.cluster_queue) <= 63:
        labels[CLUSTER_QUEUE_LABEL] = info.cluster_queue
    updates: list[_Update] = [("the admitted flavors", labels, {WORKLOAD_ANNOTATION: name}, node_selector,
                               tolerations)]
    for check in (workload.get("status") or {}).get("admissionChecks") or []:
        for update in check.get("podSetUpdates") or []:
            if update.get("name") == role:
                updates.append((f"admission check {check.get('name')}", update.get("labels") or {},
                                update.get("annotations") or {}, update.get("nodeSelector") or {},
                                list(update.get("tolerations") or [])))
    return updates


def _merge_updates(template: dict[str, Any], role: str, updates: list[_Update]) -> None:
    """Merge `updates` into the pod `template` in place; a key the template (or an earlier update)
    sets to another value raises `FlavorConflict`, and a toleration already there is not repeated."""
    metadata = template.setdefault("metadata", {})
    spec = template.setdefault("spec", {})
    merged_labels = dict(metadata.get("labels") or {})
    merged_annotations = dict(metadata.get("annotations") or {})
    merged_selector = dict(spec.get("nodeSelector") or {})
    merged_tolerations = list(spec.get("tolerations") or [])
    for source, new_labels, new_annotations, new_selector, new_tolerations in updates:
        _merge_map(merged_labels, new_labels, "label", role, source)
        _merge_map(merged_annotations, new_annotations, "annotation", role, source)
        _merge_map(merged_selector, new_selector, "nodeSelector", role, source)
        merged_tolerations += [t for t in new_tolerations if t not in merged_tolerations]
    metadata["labels"] = merged_labels
    metadata["annotations"] = merged_annotations
    if merged_selector:
        spec["nodeSelector"] = merged_selector
    if merged_tolerations:
        spec["tolerations"] = merged_tolerations


# --------------------------------------------------------------------------- telling the user


def waiting_message(job: Mapping[str, Any], workload: Mapping[str, Any] | None) -> tuple[str, str]:
    """(reason, message) for the job's `Suspended` condition while Kueue holds it, naming the queue:

    * no Workload yet → WaitingForAdmission "waiting for quota in LocalQueue q";
    * Finished (e.g. FailedToStart) → WorkloadFinished with Kueue's message;
    * Evicted → Preempted (reason Preempted) or Evicted, Kueue's message and where it is re-queued;
    * QuotaReserved=False/Inadmissible (no such LocalQueue, stopped queue) → Inadmissible, Kueue's message;
    * QuotaReserved=False/Pending → WaitingForAdmission "waiting for quota in LocalQueue q: <Kueue's
      message>", e.g. "couldn't assign flavors to pod set worker: insufficient quota ...";
    * quota reserved but not admitted → WaitingForAdmission naming the ClusterQueue (admission checks);
    * admitted → ("Admitted", "admitted by ClusterQueue cq"): the job is not waiting.
    """
    queue = queue_name(job) or str(((workload or {}).get("spec") or {}).get("queueName") or "")
    where = f"LocalQueue {queue}"
    if workload is None:
        return WAITING_FOR_ADMISSION, f"waiting for quota in {where}"
    info = admission(workload)
    if info.finished:
        return JOB_WORKLOAD_FINISHED, f"the Workload is finished ({info.finished_reason}): {info.finished_message}"
    if info.evicted:
        reason = JOB_PREEMPTED if info.eviction_reason == EVICTED_BY_PREEMPTION else JOB_EVICTED
        message = f"{info.eviction_message or 'evicted by Kueue (' + info.eviction_reason + ')'}"
        if info.requeued is False:
            return reason, f"{message}; not re-queued"
        message += f"; re-queued in {where}"
        if info.pending_message and info.pending_message != info.eviction_message:
            message += f": {info.pending_message}"
        return reason, message
    if info.pending_reason == REASON_INADMISSIBLE:
        return JOB_INADMISSIBLE, f"{where} cannot admit the job: {info.pending_message}"
    if info.pending_message:
        return WAITING_FOR_ADMISSION, f"waiting for quota in {where}: {info.pending_message}"
    if info.quota_reserved and not info.admitted:
        return (WAITING_FOR_ADMISSION,
                f"quota reserved in ClusterQueue {info.cluster_queue}; waiting for admission checks")
    if info.admitted:
        return "Admitted", f"admitted by ClusterQueue {info.cluster_queue}"
    return WAITING_FOR_ADMISSION, f"waiting for quota in {where}"
