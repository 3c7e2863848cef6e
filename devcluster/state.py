"""Where a devcluster keeps its files, and the runtime facts (ports, pids) it records on disk.

A cluster is a folder: PKI, kubeconfigs, component logs, the KWOK stage config and state.json.
Recording pids and ports in the folder (not only in the Python object that started them) is
what lets `tfjob-devcluster down` or `status` run in a different process from `up`, and lets a
crashed test session be cleaned up afterwards. etcd's data is the one thing kept elsewhere
(/dev/shm when available, for speed); its path is recorded too.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Self


def default_dir() -> Path:
    """The cluster folder used when none is given: ~/.cache/tfjob-operator/clusters/default."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "tfjob-operator" / "clusters" / "default"


class JsonState:
    """A dataclass of runtime facts saved as JSON in a cluster's folder (the cluster's own, Kueue's,
    scheduler-plugins'): written whole through a temporary file, so a reader never sees half of it."""

    def save(self, path: Path) -> None:
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2) + "\n")  # type: ignore[call-overload]
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path) -> Self | None:
        try:
            return cls(**json.loads(path.read_text()))
        except FileNotFoundError:
            return None


@dataclass(frozen=True)
class Layout:
    """The files of one cluster folder."""

    dir: Path

    @property
    def pki(self) -> Path:
        return self.dir / "pki"

    @property
    def logs(self) -> Path:
        return self.dir / "logs"

    @property
    def state_file(self) -> Path:
        return self.dir / "state.json"

    @property
    def kubeconfig(self) -> Path:
        """The admin (system:masters) kubeconfig."""
        return self.dir / "kubeconfig"

    @property
    def kubeconfigs(self) -> Path:
        """Folder of the components' and ServiceAccounts' kubeconfigs."""
        return self.dir / "kubeconfigs"

    @property
    def kwok_config(self) -> Path:
        return self.dir / "kwok-stages.yaml"

    @property
    def pod_logs(self) -> Path:
        """Folder of the simulated containers' logs (`<namespace>/<pod>/<container>.log`)."""
        return self.dir / "pod-logs"

    def log(self, component: str) -> Path:
        return self.logs / f"{component}.log"

    def component_kubeconfig(self, user: str) -> Path:
        return self.kubeconfigs / f"{user}.kubeconfig"


# Seconds a node may miss its lease renewals before the controller-manager judges it lost (default 50 s).
NODE_MONITOR_GRACE_SECONDS = 20


@dataclass
class ClusterState(JsonState):
    """What `up` decided and started; saved as state.json after every change."""

    bin_dir: str
    advertise_address: str
    etcd_data_dir: str
    ports: dict[str, int]
    pids: dict[str, int] = field(default_factory=dict)
    nodes: list[str] = field(default_factory=list)
    node_ips: dict[str, str] = field(default_factory=dict)
    node_resources: dict[str, str] = field(default_factory=dict)
    executables: dict[str, str] = field(default_factory=dict)  # argv[0] of components not in bin_dir
    pod_logs: bool = True  # whether the pod-logs agent runs (container logs of simulated pods)
    node_grace_seconds: int = NODE_MONITOR_GRACE_SECONDS  # the controller-manager's node grace period
    real_nodes: int = 0  # real kubelets with containerd beside the KWOK nodes (realnodes.py)
    real_bin_dir: str = ""  # the folder of kubelet, kube-proxy, coredns and kube-router


