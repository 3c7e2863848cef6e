"""Apply the CRD's schema defaults to a job dict, as the API server does on admission.

`render` and `validate` work on files that never went through the API server, and the controller
should not depend on defaulting having happened (an object stored before a default was added), so
defaults are applied from the same schema in Python. Pure: returns a new dict. Part of `tfjob_api`
because the defaults are the CRD's: the schema states them, this only applies them.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from tfjob_api.crd import job_schema

# The TensorFlowJob defaults that code reads by name. The CRD's schema states them (`tfjob_api.schema`
# writes these very values into it) and the API server applies them; the planner and the builders
# fall back on them for a job model that did not go through defaulting.
CLEAN_POD_POLICY = "Running"
RESTART_POLICY = "OnFailure"
BACKOFF_LIMIT = 6

# Kubeflow's defaults for its TFJob kind, where they differ from TensorFlowJob's. Its CRD does not
# state them (Kubeflow's operator applied them on every reconcile); the model translation
# (`tfjob_api.kubeflow_model`) and `convert` apply them. A TFJob's backoffLimit unset means no limit.
TFJOB_CLEAN_POD_POLICY = "None"
TFJOB_RESTART_POLICY = "Never"


def apply_defaults(job: Mapping[str, Any], schema: Mapping[str, Any] | None = None) -> dict[str, Any]:
    defaulted = copy.deepcopy(dict(job))
    _default(defaulted, schema if schema is not None else job_schema())  # fills a dict in place
    return defaulted


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
