"""Training progress as a trainer reports it and the operator reads it: a small JSON document.

`GET /progress` on the trainer's endpoint (docs/production.md §6) answers the latest report, e.g.

    {"step": 4500, "totalSteps": 10000, "epoch": 3, "totalEpochs": 10, "metrics": {"loss": 0.231}}

Every field is optional (`{}`: nothing reported yet). `step` and `epoch` count what is *completed*, so
`step / totalSteps` is the fraction done. `startStep` is the step this process's training started from:
0 for a fresh start, the restored checkpoint's step after an interruption; with it the operator counts
the steps an interruption cost exactly, however late its first read of the new process comes.

`checked` is the one definition of what a report may hold: the trainer runs it on every `report()` (a
bad value fails at the call that made it, naming the field), and the operator runs it again on every
answer, because it trusts nothing a pod says. It keeps only the fields above, so a report cannot carry
anything else into the job's status (a `conditions` key is dropped with every other unknown one; a newer
trainer's extra fields do not break an older operator).

The bounds keep a status small and cheap to store whatever a trainer sends: integers up to 10^15, at
most `MAX_METRICS` metrics with short names, and an answer of at most `MAX_ANSWER_BYTES`. A metric is a
number, or null for a value that is not finite (a diverged loss is NaN; JSON has no NaN).
"""

from __future__ import annotations

import math
import operator
import re
import threading
from collections.abc import Mapping
from typing import Any

PROGRESS_PATH = "/progress"
MAX_COUNT = 10**15
MAX_METRICS = 8
MAX_ANSWER_BYTES = 4096
QUOTE_MAX = 60
METRIC_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_./-]{0,62}$")

COUNTS = {"step": 0, "totalSteps": 1, "epoch": 0, "totalEpochs": 1, "startStep": 0}
"""The integer fields and their smallest value."""
FIELDS = (*COUNTS, "metrics")


class ProgressError(ValueError):
    """A report that breaks the rules above; the message names the field."""


def _shown(value: Any) -> str:
    """A value quoted in a message, short whatever its size: the message reaches the job's status, and
    the operator quotes what a pod sent."""
    text = repr(value)
    return text if len(text) <= QUOTE_MAX else f"{text[:QUOTE_MAX - 20]}… ({len(text)} characters)"


def _count(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ProgressError(f"{name} must be an integer, not {type(value).__name__}")
    if not COUNTS[name] <= value <= MAX_COUNT:
        raise ProgressError(f"{name} must be between {COUNTS[name]} and {MAX_COUNT}, not {_shown(value)}")
    return value


def _metric(name: Any, value: Any) -> float | None:
    if not isinstance(name, str) or not METRIC_NAME.match(name):
        raise ProgressError(f"metric name {_shown(name)} must match {METRIC_NAME.pattern}")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ProgressError(f"metrics.{name} must be a number or null, not {type(value).__name__}")
    number = float(value)
    return number if math.isfinite(number) else None


def checked(report: Any) -> dict[str, Any]:
    """The report's known fields, each checked (`ProgressError` names the first bad one); unknown
    fields are left out. A new dict."""
    if not isinstance(report, Mapping):
        raise ProgressError(f"a progress report is a JSON object, not {type(report).__name__}")
    result: dict[str, Any] = {name: _count(name, report[name]) for name in COUNTS if report.get(name) is not None}
    metrics = report.get("metrics")
    if metrics is not None:
        if not isinstance(metrics, Mapping):
            raise ProgressError(f"metrics must be an object of name: number, not {type(metrics).__name__}")
        if len(metrics) > MAX_METRICS:
            raise ProgressError(f"at most {MAX_METRICS} metrics, not {len(metrics)}")
        result["metrics"] = {name: _metric(name, value) for name, value in metrics.items()}
    return result


class ProgressReport:
    """The process's latest report, thread-safe: the training updates it, the endpoint reads it."""

    def __init__(self) -> None:
        self._report: dict[str, Any] = {}
        self._lock = threading.Lock()

    def update(self, *, step: int | None = None, total_steps: int | None = None, epoch: int | None = None,
               total_epochs: int | None = None, metrics: Mapping[str, Any] | None = None,
               start_step: int | None = None) -> None:
        """Set the fields given (the others keep their value); `metrics` replaces the metrics. Integers
        may be any integer type (NumPy's too), metrics anything `float()` takes. Raises
        `ProgressError` (a ValueError) for a value the operator would refuse, and changes nothing then."""
        fields: dict[str, Any] = {}
        for name, value in (("step", step), ("totalSteps", total_steps), ("epoch", epoch),
                            ("totalEpochs", total_epochs), ("startStep", start_step)):
            if value is not None:
                try:
                    fields[name] = operator.index(value)
                except TypeError:
                    raise ProgressError(f"{name} must be an integer, not {type(value).__name__}") from None
        if metrics is not None:
            fields["metrics"] = {name: _as_float(name, value) for name, value in metrics.items()}
        with self._lock:
            self._report = checked({**self._report, **fields})

    def document(self) -> dict[str, Any]:
        """The latest report as the endpoint answers it (a new dict)."""
        with self._lock:
            report = self._report
        return {**report, "metrics": dict(report["metrics"])} if "metrics" in report else dict(report)


def _as_float(name: str, value: Any) -> float | None:
    if value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ProgressError(f"metrics.{name} must be a number, not {type(value).__name__}") from None
