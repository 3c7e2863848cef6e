"""How far a training is and when it will end, from what it reported and when the operator saw it.

The fraction done is `step / totalSteps`, else `epoch / totalEpochs` (steps are finer). The ETA comes
from the *recent* rate: the fraction gained over the samples of the last `WINDOW` seconds (at least
the one before the newest), so a slow first epoch (compilation, a cold input pipeline) does not skew
the estimate for the rest of the run, and a change of speed shows within minutes. A fraction lower
than the last one (a trainer restarted from an earlier checkpoint) starts the history over.

Times are the operator's monotonic clock at each read, never the trainer's (which it does not trust).
Pure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

WINDOW = 600.0
"""Seconds of history the rate is measured over."""
MAX_SAMPLES = 64


@dataclass(frozen=True)
class Sample:
    at: float  # monotonic seconds, when the operator read the report
    fraction: float  # 0..1


def fraction_done(report: Mapping[str, Any]) -> float | None:
    """0..1 (a step past the total counts as done), or None without a total to divide by."""
    for done, total in (("step", "totalSteps"), ("epoch", "totalEpochs")):
        if report.get(done) is not None and report.get(total):
            fraction: float = report[done] / report[total]  # numbers of a JSON report, typed as such
            return min(1.0, fraction)
    return None


def percent(fraction: float) -> int:
    """Whole percent, rounded down: 100 only when done."""
    return min(100, math.floor(fraction * 100 + 1e-9))


def add_sample(samples: tuple[Sample, ...], sample: Sample, window: float = WINDOW) -> tuple[Sample, ...]:
    """The history with `sample` added: the samples of the last `window` seconds, and at least the one
    before it; all of them forgotten when the fraction went back."""
    if samples and sample.fraction < samples[-1].fraction:
        return (sample,)
    recent = [s for s in samples if s.at >= sample.at - window]
    if not recent and samples:
        recent = [samples[-1]]
    return (*recent[-(MAX_SAMPLES - 1):], sample)


def remaining_seconds(samples: tuple[Sample, ...]) -> float | None:
    """Seconds to the end at the recent rate; 0 when done; None while the rate is unknown (fewer than
    two samples, or no gain between them)."""
    if not samples:
        return None
    last = samples[-1]
    if last.fraction >= 1.0:
        return 0.0
    first = samples[0]
    if last.at <= first.at or last.fraction <= first.fraction:
        return None
    rate = (last.fraction - first.fraction) / (last.at - first.at)
    return (1.0 - last.fraction) / rate
