"""Apply the CRD's schema defaults to a job dict, as the API server does on admission.

`render` and `validate` work on files that never went through the API server, and the controller
should not depend on defaulting having happened (an object stored before a default was added), so
defaults are applied from the same schema in Python. Pure: returns a new dict.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from controller.job.crd import job_schema


def apply_defaults(job: Mapping[str, Any], schema: Mapping[str, Any] | None = None) -> dict[str, Any]:
    return _default(copy.deepcopy(dict(job)), schema if schema is not None else job_schema())


def _default(value: Any, schema: Mapping[str, Any]) -> Any:
    if isinstance(value, dict):
        for name, sub in (schema.get("properties") or {}).items():
            if name not in value and "default" in sub:
                value[name] = copy.deepcopy(sub["default"])
            if name in value:
                value[name] = _default(value[name], sub)
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping):
            for name in list(value):
                if name not in (schema.get("properties") or {}):
                    value[name] = _default(value[name], extra)
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        return [_default(item, schema["items"]) for item in value]
    return value
