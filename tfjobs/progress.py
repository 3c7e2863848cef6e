"""A job's progress in one line: state, pods running per role, restarts, time waited, and the
training's own progress when the job reports it (`tfjobs.training`).

`Progress` is what `TfJobClient.wait_for` hands its `on_progress` callback; `render` is the line
`kubectl tfjob wait` shows (rewritten in place on a terminal, printed as it changes otherwise).
Pure: the job and its pods go in, a value comes out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from tfjob_api import podstate
from tfjobs.durations import elapsed as format_elapsed
from tfjobs.jobview import job_state, roles, state_detail
from tfjobs.training import Training, render_training, training

__all__ = ["Progress", "RoleProgress", "progress", "render"]


@dataclass(frozen=True)
class RoleProgress:
    """Pods of one role: desired replicas, and how many are running, pending, done, failed."""

    role: str
    desired: int
    running: int = 0
    pending: int = 0
    succeeded: int = 0
    failed: int = 0


@dataclass(frozen=True)
class Progress:
    """A snapshot of a job while someone waits on it. `changed_from` ignores the clock."""

    name: str
    namespace: str
    state: str
    detail: str
    roles: tuple[RoleProgress, ...]
    restarts: int
    elapsed: float
    job: Mapping[str, Any] = field(compare=False, repr=False)
    training: Training | None = None  # status.progress (spec.progress), when the job reports it

    def same_as(self, other: Progress | None) -> bool:
        """Whether nothing but the time waited (and the time left) differs from `other`."""
        return other is not None and (self.state, self.detail, self.roles, self.restarts, self._reported()) == (
            other.state, other.detail, other.roles, other.restarts, other._reported())

    def _reported(self) -> tuple[Any, ...] | None:
        t = self.training
        return None if t is None else (t.percent, t.step, t.epoch, tuple(t.metrics.items()), t.last_update, t.problem)


def progress(job: Mapping[str, Any], pods: Iterable[Mapping[str, Any]], waited: float,
             now: datetime | None = None) -> Progress:
    """The progress of `job` given its pods (those the job's label selects) after `waited` seconds
    (`now`: the current time, for the training's time left)."""
    counts: dict[str, dict[str, int]] = {}
    for pod in pods:
        slot = podstate.slot(pod)
        if slot is None or podstate.is_terminating(pod):
            continue
        phase = podstate.phase(pod)
        key = {"Running": "running", "Succeeded": "succeeded", "Failed": "failed"}.get(phase, "pending")
        role_counts = counts.setdefault(slot[0], {})
        role_counts[key] = role_counts.get(key, 0) + 1
    metadata = job.get("metadata") or {}
    return Progress(
        name=metadata.get("name") or "",
        namespace=metadata.get("namespace") or "",
        state=job_state(job),
        detail=state_detail(job),
        roles=tuple(RoleProgress(role, desired, **counts.get(role, {})) for role, desired in roles(job).items()),
        restarts=int((job.get("status") or {}).get("restartCount") or 0),
        elapsed=waited,
        job=job,
        training=training(job, now),
    )


def render(p: Progress, *, detail: bool = False) -> str:
    """`mnist  Running  chief 1/1  worker 2/2 running  restarts 0  1m02s  45% ETA 12m` (the training's
    percent, or steps/epochs, and its ETA when the job reports them; with `detail`, the state's reason
    and message follow)."""
    parts = []
    for r in p.roles:
        text = f"{r.role} {r.running}/{r.desired}"
        extra = [f"{n} {what}" for n, what in ((r.succeeded, "done"), (r.failed, "failed")) if n]
        parts.append(text + (f" ({', '.join(extra)})" if extra else ""))
    line = f"{p.name}  {p.state or 'Pending'}  {'  '.join(parts)} running  restarts {p.restarts}  " \
           f"{format_elapsed(p.elapsed)}"
    if p.training is not None:
        shown = render_training(p.training, brief=True)
        line += f"  {shown}" if shown else ""
    if detail and p.detail:
        line += f"  - {p.detail}"
    return line
