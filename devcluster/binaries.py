"""Find the control-plane binaries (etcd, kube-apiserver, ..., kwok) the devcluster runs.

The binaries are large and slow to build, so they live outside the repository, in one folder
per pinned version set. The lookup order is the one a developer expects: an explicit folder
from the environment ($KUBEBUILDER_ASSETS, then $TFJOB_BIN_DIR) when it holds *every* binary,
then the cache that build-binaries.sh fills (building it on demand), else one clear error that
names what is missing. Mixing binaries from two folders is never done: the versions must match.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REQUIRED = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "kwok")
REAL_NODE_BINARIES = ("kubelet", "kube-proxy", "coredns", "kube-router")
PACKAGE_DIR = Path(__file__).resolve().parent
BUILD_SCRIPT = PACKAGE_DIR / "build-binaries.sh"
VERSIONS_FILE = PACKAGE_DIR / "versions.env"


class MissingBinariesError(RuntimeError):
    """No folder holds every control-plane binary, and building them was not possible."""


def read_versions(path: Path = VERSIONS_FILE) -> dict[str, str]:
    """Parse versions.env (KEY=VALUE lines, # comments) into a dict."""
    versions: dict[str, str] = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            versions[key.strip()] = value.strip().strip("\"'")
    return versions


def cache_dir() -> Path:
    """The folder build-binaries.sh builds into when $TFJOB_BIN_DIR is not set."""
    v = read_versions()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "tfjob-operator" / f"k8s-{v['K8S_VERSION']}-etcd-{v['ETCD_VERSION']}-kwok-{v['KWOK_VERSION']}"


def missing_in(folder: Path) -> list[str]:
    """The required binaries that are not executable files in folder."""
    return [name for name in REQUIRED if not os.access(folder / name, os.X_OK)]


def find_bin_dir(build: bool = True) -> Path:
    """Return a folder holding every required binary, building the cache if allowed.

    Raises MissingBinariesError naming, per folder looked at, what is missing.
    """
    looked: list[str] = []
    for var in ("KUBEBUILDER_ASSETS", "TFJOB_BIN_DIR"):
        value = os.environ.get(var)
        if value:
            folder = Path(value).expanduser()
            missing = missing_in(folder)
            if not missing:
                return folder
            looked.append(f"${var}={folder} lacks {', '.join(missing)}")

    # build-binaries.sh builds into $TFJOB_BIN_DIR when it is set, else into the cache.
    target = Path(os.environ["TFJOB_BIN_DIR"]).expanduser() if os.environ.get("TFJOB_BIN_DIR") else cache_dir()
    missing = missing_in(target)
    if not missing:
        return target
    if not os.environ.get("TFJOB_BIN_DIR"):  # else already reported above
        looked.append(f"{target} lacks {', '.join(missing)}")

    if build:
        print(f"tfjob-devcluster: building the control plane into {target} (first run: 10-40 min)",
              file=sys.stderr)
        result = subprocess.run(["bash", str(BUILD_SCRIPT), "core"], stdout=sys.stderr, check=False)
        missing = missing_in(target)
        if result.returncode == 0 and not missing:
            return target
        looked.append(f"{BUILD_SCRIPT.name} core exited with {result.returncode}" if result.returncode
                      else f"{BUILD_SCRIPT.name} core finished but {target} still lacks {', '.join(missing)}")

    raise MissingBinariesError(
        "control-plane binaries not found: " + "; ".join(looked)
        + f". Run `bash {BUILD_SCRIPT} core` (needs Go and the Go module proxy), or set "
        "TFJOB_BIN_DIR to a folder holding " + ", ".join(REQUIRED) + "."
    )


def find_real_bin_dir() -> Path:
    """The folder of the real nodes' binaries (REAL_NODE_BINARIES), built by `build-binaries.sh real`
    on first use (about 10 min cold; at once when they are there)."""
    result = subprocess.run(["bash", str(BUILD_SCRIPT), "real"], stdout=sys.stderr, check=False)
    folder = Path(subprocess.run(["bash", str(BUILD_SCRIPT), "real-dir"], capture_output=True, text=True,
                                 check=False).stdout.strip())
    missing = [name for name in REAL_NODE_BINARIES if not os.access(folder / name, os.X_OK)]
    if result.returncode != 0 or missing:
        raise MissingBinariesError(f"real-node binaries: `bash {BUILD_SCRIPT} real` exited {result.returncode}"
                                   + (f"; {folder} lacks {', '.join(missing)}" if missing else ""))
    return folder
