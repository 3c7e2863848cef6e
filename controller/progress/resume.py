"""What an interruption cost a training: when it resumed, from which step, and how many steps were lost.

When the reporting pod is replaced (a disruption, a group restart, a suspension and resume, a failure)
or its container restarts, the training starts again from its last checkpoint, and the steps done
since that checkpoint are done again. The operator sees it in the reports: the last step it read from
the old process, then where the new one started -- its `startStep` when it reports one (the step its
restored checkpoint holds, 0 when it started over), else the first step it reports, which a read that
comes late can put past the steps done again. Their difference is what the interruption cost, as far
as the operator could see (the last report read may be up to one `periodSeconds` older than the
interruption, so the true loss can be larger by what was trained in that time).

    progress:
      lastResume:
        time: "2026-12-06T09:00:00Z"  # when the operator first read the new process's step
        step: 90                      # the step it started from (startStep), else the first it reported
        stepBefore: 100               # the last step read before the interruption
        stepsLost: 10                 # stepBefore - step (0 when the training lost nothing)

`resumed` computes it from two reports and where each came from (`Target.incarnation`: the pod and
its container's restart count); `event` words it for the job's events once its status first shows
it. The book keeps the last report with a step across the interruption; an operator restarted in
between has no report from before it, and shows no resume for that interruption. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from controller.job.draft import Event
from tfjob_api.timeutil import format_time

FIELD = "lastResume"
REASON = "TrainingResumed"


def resumed(before: Mapping[str, Any] | None, before_from: str, report: Mapping[str, Any], report_from: str,
            at: datetime) -> dict[str, Any] | None:
    """`status.progress.lastResume` when `report` (read from `report_from` at `at`) is the first report
    with a step from another process than `before`, the last report with a step (read from
    `before_from`); None otherwise."""
    if before is None or before_from == report_from:
        return None
    step_before, step = before.get("step"), report.get("step")
    if not isinstance(step_before, int) or not isinstance(step, int):
        return None
    start = report.get("startStep")
    if isinstance(start, int) and start <= step:  # where it started; past its own step it is no start
        step = start
    return {"time": format_time(at), "step": step, "stepBefore": step_before, "stepsLost": max(0, step_before - step)}


def describe(resume: Mapping[str, Any]) -> str:
    """`resumed at step 90 (last step seen before the interruption: 100): 10 step(s) lost`."""
    return (f"resumed at step {resume.get('step')} (last step seen before the interruption: "
            f"{resume.get('stepBefore')}): {resume.get('stepsLost')} step(s) lost")


def event(before: Mapping[str, Any], after: Mapping[str, Any]) -> Event | None:
    """The Normal event to post when the status `after` shows a resume that `before` did not."""
    new = (after.get("progress") or {}).get(FIELD)
    if not isinstance(new, Mapping) or new == (before.get("progress") or {}).get(FIELD):
        return None
    return Event("Normal", REASON, f"Training {describe(new)}.")
