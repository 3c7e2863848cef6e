"""Which ports a devcluster component binds, and whether a restart may move them.

A port is either *known to others* or *private*:

* known to others — etcd's (the API server's `--etcd-servers`), the API server's (every kubeconfig,
  and the clients under test that read one once), KWOK's (every node's daemonEndpoints) and the real
  nodes' (written into their configuration files when the cluster starts). A restart keeps them: a
  moved API server would strand every client. They stay reserved for the cluster from `up` to `down`
  (devcluster/ports.py), so no other cluster, test worker or benchmark of this project picks them
  while the process is down for a moment; a process outside the project that binds one anyway makes
  the restart fail with an error that names the port.
* private — the controller-manager's and the scheduler's secure ports, read only by the cluster's own
  health checks. They are picked again at every start, and a start that lost a port is retried on
  new ones.
"""

from __future__ import annotations

from collections.abc import Mapping

from . import ports
from .ports import Holder

PRIVATE: Mapping[str, tuple[str, ...]] = {
    "kube-controller-manager": ("kube-controller-manager",),
    "kube-scheduler": ("kube-scheduler",),
}
KEPT: Mapping[str, tuple[str, ...]] = {
    "etcd": ("etcd", "etcd-peer"),
    "kube-apiserver": ("kube-apiserver",),
    "kwok": ("kwok",),
}
STARTS = 3  # attempts at starting a component with private ports that lost one of them


class PortTaken(RuntimeError):
    """A port the component must keep is reserved by another live holder."""


def movable(component: str) -> bool:
    """Whether a restart of `component` may take new ports."""
    return component in PRIVATE


def claim(component: str, current: Mapping[str, int], holder: Holder) -> dict[str, int]:
    """The ports `component` starts on, reserved for `holder`: new ones for a component with private
    ports (the old ones released), else its current ones, confirmed as still the cluster's."""
    if component in PRIVATE:
        names = PRIVATE[component]
        ports.release(current[name] for name in names if current.get(name))
        return ports.free_ports(names, holder=holder)
    names = tuple(name for name in KEPT.get(component, ()) if current.get(name))
    taken = ports.reserve((current[name] for name in names), holder)
    if taken:
        raise PortTaken(f"{component} must keep port(s) {', '.join(map(str, taken))} (clients know them), "
                        f"but another process of this project has reserved them "
                        f"(see {ports.registry_dir()})")
    return {name: current[name] for name in names}
