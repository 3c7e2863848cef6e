"""`kubectl tfjob describe`: one job, its roles, every pod, and why anything is pending or failing.

`kubectl describe tensorflowjob` shows the object and the job's events; the question a person
training asks is different: *which pod is stuck, and why?* So this view lists the training's
progress when the job reports it (and when it last resumed after an interruption, from which step, and
what that cost), every slot of every role (a slot without its pod says so), each
pod's phase, node, restarts, TF_CONFIG task and age, then the problems in the words of whoever
decided — the scheduler's message for a pending pod (`persistentvolumeclaim "data" not found`), the
kubelet's for a waiting or failed container, the operator's for a job that cannot run (a quota, a
name conflict, a queue) — and the last events of the job and its pods. Each role shows its counted
restarts and what is left of its own `backoffLimit`, and the job's failure rules are listed in order.
A job queued by Kueue also shows its Workload and, when Kueue placed it by topology, the domains it
landed in. Pure: dicts and the current time in, text out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from tfjob_api import conditions, podstate
from tfjob_api.kueue_placement import placement_lines
from tfjobs.dispatch import runs_on_line
from tfjobs.durations import age_since
from tfjobs.jobview import (
    FINISHED_STATES,
    job_state,
    pod_problem,
    pod_status,
    pod_task,
    pods_by_slot,
    roles,
    slot_name,
    state_detail,
)
from tfjobs.tables import table
from tfjobs.training import render_resume, render_training, training

__all__ = ["EVENTS_SHOWN", "describe", "job_problems", "rule_text"]

EVENTS_SHOWN = 20


_FINE = (conditions.CREATED, conditions.RUNNING, conditions.SUCCEEDED)


def job_problems(job: Mapping[str, Any]) -> list[str]:
    """What the job's conditions say is wrong: every True condition but Created, Running and
    Succeeded (failed, suspended and why: a queue; restarting; pods pending and why), and Running
    False for a reason the operator reported (QuotaExceeded, NameConflict)."""
    found = []
    state = job_state(job)
    for item in (job.get("status") or {}).get("conditions") or []:
        kind, status = item.get("type"), item.get("status")
        words = ": ".join(x for x in (item.get("reason"), item.get("message")) if x)
        if status == "True" and kind not in _FINE:
            found.append(f"{kind}: {words}" if words else str(kind))
        elif (kind == conditions.RUNNING and status == "False" and words and state not in FINISHED_STATES
              and state not in (conditions.SUSPENDED, conditions.RESTARTING)):
            found.append(f"not running: {words}")
    return found


def _job_budget(spec: Mapping[str, Any], status: Mapping[str, Any]) -> str:
    """`backoffLimit 6, 5 left` (a TFJob without a limit: `no backoffLimit`)."""
    limit = spec.get("backoffLimit", 6)
    if not isinstance(limit, int):
        return "no backoffLimit"
    return f"backoffLimit {limit}, {max(limit - int(status.get('restartCount') or 0), 0)} left"


def _budget(role_spec: Mapping[str, Any], replica_status: Mapping[str, Any]) -> list[str]:
    """A role's counted restarts, and what is left of its own backoffLimit (`-`: none of its own)."""
    restarts = str(replica_status.get("restarts", 0))
    limit = role_spec.get("backoffLimit")
    if not isinstance(limit, int):
        return [restarts, "-"]
    left = replica_status.get("restartsLeft", limit - int(replica_status.get("restarts") or 0))
    return [restarts, f"{max(int(left), 0)} of {limit}"]


def rule_text(rule: Mapping[str, Any]) -> str:
    """One failure rule in a line: `bad-config: exit code In [3] -> FailJob`."""
    criteria = []
    if rule.get("roles"):
        criteria.append(f"role {'/'.join(rule['roles'])}")
    codes = rule.get("onExitCodes")
    if codes:
        criteria.append(f"exit code {codes.get('operator')} {list(codes.get('values') or [])}")
    if rule.get("onPodConditions"):
        criteria.append(f"condition {'/'.join(rule['onPodConditions'])}")
    if rule.get("onReasons"):
        criteria.append(f"reason {'/'.join(rule['onReasons'])}")
    named = f"{rule['name']}: " if rule.get("name") else ""
    return f"{named}{', '.join(criteria) or 'any failure'} -> {rule.get('action', 'Count')}"


def _event_row(event: Mapping[str, Any], now: datetime) -> list[str]:
    involved = event.get("involvedObject") or {}
    series = event.get("series") or {}
    when = series.get("lastObservedTime") or event.get("lastTimestamp") or event.get("eventTime") \
        or (event.get("metadata") or {}).get("creationTimestamp")
    count = int(series.get("count") or event.get("count") or 1)
    kind = "tfjob" if involved.get("kind") == "TensorFlowJob" else str(involved.get("kind", "")).lower()
    age = age_since(when, now) + (f" (x{count})" if count > 1 else "")
    return [age, event.get("type") or "", event.get("reason") or "", f"{kind}/{involved.get('name', '')}",
            " ".join(str(event.get("message") or event.get("note") or "").split())]


def _queue_lines(workload: Mapping[str, Any]) -> list[str]:
    """The Workload's name and its ClusterQueue, and where Kueue placed each pod set by topology."""
    admission = (workload.get("status") or {}).get("admission") or {}
    queue = f" (admitted by ClusterQueue {admission['clusterQueue']})" if admission.get("clusterQueue") else ""
    lines = [f"Workload:     {(workload.get('metadata') or {}).get('name', '')}{queue}"]
    placed = placement_lines(workload)
    if placed:
        lines.append("Placement:    " + placed[0])
        lines += [f"              {line}" for line in placed[1:]]
    return lines


def describe(job: Mapping[str, Any], pods: Iterable[Mapping[str, Any]], events: Iterable[Mapping[str, Any]],
             now: datetime | None = None, runs_on: str | None = None,
             workload: Mapping[str, Any] | None = None) -> str:
    """The text of `kubectl tfjob describe` (events oldest first; the last EVENTS_SHOWN are shown).
    `runs_on`: for a job MultiKueue dispatched, the worker cluster it runs on ('' while unplaced);
    its pods are there, so none is expected here. `workload`: the job's Kueue Workload, if it has one."""
    now = now or datetime.now(UTC)
    metadata, spec, status = job.get("metadata") or {}, job.get("spec") or {}, job.get("status") or {}
    state = job_state(job)
    detail = state_detail(job)
    created = metadata.get("creationTimestamp")
    lines = [
        f"Name:         {metadata.get('name', '')}",
        f"Namespace:    {metadata.get('namespace', '')}",
        f"State:        {state or '<none> (not seen by the operator yet)'}" + (f" - {detail}" if detail else ""),
        f"Created:      {created or '<unknown>'} ({age_since(created, now)} ago)",
        f"Started:      {status.get('startTime') or '<none>'}",
        f"Completed:    {status.get('completionTime') or '<none>'}",
        f"Restarts:     {status.get('restartCount', 0)} ({_job_budget(spec, status)})",
    ]
    if runs_on is not None:
        lines.append(runs_on_line(runs_on))
    if spec.get("suspend") and runs_on is None:
        lines.append("Suspend:      true")
    if workload is not None:
        lines += _queue_lines(workload)
    progress = training(job, now)
    if progress is not None:
        lines.append(f"Training:     {render_training(progress, now)}")
        if progress.resumed is not None:
            lines.append(f"Resumed:      {render_resume(progress.resumed, now)}")
    lines.append("")

    found = (status.get("conditions") or [])
    if found:
        lines.append("Conditions:")
        lines.append(table(["TYPE", "STATUS", "REASON", "AGE", "MESSAGE"],
                           [[c.get("type", ""), c.get("status", ""), c.get("reason", ""),
                             age_since(c.get("lastTransitionTime"), now), c.get("message", "")] for c in found],
                           indent="  "))
        lines.append("")

    desired = roles(job)
    replica_statuses = status.get("replicaStatuses") or {}
    lines.append("Roles:")
    lines.append(table(["ROLE", "REPLICAS", "ACTIVE", "SUCCEEDED", "FAILED", "RESTART POLICY", "RESTARTS",
                        "BUDGET LEFT"],
                       [[role, count, (replica_statuses.get(role) or {}).get("active", 0),
                         (replica_statuses.get(role) or {}).get("succeeded", 0),
                         (replica_statuses.get(role) or {}).get("failed", 0),
                         (spec.get(role) or {}).get("restartPolicy", "OnFailure"),
                         *_budget(spec.get(role) or {}, replica_statuses.get(role) or {})]
                        for role, count in desired.items()],
                       indent="  "))
    lines.append("")
    rules = (spec.get("failurePolicy") or {}).get("rules") or []
    if rules:
        lines.append("Failure rules (first match wins):")
        lines += [f"  {i}. {rule_text(rule)}" for i, rule in enumerate(rules)]
        lines.append("")

    pod_list = list(pods)
    by_slot = pods_by_slot(pod_list)
    expect_pods = (state not in FINISHED_STATES and state != conditions.SUSPENDED and not spec.get("suspend")
                   and runs_on is None)
    rows: list[list[Any]] = []
    problems: list[str] = []
    slots = sorted({*((role, i) for role, count in desired.items() for i in range(count)), *by_slot},
                   key=lambda s: (list(desired).index(s[0]) if s[0] in desired else 99, s[1]))
    for slot in slots:
        name = slot_name(*slot)
        here = sorted(by_slot.get(slot, []), key=lambda p: podstate.is_terminating(p))
        if not here:
            if expect_pods:
                rows.append([name, "-", "missing", "", "", "", ""])
            continue
        for pod in here:
            rows.append([name, podstate.name(pod), pod_status(pod), podstate.node_name(pod) or "<none>",
                         podstate.container_restarts(pod), pod_task(pod) or "<none>",
                         age_since((pod.get("metadata") or {}).get("creationTimestamp"), now)])
            problem = pod_problem(pod)
            if problem:
                problems.append(f"{name} ({podstate.name(pod)}, {pod_status(pod)}): {problem}")
    others = [p for p in pod_list if podstate.slot(p) is None]
    for pod in others:
        rows.append(["<stray>", podstate.name(pod), pod_status(pod), podstate.node_name(pod) or "<none>",
                     podstate.container_restarts(pod), pod_task(pod) or "<none>",
                     age_since((pod.get("metadata") or {}).get("creationTimestamp"), now)])
    lines.append("Pods:")
    if rows:
        lines.append(table(["SLOT", "POD", "STATUS", "NODE", "RESTARTS", "TASK", "AGE"], rows, indent="  "))
    else:
        lines.append("  <none>")
    lines.append("")

    everything = job_problems(job) + problems
    lines.append("Problems:")
    lines += [f"  {p}" for p in everything] or ["  <none>"]
    lines.append("")

    shown = list(events)[-EVENTS_SHOWN:]
    lines.append("Events:")
    if shown:
        lines.append(table(["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"],
                           [_event_row(e, now) for e in shown], indent="  "))
    else:
        lines.append("  <none>")
    return "\n".join(lines) + "\n"
