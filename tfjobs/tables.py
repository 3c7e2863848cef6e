"""Plain-text tables the way kubectl prints them: upper-case headers, columns padded by three spaces.

Also the rows of `kubectl tfjob get` (the same columns as the CRD's printer columns: State,
Workers, PS, Restarts, Progress, ETA, Age; with `wide` also Started, Completed and Metrics; the ETA
is the time left now, from `status.progress.estimatedCompletionTime`). Pure functions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from tfjobs.durations import age, age_since
from tfjobs.jobview import job_state
from tfjobs.training import training

__all__ = ["job_rows", "table"]


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], indent: str = "") -> str:
    """Columns left-aligned, separated by three spaces; the last column is not padded."""
    text_rows = [[str(cell) for cell in row] for row in rows]
    widths = [max(len(str(h)), *(len(r[i]) for r in text_rows)) if text_rows else len(str(h))
              for i, h in enumerate(headers)]
    lines = []
    for row in [list(map(str, headers)), *text_rows]:
        cells = [cell.ljust(widths[i]) if i < len(row) - 1 else cell for i, cell in enumerate(row)]
        lines.append(indent + "   ".join(cells).rstrip())
    return "\n".join(lines)


def _active(job: Mapping[str, Any], role: str) -> str:
    spec, status = job.get("spec") or {}, job.get("status") or {}
    if role not in spec:
        return "<none>"
    return str(((status.get("replicaStatuses") or {}).get(role) or {}).get("active", 0))


def job_rows(jobs: Iterable[Mapping[str, Any]], *, wide: bool = False, all_namespaces: bool = False,
             now: datetime | None = None) -> tuple[list[str], list[list[str]]]:
    """Headers and rows of `get`: NAME, STATE, WORKERS, PS, RESTARTS, PROGRESS, ETA, AGE (+ STARTED,
    COMPLETED, METRICS), of jobs read as the job model; a KIND column after NAME when both kinds are
    listed."""
    jobs = list(jobs)
    mixed = len({job.get("kind") for job in jobs}) > 1
    headers = ["NAME", "STATE", "WORKERS", "PS", "RESTARTS", "PROGRESS", "ETA", "AGE"]
    if mixed:
        headers.insert(1, "KIND")
    if all_namespaces:
        headers.insert(0, "NAMESPACE")
    if wide:
        headers += ["STARTED", "COMPLETED", "METRICS"]
    rows = []
    for job in jobs:
        metadata, status = job.get("metadata") or {}, job.get("status") or {}
        shown, reported = status.get("progress") or {}, training(job, now)
        eta = reported.remaining if reported is not None else None
        row = [metadata.get("name", ""), job_state(job) or "<none>", _active(job, "worker"), _active(job, "ps"),
               str(status.get("restartCount", 0)), shown.get("summary") or "<none>",
               "<none>" if eta is None else age(eta), age_since(metadata.get("creationTimestamp"), now)]
        if mixed:
            row.insert(1, str(job.get("kind") or ""))
        if all_namespaces:
            row.insert(0, metadata.get("namespace", ""))
        if wide:
            row += [status.get("startTime") or "<none>", status.get("completionTime") or "<none>",
                    shown.get("metricsSummary") or "<none>"]
        rows.append(row)
    return headers, rows
