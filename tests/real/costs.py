"""What the real-node tests cost: lines of (what, seconds) that the session prints at its end
(tests/real/conftest.py), so every run reports the cluster's start, the image import, each scenario's
wall time and how long real pods took to start."""

from __future__ import annotations

from datetime import datetime
from typing import Any

COSTS: list[tuple[str, float]] = []


def record(what: str, seconds: float) -> None:
    COSTS.append((what, seconds))


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def startup_seconds(pod: dict[str, Any]) -> float | None:
    """Seconds from the pod's creation to its first container's start (None before it started)."""
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        for state in (status.get("state") or {}, status.get("lastState") or {}):
            started = (state.get("running") or state.get("terminated") or {}).get("startedAt")
            if started:
                return (_time(started) - _time(pod["metadata"]["creationTimestamp"])).total_seconds()
    return None
