"""The host side of the real nodes: the pod bridge, the kernel switches it needs, and the clean-up of
what pods leave on the machine (container processes, mounts, network namespaces).

A real pod is more than a process the cluster started: containerd's shims outlive containerd by
design (so containers survive a runtime restart), the kubelet mounts volumes, and CNI creates network
namespaces and veth pairs. `down` must remove all of it even after a killed test run, so the clean-up
works from what is on the machine (the shims started for one containerd socket, the mounts under one
folder), never from what a previous process remembered.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path

from .realnode_config import BRIDGE, GATEWAY, PREFIX_LENGTH

SYSCTLS = {
    # Pods reach the Services' virtual addresses through the host, and kube-proxy's rewritten replies
    # come back the same way.
    "net/ipv4/ip_forward": "1",
    # Pod-to-pod packets cross the bridge; NetworkPolicy (kube-router's iptables rules) sees them only
    # when bridged traffic goes through iptables.
    "net/bridge/bridge-nf-call-iptables": "1",
}


class HostNetworkError(RuntimeError):
    """The machine refused a network change the real nodes need."""


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if check and result.returncode != 0:
        raise HostNetworkError(f"ip {' '.join(args)}: {result.stderr.strip()}")
    return result


def bridge_exists() -> bool:
    return _ip("link", "show", BRIDGE, check=False).returncode == 0


def create_bridge(addresses: Iterable[str]) -> None:
    """The pod bridge with the gateway address and one address per node (its kubelet's)."""
    if not bridge_exists():
        _ip("link", "add", BRIDGE, "type", "bridge")
    have = _ip("-4", "-o", "addr", "show", "dev", BRIDGE).stdout
    wanted = [f"{GATEWAY}/{PREFIX_LENGTH}", *(f"{a}/32" for a in addresses)]
    for cidr in wanted:
        if f" {cidr} " not in have:
            _ip("addr", "add", cidr, "dev", BRIDGE)
    _ip("link", "set", BRIDGE, "up")
    for key, value in SYSCTLS.items():
        path = Path("/proc/sys") / key
        try:
            path.write_text(value)
        except OSError as error:
            raise HostNetworkError(f"cannot set {key.replace('/', '.')}={value}: {error}") from error


def delete_bridge() -> None:
    if bridge_exists():
        _ip("link", "delete", BRIDGE, check=False)


def _children_by_parent() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(entry.name))
    return children


def _cmdline(pid: int) -> list[str]:
    try:
        return [a.decode(errors="replace") for a in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") if a]
    except OSError:
        return []


def shims_of(containerd_socket: Path) -> list[int]:
    """The containerd shims started by the containerd listening on `containerd_socket`."""
    shims = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            argv = _cmdline(int(entry.name))
            if argv and argv[0].endswith(("containerd-shim-runc-v2", "containerd-shim")) \
                    and str(containerd_socket) in argv:
                shims.append(int(entry.name))
    return shims


def kill_containers(containerd_socket: Path, timeout: float = 10.0) -> int:
    """SIGKILL every shim of one containerd and every process under it (the containers); return how
    many processes were killed. A shim is its containers' subreaper, so they are all its descendants."""
    tree = _children_by_parent()
    victims: list[int] = []
    todo = shims_of(containerd_socket)
    while todo:
        pid = todo.pop()
        victims.append(pid)
        todo.extend(tree.get(pid, []))
    for pid in victims:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() for pid in victims):
        time.sleep(0.05)
    return len(victims)


def unmount_under(folder: Path) -> int:
    """Unmount (lazily, deepest first) everything mounted at or below `folder`; return the count."""
    prefix = str(folder.resolve()) if folder.exists() else str(folder)
    mounts = []
    for line in Path("/proc/self/mounts").read_text().splitlines():
        fields = line.split()
        if len(fields) > 1:
            target = fields[1].replace("\\040", " ")
            if target == prefix or target.startswith(prefix + "/"):
                mounts.append(target)
    for target in sorted(set(mounts), key=len, reverse=True):
        subprocess.run(["umount", "-l", target], capture_output=True, check=False)
    return len(set(mounts))


def remove_veths() -> None:
    """Delete the veth pairs still enslaved to the pod bridge (their namespaces are gone or going)."""
    out = _ip("-o", "link", "show", "master", BRIDGE, check=False).stdout
    for line in out.splitlines():
        name = line.split(":")[1].strip().split("@")[0]
        _ip("link", "delete", name, check=False)


def remove_kube_rules() -> int:
    """Remove every iptables chain and rule named KUBE-* (kube-proxy's, kube-router's and the kubelet's
    canaries), keeping all others, and the ipsets kube-router made; return how many lines went.

    kube-proxy's and kube-router's own clean-up flags leave the kubelet's chains and, once the API
    server is gone, some of their own; this is the usual `iptables-save | grep -v KUBE-` clean-up."""
    removed = 0
    for table in ("filter", "nat", "mangle"):
        saved = subprocess.run(["iptables-save", "-t", table], capture_output=True, text=True, check=False).stdout
        kept = [line for line in saved.splitlines() if "KUBE-" not in line]
        removed += len(saved.splitlines()) - len(kept)
        if len(kept) != len(saved.splitlines()):
            subprocess.run(["iptables-restore"], input="\n".join(kept) + "\n", text=True, capture_output=True,
                           check=False)
    sets = subprocess.run(["ipset", "list", "-n"], capture_output=True, text=True, check=False).stdout.split()
    for name in sets:
        if name.startswith(("KUBE-", "kube-router")):
            subprocess.run(["ipset", "destroy", name], capture_output=True, check=False)
            removed += 1
    return removed
