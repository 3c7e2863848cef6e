"""Read a pod's situation from its raw JSON: which slot it fills, and how it is doing.

These predicates are where Kubernetes' many ways of saying "gone", "failed" and "disrupted" are
folded into the few answers the lifecycle rules need. Part of `tfjob_api` because the slot a pod fills is
read from the labels the operator stamps (`tfjob_api.names`), and because `kubectl tfjob` must read a pod
exactly as the planner does. The controller's pod cache keeps only part of each pod
(`controller.job.podcache.project`): a field these predicates start reading must be kept there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tfconfig import ROLES, tf_container_index
from tfjob_api.names import CLUSTER_HASH_ANNOTATION, REPLICA_INDEX_LABEL, REPLICA_TYPE_LABEL
from tfjob_api.timeutil import parse_time

# status.reason values (set by the kubelet / scheduler / node controller) that mean "not the
# program's fault": the pod is replaced without counting against backoffLimit.
DISRUPTION_REASONS = {"Evicted", "Preempting", "Preempted", "NodeLost", "Terminated", "Shutdown", "NodeShutdown",
                      "UnexpectedAdmissionError", "OutOfpods", "OutOfcpu", "OutOfmemory"}

# Waiting reasons of a container on its way to running: not a problem.
BENIGN_WAITING_REASONS = frozenset({"", "ContainerCreating", "PodInitializing"})


def waiting_problem(container_status: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The `state.waiting` of a container that waits for a reason that is a problem
    (ImagePullBackOff, CreateContainerConfigError, CrashLoopBackOff, ...), else None."""
    waiting = (container_status.get("state") or {}).get("waiting")
    if not isinstance(waiting, Mapping) or waiting.get("reason", "") in BENIGN_WAITING_REASONS:
        return None
    return waiting


@dataclass(frozen=True)
class Obstacle:
    """One reason a pod is not running, in the words of whoever decided it."""

    reason: str  # the scheduler's (Unschedulable, SchedulingGated, ...) or the kubelet's (ImagePullBackOff, ...)
    message: str  # their message, '' when they gave none
    container: str = ""  # the waiting (init) container; '' for the scheduler's
    scheduling: bool = False  # the scheduler's obstacle (else a container's)


def why_not_running(pod: Mapping[str, Any]) -> list[Obstacle]:
    """Why the pod is not running, first things first: the scheduler's reason while the pod is
    Pending and not scheduled (its PodScheduled condition False), then each init container and
    container waiting for a reason that is a problem (`waiting_problem`), in the pod's order.

    The one reader of the scheduler's and the kubelet's reasons: the job's `Pending` condition
    (`controller.job.pending`) and `kubectl tfjob describe` (`tfjobs.jobview`) word what it finds."""
    status = pod.get("status") or {}
    found = []
    if phase(pod) == "Pending":
        scheduled = next((c for c in status.get("conditions") or []
                          if c.get("type") == "PodScheduled" and c.get("status") == "False"), None)
        if scheduled is not None:
            found.append(Obstacle(scheduled.get("reason") or "Unschedulable", scheduled.get("message") or "",
                                  scheduling=True))
    for key in ("initContainerStatuses", "containerStatuses"):
        for container in status.get(key) or []:
            waiting = waiting_problem(container)
            if waiting is not None:
                found.append(Obstacle(str(waiting.get("reason")), waiting.get("message") or "",
                                      container=str(container.get("name"))))
    return found


def slot(pod: Mapping[str, Any]) -> tuple[str, int] | None:
    """(role, index) the pod fills, or None when its labels are not ours or are malformed."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    role = labels.get(REPLICA_TYPE_LABEL)
    index = labels.get(REPLICA_INDEX_LABEL)
    if role not in ROLES or not isinstance(index, str) or not index.isdigit():
        return None
    return role, int(index)


def uid(pod: Mapping[str, Any]) -> str:
    value: str = (pod.get("metadata") or {}).get("uid", "")
    return value


def name(pod: Mapping[str, Any]) -> str:
    value: str = (pod.get("metadata") or {}).get("name", "")
    return value


def phase(pod: Mapping[str, Any]) -> str:
    return (pod.get("status") or {}).get("phase") or "Pending"


def is_terminating(pod: Mapping[str, Any]) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def is_active(pod: Mapping[str, Any]) -> bool:
    return not is_terminating(pod) and phase(pod) in ("Pending", "Running", "Unknown")


def cluster_hash(pod: Mapping[str, Any]) -> str | None:
    return ((pod.get("metadata") or {}).get("annotations") or {}).get(CLUSTER_HASH_ANNOTATION)


def is_disrupted(pod: Mapping[str, Any]) -> bool:
    """Evicted, preempted or lost with its node, as opposed to failed by its own program."""
    status = pod.get("status") or {}
    if status.get("reason") in DISRUPTION_REASONS:
        return True
    return any(
        c.get("type") == "DisruptionTarget" and c.get("status") == "True" for c in status.get("conditions") or []
    )


def tf_container_status(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    containers = (pod.get("spec") or {}).get("containers") or []
    if not containers:
        return None
    wanted = containers[tf_container_index(pod.get("spec") or {})].get("name")
    return next((s for s in (pod.get("status") or {}).get("containerStatuses") or [] if s.get("name") == wanted), None)


def exit_code(pod: Mapping[str, Any]) -> int | None:
    """The TensorFlow container's exit code (current state, else the last termination)."""
    status = tf_container_status(pod)
    if status is None:
        return None
    for key in ("state", "lastState"):
        terminated = (status.get(key) or {}).get("terminated")
        if terminated and isinstance(terminated.get("exitCode"), int):
            return int(terminated["exitCode"])
    return None


def container_restarts(pod: Mapping[str, Any]) -> int:
    """In-place container restarts done by the kubelet (restartPolicy OnFailure/Always)."""
    return sum(int(s.get("restartCount") or 0) for s in (pod.get("status") or {}).get("containerStatuses") or [])


def last_restart_at(pod: Mapping[str, Any]) -> datetime | None:
    """When the pod's latest in-place container restart happened: the latest `lastState.terminated.
    finishedAt` of its containers (None when no container restarted, or the time is not known)."""
    times = [parse_time(((s.get("lastState") or {}).get("terminated") or {}).get("finishedAt"))
             for s in (pod.get("status") or {}).get("containerStatuses") or [] if s.get("restartCount")]
    known = [t for t in times if t is not None]
    return max(known) if known else None


def node_name(pod: Mapping[str, Any]) -> str:
    return (pod.get("spec") or {}).get("nodeName") or ""
