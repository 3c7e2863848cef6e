"""A job's training progress as its status says (`status.progress`, from a job with `spec.progress`):
how far, which metrics, and the time left *now*.

The operator writes the ETA as a time (`estimatedCompletionTime`) when the report changes; between two
writes the time left shrinks, so `remaining` is computed here from that time and the current one,
never read from the `remaining` column text. `kubectl tfjob describe` and `wait` and
`TfJobClient.training` use it, and describe says when the training last resumed after an interruption
and how many steps that cost (`status.progress.lastResume`). Pure: the job and the current time in, a value out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from tfjobs.durations import age, age_since, parse_time

__all__ = ["Resume", "Training", "render_resume", "render_training", "training"]


@dataclass(frozen=True)
class Resume:
    """The training's last resume after an interruption (`status.progress.lastResume`)."""

    time: str | None  # when the operator first read the new process's step (RFC 3339)
    step: int | None  # the first step reported after the interruption
    step_before: int | None  # the last step seen before it
    steps_lost: int | None


@dataclass(frozen=True)
class Training:
    """What the reporting pod last said; None where it said nothing."""

    percent: int | None
    step: int | None
    total_steps: int | None
    epoch: int | None
    total_epochs: int | None
    metrics: Mapping[str, str] = field(default_factory=dict)
    remaining: float | None = None  # seconds left at the recent rate, as of `now`
    last_update: str | None = None  # when the operator saw the report change (RFC 3339)
    reported_by: str = ""
    problem: str = ""
    resumed: Resume | None = None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def training(job: Mapping[str, Any], now: datetime | None = None) -> Training | None:
    """The job's training progress, or None when its status has none."""
    shown = (job.get("status") or {}).get("progress")
    if not isinstance(shown, Mapping) or not shown:
        return None
    eta = parse_time(shown.get("estimatedCompletionTime"))
    metrics = shown.get("metrics")
    last = shown.get("lastResume")
    resumed = Resume(last.get("time"), _int(last.get("step")), _int(last.get("stepBefore")),
                     _int(last.get("stepsLost"))) if isinstance(last, Mapping) else None
    return Training(
        percent=_int(shown.get("percent")), step=_int(shown.get("step")), total_steps=_int(shown.get("totalSteps")),
        epoch=_int(shown.get("epoch")), total_epochs=_int(shown.get("totalEpochs")),
        metrics={str(k): str(v) for k, v in metrics.items()} if isinstance(metrics, Mapping) else {},
        remaining=None if eta is None else max(0.0, (eta - (now or datetime.now(UTC))).total_seconds()),
        last_update=shown.get("lastUpdateTime"), reported_by=str(shown.get("reportedBy") or ""),
        problem=str(shown.get("problem") or ""), resumed=resumed,
    )


def _counted(done: int | None, total: int | None, unit: str) -> str:
    if done is None:
        return ""
    return f"{unit} {done}/{total}" if total else f"{unit} {done}"


def render_training(t: Training, now: datetime | None = None, *, brief: bool = False) -> str:
    """`45% (step 4500/10000, epoch 3/10)  ETA 12m  loss=0.2314 accuracy=0.912  (reported 20s ago)`;
    parts nobody reported are left out. `brief`: the percent (or counts) and the ETA only."""
    counts = ", ".join(c for c in (_counted(t.step, t.total_steps, "step"), _counted(t.epoch, t.total_epochs, "epoch"))
                       if c)
    parts = []
    if t.percent is not None:
        parts.append(f"{t.percent}%" + (f" ({counts})" if counts else ""))
    elif counts:
        parts.append(counts)
    if t.remaining is not None:
        parts.append(f"ETA {age(t.remaining)}")
    if brief:
        return "  ".join(parts)
    if t.metrics:
        parts.append(" ".join(f"{name}={value}" for name, value in t.metrics.items()))
    if t.last_update:
        parts.append(f"(reported {age_since(t.last_update, now)} ago)")
    if t.problem:
        parts.append(f"[{t.problem}]")
    return "  ".join(parts)


def render_resume(r: Resume, now: datetime | None = None) -> str:
    """`at step 91, 3m ago (2026-12-06T09:00:00Z); last step seen before the interruption: 100; 9 step(s) lost`."""
    when = f", {age_since(r.time, now)} ago ({r.time})" if r.time else ""
    return (f"at step {r.step}{when}; last step seen before the interruption: {r.step_before}; "
            f"{r.steps_lost} step(s) lost")
