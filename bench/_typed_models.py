"""Decode raw JSON into the `kubernetes` client's generated model objects, as the typed client would.

Only for the informer benchmark, which compares the operator's raw dicts with typed models: the
operator never builds them. `kube.client` loads the `kubernetes` package without its ~800 model
classes, leaving `kubernetes.client.models` empty; this module fills it on first use. It is the one
place outside `kube/client.py` that imports `kubernetes`, on purpose: it measures the path the
operator avoids.
"""

from __future__ import annotations

import importlib
import sys
from types import SimpleNamespace
from typing import Any

import kube.client  # noqa: F401  (loads the client core first, the way the operator does)

_model_client: Any = None


def decode_as_model(raw_json: bytes | str, model: str) -> Any:
    """Decode raw JSON into a generated model object (e.g. 'V1Pod')."""
    global _model_client
    if _model_client is None:
        _load_models()
        k8s_client = sys.modules["kubernetes.client"]
        _model_client = k8s_client.ApiClient(configuration=k8s_client.Configuration())
    return _model_client.deserialize(SimpleNamespace(data=raw_json), model)


def _load_models() -> None:
    """Fill the empty `kubernetes.client.models` package left by the client's core import (once)."""
    models = sys.modules.get("kubernetes.client.models")
    if models is not None and hasattr(models, "V1Pod"):
        return
    sys.modules.pop("kubernetes.client.models", None)
    client: Any = sys.modules["kubernetes.client"]
    client.models = importlib.import_module("kubernetes.client.models")
