"""Install a folder of CRDs on a devcluster and wait until the API server has established each.

Kueue and scheduler-plugins both ship their CRDs beside the binaries the build script makes
(`<bin dir>/crd`); their runners (devcluster/kueue.py, devcluster/schedulerplugins.py) install them
the same way, so the one way lives here. Server-side apply: some CRDs are too large for the
client-side apply annotation (Kueue's workloads.yaml is ~1.4 MB).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Collection
from pathlib import Path

from .api import ApiError
from .cluster import Cluster


def install_crds(cluster: Cluster, crd_dir: Path, names: Collection[str], timeout: float = 60.0) -> str:
    """Apply every CRD file in `crd_dir` and wait until each of `names` is Established. Returns ""
    when done, else what went wrong (each caller words its own error, with how to rebuild)."""
    files = sorted(crd_dir.glob("*.yaml"))
    if len(files) != len(names):
        return f"expected {len(names)} CRD files in {crd_dir}, found {len(files)}"
    cluster.kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=tfjob-devcluster",
                    "-f", str(crd_dir))
    pending = set(names)
    deadline = time.monotonic() + timeout
    while pending:
        for name in sorted(pending):
            with contextlib.suppress(ApiError, OSError):
                crd = cluster.api.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
                conditions = (crd.get("status") or {}).get("conditions") or []
                if any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions):
                    pending.discard(name)
        if not pending:
            return ""
        if time.monotonic() >= deadline:
            return f"timed out after {timeout:g}s waiting for CRDs to be Established: " + ", ".join(sorted(pending))
        time.sleep(0.2)
    return ""
