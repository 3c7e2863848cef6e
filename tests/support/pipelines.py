"""The pipeline examples (manifests/examples/pipelines/) as the tests load them: the KFP example's module
is imported from its file, without `kfp` (the SDK is imported only to compile)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

PIPELINES = Path(__file__).resolve().parents[2] / "manifests" / "examples" / "pipelines"


def kfp_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("kfp_pipeline_example", PIPELINES / "kfp_pipeline.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # kfp itself is imported only to compile
    return module
