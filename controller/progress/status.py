"""`status.progress`: what a job's status says about its training, built from the latest valid report.

    progress:
      step: 4500              # as reported (completed), with totalSteps, epoch, totalEpochs
      totalSteps: 10000
      percent: 45             # whole percent, from steps, else epochs
      metrics: {loss: "0.2314", accuracy: "0.9120"}   # 4 significant digits; "nan" when not finite
      summary: "45%"          # the Progress column ("step 4500" or "epoch 3" without a total)
      remaining: "12m"        # the ETA column: time left at the recent rate, as of lastUpdateTime
      estimatedCompletionTime: "2026-12-02T14:12:00Z"
      metricsSummary: "loss=0.2314 accuracy=0.912"    # the Metrics column (-o wide)
      lastUpdateTime: "2026-12-02T14:00:00Z"           # when the operator saw the report change
      reportedBy: mnist-chief-0
      problem: "..."          # only when the latest answer was refused; the rest is the last valid one
      lastResume: {...}       # after an interruption: when, from which step, steps lost (controller.progress.resume)

Printer columns read fixed paths and cannot format, so the three display strings are stored beside the
numbers they are made of. Everything is computed when a report changes, never per reconcile: a job whose
training reports nothing new causes no write. Once the job is finished or suspended the ETA goes (with
the write that says so). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from controller.progress.estimate import fraction_done, percent
from tfjob_api.bounds import PROGRESS_TEXT_MAX, cut
from tfjob_api.timeutil import format_time

COUNT_FIELDS = ("step", "totalSteps", "epoch", "totalEpochs")
ETA_FIELDS = ("remaining", "estimatedCompletionTime")


def metric_text(value: float | None) -> str:
    return "nan" if value is None else f"{value:.4g}"


def short_duration(seconds: float) -> str:
    """`45s`, `12m`, `1h12m`, `2d3h`: the two largest units, rounded down."""
    s = max(0, int(seconds))
    days, rest = divmod(s, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d{hours}h" if hours else f"{days}d"
    if hours:
        return f"{hours}h{minutes}m" if minutes else f"{hours}h"
    if minutes:
        return f"{minutes}m{secs}s" if minutes < 10 and secs else f"{minutes}m"
    return f"{secs}s"


def summary(report: Mapping[str, Any]) -> str:
    fraction = fraction_done(report)
    if fraction is not None:
        return f"{percent(fraction)}%"
    if report.get("step") is not None:
        return f"step {report['step']}"
    if report.get("epoch") is not None:
        return f"epoch {report['epoch']}"
    return ""


def progress_status(report: Mapping[str, Any], *, reported_by: str, updated: datetime,
                    remaining: float | None, problem: str | None = None,
                    resumed: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """The `status.progress` of a checked report (`tfheartbeat.progress.checked`) read from
    `reported_by`, first seen at `updated`, with `remaining` seconds at the recent rate (None: not known
    yet) and the last resume after an interruption (`controller.progress.resume`), if any. None when
    there is nothing to show: an empty report and no problem."""
    shown: dict[str, Any] = {name: report[name] for name in COUNT_FIELDS if name in report}
    fraction = fraction_done(report)
    if fraction is not None:
        shown["percent"] = percent(fraction)
    metrics = report.get("metrics") or {}
    if metrics:
        shown["metrics"] = {name: metric_text(value) for name, value in metrics.items()}
        shown["metricsSummary"] = " ".join(f"{name}={metric_text(value)}" for name, value in metrics.items())
    if not shown and problem is None:
        return None
    text = summary(report)
    if text:
        shown["summary"] = text
    if remaining is not None:
        shown["remaining"] = short_duration(remaining)
        shown["estimatedCompletionTime"] = format_time(updated + timedelta(seconds=remaining))
    shown["lastUpdateTime"] = format_time(updated)
    shown["reportedBy"] = reported_by
    if problem is not None:
        shown["problem"] = cut(problem, PROGRESS_TEXT_MAX)
    if resumed is not None:
        shown["lastResume"] = dict(resumed)
    for name in ("summary", "metricsSummary"):
        if name in shown:
            shown[name] = cut(shown[name], PROGRESS_TEXT_MAX)
    return shown


def merge_progress(status: Mapping[str, Any], progress: Mapping[str, Any] | None, *, over: bool) -> dict[str, Any]:
    """`status` with `progress` as its `progress` (None: left as it is); without the ETA once the job is
    `over` (finished or suspended). A new dict; the inputs are not changed."""
    merged = dict(status)
    if progress is not None:
        merged["progress"] = dict(progress)
    if over and isinstance(merged.get("progress"), Mapping):
        merged["progress"] = {k: v for k, v in merged["progress"].items() if k not in ETA_FIELDS}
    return merged
