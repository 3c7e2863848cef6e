"""RFC 3339 timestamps as the API server writes them, and back.

Kubernetes timestamps have second precision and a `Z` suffix; status comparisons (write only on
change) rely on writing them in exactly that form. Part of `tfjob_api` because they are the API's own
format: the controller writes status times in it and `kubectl tfjob` reads them back.
"""

from __future__ import annotations

from datetime import UTC, datetime


def format_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def utcnow() -> datetime:
    return datetime.now(UTC)
