"""Durations in and out: kubectl's `--since=5m` / `--timeout=1h30m` and its ages ("3m", "2d").

Pure functions. Input uses Go's duration units (h, m, s, ms; combined, as in `1h30m`), and a bare
number means seconds. Output follows kubectl's AGE column (coarser as it grows) and a clock-like
elapsed time for progress lines (`4m05s`).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from tfjob_api.timeutil import parse_time

__all__ = ["age", "age_since", "elapsed", "parse_duration", "parse_time"]

_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


def parse_duration(text: str) -> float:
    """Seconds in `text`: `90`, `90s`, `1.5h`, `1h30m`, `250ms`. Raises ValueError otherwise."""
    value = text.strip()
    if re.fullmatch(r"\d+(\.\d+)?", value):
        return float(value)
    parts = _PART.findall(value)
    if not value or "".join(number + unit for number, unit in parts) != value:
        raise ValueError(f"invalid duration {text!r} (use e.g. 30s, 5m, 1h30m)")
    return sum(float(number) * _UNITS[unit] for number, unit in parts)


def age(seconds: float) -> str:
    """kubectl's human duration: 45s, 3m20s, 12m, 5h10m, 20h, 3d, 2y."""
    s = max(int(seconds), 0)
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    days = s // 86400
    if days < 365 * 2:
        return f"{days}d"
    return f"{days // 365}y"


def elapsed(seconds: float) -> str:
    """A clock-like elapsed time: 7s, 4m05s, 2h03m04s."""
    s = max(int(seconds), 0)
    hours, rest = divmod(s, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m{secs:02d}s"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


def age_since(timestamp: str | None, now: datetime | None = None) -> str:
    """`age` of a Kubernetes timestamp; `<unknown>` when there is none."""
    moment = parse_time(timestamp)
    if moment is None:
        return "<unknown>"
    return age(((now or datetime.now(UTC)) - moment).total_seconds())
