"""What the controller's pod cache keeps of each pod, and which pod updates it acts on, and how soon.

A pod's JSON is mostly spec the controller never reads back (images, env with TF_CONFIG, volumes),
so the pod informer stores a projection of it: exactly what the predicates of `tfjob_api.podstate` read.
A field they start reading must be kept here, and `tests/unit/controller/job/test_podcache.py`
checks that a projected pod reads exactly like the full one. The update filters (`same_projection`,
`only_bound`, `is_urgent_change`, `changes_nothing_yet`) decide from two projections whether an
update can change a plan and how soon it should be looked at. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from informers.store import share_strings, slim
from tfjob_api.podstate import is_disrupted, is_terminating, node_name, phase, waiting_problem, why_not_running

# What `project` keeps of status.conditions[] and status.containerStatuses[].
_CONDITION_TYPES = ("DisruptionTarget",)
_CONDITION_FIELDS = ("type", "status", "reason")
_CONTAINER_STATUS_FIELDS = ("name", "restartCount", "state", "lastState")
_STATUS_FIELDS = ("phase", "reason", "message", "startTime")
# Why a pod is not running (docs/production.md): a PodScheduled condition only while it is False
# (with the scheduler's message), and init containers only while one waits for a reason that is a
# problem. A scheduled, healthy pod keeps none of it.
_SCHEDULED_FIELDS = ("type", "status", "reason", "message")


def _kept_conditions(status: Mapping[str, Any]) -> list[dict[str, Any]]:
    kept = []
    for condition in status.get("conditions") or []:
        if condition.get("type") in _CONDITION_TYPES:
            kept.append({k: condition[k] for k in _CONDITION_FIELDS if k in condition})
        elif condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            kept.append({k: condition[k] for k in _SCHEDULED_FIELDS if k in condition})
    return kept


def project(pod: dict[str, Any]) -> dict[str, Any]:
    """The part of a pod the controller reads: all of its metadata (but managedFields and the
    last-applied annotation), `spec.nodeName` and the container names, and the status fields above
    (of the conditions, only DisruptionTarget, and PodScheduled while False; of the init
    containers, only those waiting for a problem).

    The rest of the spec (images, env with TF_CONFIG, volumes, tolerations, ...) is most of a
    pod's JSON and is never read back, so the pod cache holds several times more pods per MB
    (benchmark B4)."""
    metadata = slim(pod).get("metadata") or {}  # the store owns `pod`: slimming it in place is fine
    spec = pod.get("spec") or {}
    kept_spec: dict[str, Any] = {"containers": [{"name": c.get("name")} for c in spec.get("containers") or []]}
    if spec.get("nodeName"):
        kept_spec["nodeName"] = spec["nodeName"]
    status = pod.get("status") or {}
    kept_status = {k: status[k] for k in _STATUS_FIELDS if k in status}
    kept_conditions = _kept_conditions(status)
    if kept_conditions:
        kept_status["conditions"] = kept_conditions
    if status.get("containerStatuses"):
        kept_status["containerStatuses"] = [{k: c[k] for k in _CONTAINER_STATUS_FIELDS if k in c}
                                            for c in status["containerStatuses"]]
    stuck_init = [{"name": c.get("name"), "state": {"waiting": dict(waiting)}}
                  for c in status.get("initContainerStatuses") or [] if (waiting := waiting_problem(c))]
    if stuck_init:
        kept_status["initContainerStatuses"] = stuck_init
    return share_strings({"apiVersion": pod.get("apiVersion", "v1"), "kind": pod.get("kind", "Pod"),  # type: ignore[no-any-return]
                          "metadata": metadata, "spec": kept_spec, "status": kept_status})


def same_projection(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether two projected versions of a pod differ only in their resourceVersion: an update
    the controller cannot act on (most scheduler and kubelet writes touch only unkept fields)."""
    if old.get("spec") != new.get("spec") or old.get("status") != new.get("status"):
        return False
    old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
    keys = (old_meta.keys() | new_meta.keys()) - {"resourceVersion"}
    return all(old_meta.get(k) == new_meta.get(k) for k in keys)


def only_bound(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether the update just bound the pod to a node (the scheduler's write; a True PodScheduled
    condition is not kept). The planner reads `spec.nodeName` only of terminating pods (stuck on a
    lost node), and a terminating pod is never bound, so such an update cannot change a plan."""
    if node_name(old) or not node_name(new) or is_terminating(new):
        return False
    unbound = {**new, "spec": {k: v for k, v in (new.get("spec") or {}).items() if k != "nodeName"}}
    return same_projection(old, unbound)


def is_urgent_change(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Updates that can start a repair or end the job (deletion begun, a terminal phase, a
    disruption): handled at once. Others (scheduled, started, a container restart) may wait for
    a short batch, so a job's pods moving together cost one reconcile, not one each."""
    if is_terminating(new) and not is_terminating(old):
        return True
    if phase(new) != phase(old) and phase(new) in ("Failed", "Succeeded"):
        return True
    return is_disrupted(new) and not is_disrupted(old)



def changes_nothing_yet(old: Mapping[str, Any], new: Mapping[str, Any], siblings: list[Mapping[str, Any]]) -> bool:
    """Whether the update only moved the pod along its way to running, changing nothing its job's
    plan reads: the pod stays Pending, or starts while another live pod of its job is still Pending,
    and neither before nor after has a problem to report (`why_not_running`; only its status
    changed). A Pending pod and a Running one are both active, and the job cannot turn Running
    before its last pod starts, whose event then brings the reconcile: a job's pods go through their
    starts one by one, and each step would otherwise cost a reconcile that changes nothing. (Where
    a job reads its training progress from does change when that pod starts: the caller checks.)"""
    if old.get("spec") != new.get("spec") or why_not_running(old) or why_not_running(new):
        return False
    old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
    if any(old_meta.get(k) != new_meta.get(k) for k in (old_meta.keys() | new_meta.keys()) - {"resourceVersion"}):
        return False
    if phase(old) != "Pending" or phase(new) not in ("Pending", "Running"):
        return False
    if phase(new) == "Pending":
        return True
    return any(phase(pod) == "Pending" and not is_terminating(pod) and (pod.get("metadata") or {}).get("name")
               != new_meta.get("name") for pod in siblings)
