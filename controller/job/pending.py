"""Why a job's pods are not running: the scheduler's and the kubelet's reasons, folded into the job's
`Pending` condition (docs/production.md).

A pod the scheduler cannot place (a missing PVC, no node with a free GPU, a taint) says so in its
PodScheduled condition; one whose image cannot be pulled or whose container cannot be created
(a missing Secret or ConfigMap key) says so in its containers' `state.waiting`. Both stay on the pod,
where a user looking at the job never sees them. `tfjob_api.podstate.why_not_running` reads them (from
what the pod cache keeps, `podcache.project`); this module words them as the job's condition: one
reason, one message naming the pods, and nothing when no pod has a problem. Pods merely on their
way (ContainerCreating, PodInitializing) are not a problem.

The reason is the first problem in role/index order: the scheduler's reason (`Unschedulable`,
`SchedulingGated`, `SchedulerError`; Volcano's `Schedulable` on a pod it has not placed -- its gang
does not fit yet -- is reported as `Unschedulable`, what it means for the job) or the waiting reason
(`ImagePullBackOff`, `CreateContainerConfigError`, `CrashLoopBackOff` of an init container, ...).
`ErrImagePull` is reported as `ImagePullBackOff`: the kubelet alternates between the two at every
retry, and the condition should not flip with it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tfconfig import ROLES
from tfjob_api import podstate

SAME_REASON = {"ErrImagePull": "ImagePullBackOff"}
NOT_PLACED = {"Schedulable": "Unschedulable"}  # a PodScheduled=False reason that says nothing of why
SHOWN_PODS = 5
MAX_DETAIL = 600  # characters of the scheduler's or kubelet's message kept in the job's message


@dataclass(frozen=True)
class PodProblem:
    pod: str
    reason: str
    detail: str
    scheduling: bool  # the scheduler's problem (else the kubelet's)


@dataclass(frozen=True)
class Pending:
    """The job's `Pending` condition while some of its pods cannot be scheduled or started."""

    reason: str
    message: str
    pods: tuple[str, ...]


def pod_problem(pod: Mapping[str, Any]) -> PodProblem | None:
    """Why this pod cannot get to Running, or None (running, finished, or simply on its way): the
    first obstacle `podstate.why_not_running` finds, worded for the job's condition."""
    if not podstate.is_active(pod) or podstate.phase(pod) != "Pending":
        return None
    obstacles = podstate.why_not_running(pod)
    if not obstacles:
        return None
    first = obstacles[0]
    if first.scheduling:
        return PodProblem(podstate.name(pod), NOT_PLACED.get(first.reason, first.reason), first.message,
                          scheduling=True)
    detail = f"container {first.container}: {first.message or first.reason}"
    return PodProblem(podstate.name(pod), SAME_REASON.get(first.reason, first.reason), detail, scheduling=False)


def _order(pod: Mapping[str, Any]) -> tuple[int, int, str]:
    slot = podstate.slot(pod)
    if slot is None:
        return len(ROLES), 0, podstate.name(pod)
    return ROLES.index(slot[0]), slot[1], podstate.name(pod)


def _listed(names: list[str]) -> str:
    shown = ", ".join(names[:SHOWN_PODS])
    return shown + (f" and {len(names) - SHOWN_PODS} more" if len(names) > SHOWN_PODS else "")


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_DETAIL else text[:MAX_DETAIL - 3] + "..."


def summarize(pods: Iterable[Mapping[str, Any]]) -> Pending | None:
    """The job's Pending reason and message for these (live) pods; None when no pod has a problem."""
    found = [(_order(pod), problem) for pod in pods if (problem := pod_problem(pod)) is not None]
    if not found:
        return None  # the common case costs one pass over the pods, no sorting
    problems = [problem for _, problem in sorted(found, key=lambda pair: pair[0])]
    first = problems[0]
    same = [p.pod for p in problems if p.reason == first.reason]
    verb = "cannot be scheduled" if first.scheduling else "cannot start"
    message = f"{len(same)} pod(s) {verb} ({first.reason}): {_listed(same)}: {_short(first.detail)}"
    others: dict[str, int] = {}
    for problem in problems:
        if problem.reason != first.reason:
            others[problem.reason] = others.get(problem.reason, 0) + 1
    if others:
        message += "; also " + ", ".join(f"{reason} ({count} pod(s))" for reason, count in others.items())
    return Pending(first.reason, message, tuple(p.pod for p in problems))
