"""Compute a JSON merge patch (RFC 7386) that turns one dict into another.

Status is written with a merge patch so that only what changed travels; a key that disappeared
must be sent as null, or the server would keep it (e.g. `startTime` cleared on resume).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def merge_patch(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    patch: dict[str, Any] = {}
    for key in old:
        if key not in new:
            patch[key] = None
    for key, value in new.items():
        before = old.get(key)
        if key in old and before == value:
            continue
        if isinstance(value, Mapping) and isinstance(before, Mapping):
            patch[key] = merge_patch(before, value)
        else:
            patch[key] = value
    return patch
