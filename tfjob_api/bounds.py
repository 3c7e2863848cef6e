"""Text and documents cut to the limits the API server enforces, before they are sent.

Much of what the operator writes into a job's status and events comes from elsewhere: a pod's
waiting or termination message, the scheduler's and Kueue's messages, a trainer's progress report.
Any of it can be longer than the CRD allows (`maxLength`, `maxProperties`, `maxItems`), and one
string over a limit makes the API server refuse the whole status patch with 422 Invalid — every
later patch of that job too, since the operator computes the same status again. So every such text
is cut here, at the limit, with a visible mark of how much was cut, rather than trusted.

`fit` walks a value against its OpenAPI schema (the CRD's own, so the limits are stated once) and
cuts what is over a limit; `violations` lists what would be refused, for tests and for saying what
was cut. Lengths are counted in characters (Unicode code points), as the API server counts
`maxLength`. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

CUT_MARK = "… ({} more characters)"

CONDITION_REASON_MAX = 1024
"""metav1.Condition's limits, which the CRDs state for every condition."""
CONDITION_MESSAGE_MAX = 32768

PROGRESS_TEXT_MAX = 1024
"""The texts of `status.progress` (summary, remaining, metricsSummary, reportedBy, problem)."""

EVENT_MESSAGE_MAX_BYTES = 1024
"""What the API server keeps of an event's note, in bytes (client-go's recorder cuts there too)."""


def cut(text: str, limit: int) -> str:
    """`text` when it has at most `limit` characters, else its start and a mark saying how much is left
    out, `limit` characters in all."""
    if len(text) <= limit:
        return text
    for digits in range(1, 20):  # the mark's length depends on the number it shows
        kept = limit - len(CUT_MARK.format("9" * digits))
        if kept < 0:
            return text[:limit]
        if len(str(len(text) - kept)) <= digits:
            return text[:kept] + CUT_MARK.format(len(text) - kept)
    return text[:limit]  # pragma: no cover - a text of 10^19 characters


def cut_bytes(text: str, limit: int) -> str:
    """`text` cut to at most `limit` bytes of UTF-8, never inside a character, with the mark of `cut`."""
    encoded = text.encode("utf-8", "surrogatepass")
    if len(encoded) <= limit:
        return text
    room = len(CUT_MARK.format(len(text)).encode())  # the widest mark this text can need
    if limit < room:
        return encoded[:limit].decode("utf-8", "ignore")
    kept = encoded[:limit - room].decode("utf-8", "ignore")
    return kept + CUT_MARK.format(len(text) - len(kept))


def shown(value: Any, limit: int = 60) -> str:
    """`repr(value)` short enough to quote in a message about it."""
    return cut(repr(value), limit)


def fit(value: Any, schema: Mapping[str, Any]) -> Any:
    """`value` with every string, map and list over its schema's `maxLength`, `maxProperties` or
    `maxItems` cut to it (maps and lists keep their first entries). A new value where something was
    cut; the input is not changed."""
    if isinstance(value, str):
        limit = schema.get("maxLength")
        return cut(value, limit) if isinstance(limit, int) else value
    if isinstance(value, Mapping):
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        fitted: dict[str, Any] = {}
        for name, item in value.items():
            inner = properties.get(name, extra if isinstance(extra, Mapping) else None)
            fitted[name] = fit(item, inner) if inner else item
        limit = schema.get("maxProperties")
        if isinstance(limit, int) and len(fitted) > limit:
            fitted = dict(list(fitted.items())[:limit])
        return fitted
    if isinstance(value, list):
        items = schema.get("items") or {}
        limit = schema.get("maxItems")
        kept = value[:limit] if isinstance(limit, int) else value
        return [fit(item, items) for item in kept]
    return value


def violations(value: Any, schema: Mapping[str, Any], path: str = "") -> list[str]:
    """Where `value` breaks its schema's length and count limits, each as `path: what`."""
    found: list[str] = []
    if isinstance(value, str):
        limit = schema.get("maxLength")
        if isinstance(limit, int) and len(value) > limit:
            found.append(f"{path}: {len(value)} characters, at most {limit}")
    elif isinstance(value, Mapping):
        limit = schema.get("maxProperties")
        if isinstance(limit, int) and len(value) > limit:
            found.append(f"{path}: {len(value)} properties, at most {limit}")
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for name, item in value.items():
            inner = properties.get(name, extra if isinstance(extra, Mapping) else None)
            if inner:
                found.extend(violations(item, inner, f"{path}.{name}"))
    elif isinstance(value, list):
        limit = schema.get("maxItems")
        if isinstance(limit, int) and len(value) > limit:
            found.append(f"{path}: {len(value)} items, at most {limit}")
        for index, item in enumerate(value):
            found.extend(violations(item, schema.get("items") or {}, f"{path}[{index}]"))
    return found


def without_progress(status: Mapping[str, Any], why: str) -> dict[str, Any]:
    """`status` whose `progress` (what a trainer reported) is only a note that it was refused and why:
    what the operator writes when the API server refused the whole status as invalid."""
    note = cut(f"the API server refused the progress: {why}", PROGRESS_TEXT_MAX)
    return {**status, "progress": {"problem": note}}
