"""A job and its pods as a person reads them: state, roles, each pod's task, status and trouble.

Pure functions over the raw JSON dicts the API returns, shared by `get`, `describe`, `wait` and
`logs`. They reuse the API contract the operator follows: label names (`tfjob_api.names`), what a
pod's fields mean (`tfjob_api.podstate`), the job's state precedence (`tfjob_api.conditions`) and which
container is the TensorFlow one (`tfconfig`). What they add is wording: the reason a pod
is not running, in the scheduler's or kubelet's own words.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from tfconfig import ROLES, role_replicas, tf_container_index
from tfjob_api import conditions, podstate

__all__ = ["FINISHED_STATES", "container_names", "is_finished", "job_state", "pod_problem", "pod_status",
           "pod_task", "roles", "slot_name", "tf_container", "waiting_reason"]

FINISHED_STATES = (conditions.SUCCEEDED, conditions.FAILED)


def job_state(job: Mapping[str, Any]) -> str:
    """The job's state (`status.state`, else derived from its conditions); '' before the operator
    has seen it."""
    status = job.get("status") or {}
    return status.get("state") or conditions.state(status.get("conditions") or [])


def is_finished(job: Mapping[str, Any]) -> bool:
    return job_state(job) in FINISHED_STATES


def condition(job: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    return conditions.find((job.get("status") or {}).get("conditions") or [], kind)


def state_detail(job: Mapping[str, Any]) -> str:
    """`reason: message` of the condition that names the state ('' when there is none)."""
    found = condition(job, job_state(job)) if job_state(job) else None
    if not found:
        return ""
    reason, message = found.get("reason") or "", found.get("message") or ""
    return f"{reason}: {message}" if reason and message else reason or message


def roles(job: Mapping[str, Any]) -> dict[str, int]:
    """Role → desired replicas, for the roles the spec has, in chief, ps, worker, evaluator order."""
    spec = job.get("spec") or {}
    return {role: role_replicas(spec, role) for role in ROLES if isinstance(spec.get(role), Mapping)}


def slot_name(role: str, index: int) -> str:
    """The short name of a slot, `worker-1`: the prefix of its log lines."""
    return f"{role}-{index}"


def tf_container(pod: Mapping[str, Any]) -> str:
    """Name of the pod's TensorFlow container (the one named `tensorflow`, else the first)."""
    spec = pod.get("spec") or {}
    containers = spec.get("containers") or []
    return (containers[tf_container_index(spec)].get("name") or "") if containers else ""


def container_names(pod: Mapping[str, Any]) -> list[str]:
    return [c.get("name") or "" for c in (pod.get("spec") or {}).get("containers") or []]


def pod_task(pod: Mapping[str, Any]) -> str:
    """The TF_CONFIG task of the pod's TensorFlow container, `worker:1`; '' when it has none."""
    spec = pod.get("spec") or {}
    containers = spec.get("containers") or []
    if not containers:
        return ""
    for variable in containers[tf_container_index(spec)].get("env") or []:
        if variable.get("name") == "TF_CONFIG":
            try:
                task = json.loads(variable.get("value") or "").get("task") or {}
            except (ValueError, AttributeError):
                return "<invalid TF_CONFIG>"
            return f"{task.get('type')}:{task.get('index')}"
    return ""


def _statuses(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    status = pod.get("status") or {}
    return [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]


def waiting_reason(pod: Mapping[str, Any]) -> str:
    """The first container's waiting reason (ContainerCreating, ImagePullBackOff, CrashLoopBackOff)."""
    for status in _statuses(pod):
        waiting = (status.get("state") or {}).get("waiting")
        if waiting and waiting.get("reason"):
            return str(waiting["reason"])
    return ""


def pod_status(pod: Mapping[str, Any]) -> str:
    """A one-word status like kubectl's STATUS column: Pending, ContainerCreating, Running,
    Completed, Error, OOMKilled, CrashLoopBackOff, Evicted, Terminating."""
    if podstate.is_terminating(pod):
        return "Terminating"
    status = pod.get("status") or {}
    if status.get("reason"):
        return str(status["reason"])
    waiting = waiting_reason(pod)
    if waiting:
        return waiting
    for container in status.get("containerStatuses") or []:
        terminated = (container.get("state") or {}).get("terminated")
        if terminated and podstate.phase(pod) != "Running":
            return str(terminated.get("reason") or ("Completed" if terminated.get("exitCode") == 0 else "Error"))
    return podstate.phase(pod)


def _container_problems(pod: Mapping[str, Any], obstacles: list[podstate.Obstacle]) -> list[str]:
    waiting = {obstacle.container: obstacle for obstacle in obstacles if not obstacle.scheduling}
    found = []
    for status in _statuses(pod):
        name = status.get("name")
        terminated = (status.get("state") or {}).get("terminated")
        obstacle = waiting.get(str(name))
        if obstacle is not None:
            found.append(f"container {name}: {obstacle.reason}" + (f": {obstacle.message}" if obstacle.message else ""))
        elif terminated and terminated.get("exitCode") not in (0, None):
            found.append(f"container {name}: exited with code {terminated.get('exitCode')}"
                         + (f" ({terminated['reason']})" if terminated.get("reason") else "")
                         + (f": {terminated['message']}" if terminated.get("message") else ""))
        restarts = int(status.get("restartCount") or 0)
        last = (status.get("lastState") or {}).get("terminated")
        if restarts and last and not terminated:
            found.append(f"container {name}: restarted {restarts}x, last exit code {last.get('exitCode')}"
                         + (f" ({last['reason']})" if last.get("reason") else ""))
    return found


def pod_problem(pod: Mapping[str, Any]) -> str:
    """Why the pod is not simply running or done, in the words of whoever decided ('' if nothing):
    the scheduler's message for a pending pod (e.g. `Unschedulable: 0/4 nodes are available:
    persistentvolumeclaim "data" not found`), the kubelet's reason and message for a waiting or
    failed container, an eviction, a deletion in progress. The scheduler's and the waiting
    containers' reasons are those of `podstate.why_not_running`, the reader the operator's
    `Pending` condition uses too."""
    status = pod.get("status") or {}
    obstacles = podstate.why_not_running(pod)
    problems = []
    if podstate.is_terminating(pod):
        problems.append(f"terminating since {pod['metadata']['deletionTimestamp']}"
                        + (f" on node {podstate.node_name(pod)}" if podstate.node_name(pod) else ""))
    if status.get("reason") or (status.get("message") and podstate.phase(pod) != "Running"):
        problems.append(": ".join(str(x) for x in (status.get("reason"), status.get("message")) if x))
    problems += [f"{o.reason}: {o.message or 'not scheduled yet'}" for o in obstacles if o.scheduling]
    problems += _container_problems(pod, obstacles)
    for found in status.get("conditions") or []:
        if found.get("type") == "DisruptionTarget" and found.get("status") == "True":
            problems.append(f"disrupted: {found.get('reason') or ''} {found.get('message') or ''}".strip())
    return "; ".join(dict.fromkeys(p for p in problems if p))


def pods_by_slot(pods: Iterable[Mapping[str, Any]]) -> dict[tuple[str, int], list[Mapping[str, Any]]]:
    """Pods grouped by the (role, index) slot their labels name; strays (no valid slot) are left out."""
    grouped: dict[tuple[str, int], list[Mapping[str, Any]]] = {}
    for pod in pods:
        found = podstate.slot(pod)
        if found is not None:
            grouped.setdefault(found, []).append(pod)
    return grouped
