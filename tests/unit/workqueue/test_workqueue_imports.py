"""Importing the work queue loads no API client: it needs only `kube.clock` and `kube.throttle`, and
`kube` loads its names on first use, so `kube.client` (and with it the `kubernetes` package) stays out."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def loaded_after(program: str) -> list[str]:
    """The modules of `kube` and `kubernetes` a fresh interpreter holds after running `program`."""
    printed = subprocess.run(
        [sys.executable, "-c", f"{program}\nimport sys\nprint(*sorted(sys.modules))"],
        cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    return [name for name in printed if name.split(".")[0] in ("kube", "kubernetes")]


def test_importing_the_work_queue_leaves_the_api_client_unloaded() -> None:
    loaded = loaded_after("import workqueue\nfrom workqueue import RateLimitingQueue")
    assert "kube.client" not in loaded and not [name for name in loaded if name.startswith("kubernetes")], loaded


@pytest.mark.parametrize(("name", "home"), [("Kube", "kube.client"), ("ApiError", "kube.errors"),
                                             ("resource_path", "kube.paths")])
def test_a_name_of_kube_loads_its_module_on_first_use(name: str, home: str) -> None:
    assert home in loaded_after(f"from kube import {name}")
