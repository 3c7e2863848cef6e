"""Real nodes beside the KWOK ones: the files they need, the command line of each of their processes,
how to tell each is healthy, and how to remove every trace of them.

`Cluster.up(real_nodes=N)` calls this module; the configuration itself is in realnode_config.py and
the host's network in hostnet.py. Each real node is two processes (its containerd and its kubelet);
the cluster adds three that serve all real nodes at once, since they share the host's network
namespace: CoreDNS (the cluster DNS), kube-proxy (Services' virtual addresses) and kube-router (the
NetworkPolicy engine). The processes are started and stopped like every other component of the
cluster (a process group each, pids in state.json); what they leave behind (container processes under
the shims, mounts, network namespaces, veths, the bridge) is removed by `clean_up`.

One cluster at a time on a machine may have real nodes: they share the bridge `tfjob0`, its
addresses and containerd's socket path, so a second cluster's kubelets would talk to the first one's
containerd (and kill its containers as strangers), and its `down` would delete the first one's
bridge. `claim` makes that an error that names the running cluster, and `clean_up` leaves alone what
another live cluster owns.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import socket
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import yaml

from . import hostnet
from .components import SERVICE_CIDR
from .pki import sign_client, sign_serving, write_kubeconfig
from .realnode_config import (
    BRIDGE,
    REAL_NODE_LABEL,
    RUNTIME_DIR,
    RealNode,
    cni_conflist,
    containerd_config,
    corefile,
    kube_proxy_config,
    kube_router_arguments,
    kubelet_arguments,
    kubelet_config,
    plan_nodes,
    write_json,
)
from .state import ClusterState, Layout

CONTAINERD = "/usr/bin/containerd"
HOST_TOOLS = ("containerd", "containerd-shim-runc-v2", "runc", "ctr", "iptables", "ipset", "ip")
CNI_PLUGINS = ("bridge", "host-local", "loopback")


class RealNodeError(RuntimeError):
    """Real nodes cannot be started on this machine, and why."""


def image_store_root() -> Path:
    """Where the real nodes' containerd keep their images between clusters."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "tfjob-operator" / "real-nodes"


def nodes_of(layout: Layout, state: ClusterState) -> list[RealNode]:
    return plan_nodes(state.real_nodes, layout.dir, image_store_root())


def missing_host_tools() -> list[str]:
    """The programs the real nodes need that this machine lacks (install-real-nodes.sh installs them)."""
    missing = [tool for tool in HOST_TOOLS if shutil.which(tool) is None]
    missing += [f"CNI plugin {p}" for p in CNI_PLUGINS if not os.access(f"/usr/lib/cni/{p}", os.X_OK)]
    return missing


OWNER_FILE = "owner.json"


def owner(runtime_dir: Path = RUNTIME_DIR) -> Path | None:
    """The folder of the cluster whose real nodes run on this machine, if one's do."""
    try:
        folder = Path(json.loads((runtime_dir / OWNER_FILE).read_text())["cluster"])
        if _runs_real_nodes(folder):
            return folder
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return _containerd_running() if runtime_dir == RUNTIME_DIR else None


def _containerd_running() -> Path | None:
    """The folder of a cluster whose real node's containerd runs though no claim names it (one started
    before claims were made): found by its command line, `--config=<folder>/real-nodes/...`."""
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        if not argv or not argv[0].endswith(b"containerd"):
            continue
        for arg in argv:
            config = arg.decode(errors="replace").removeprefix("--config=")
            if "/real-nodes/real-node-" in config:
                return Path(config.split("/real-nodes/real-node-", 1)[0])
    return None


def _runs_real_nodes(folder: Path) -> bool:
    """Whether a process of the cluster in `folder` (a containerd or kubelet: its command line names a
    file of that folder) is alive."""
    state = ClusterState.load(Layout(folder).state_file)
    if state is None:
        return False
    marker = str(folder / "real-nodes").encode()
    for component, pid in state.pids.items():
        if component.startswith(("containerd-", "kubelet-")) and pid:
            try:
                if marker in Path(f"/proc/{pid}/cmdline").read_bytes():
                    return True
            except OSError:
                continue
    return False


def claim(layout: Layout, runtime_dir: Path = RUNTIME_DIR) -> None:
    """Make this cluster the one with real nodes on this machine; RealNodeError when another cluster's
    real nodes run."""
    runtime_dir.mkdir(parents=True, exist_ok=True)
    with open(runtime_dir / "claim.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        running = owner(runtime_dir)
        if running is not None and running.resolve() != layout.dir.resolve():
            raise RealNodeError(
                f"the cluster in {running} has real nodes on this machine, and only one cluster at a time can "
                f"(they share the bridge {BRIDGE}, its addresses and containerd's socket): stop it "
                f"first with `tfjob-devcluster down --dir {running}`, or start this one without real nodes")
        (runtime_dir / OWNER_FILE).write_text(json.dumps({"cluster": str(layout.dir)}))


def wait_until_free(timeout: float, runtime_dir: Path = RUNTIME_DIR, *, poll: float = 5.0,
                    clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> None:
    """Wait until no cluster's real nodes run on this machine, for at most `timeout` seconds, then
    RealNodeError naming the cluster that still holds them. For callers that would rather queue behind
    another cluster with real nodes (a test session beside someone's experiment) than be refused."""
    deadline = clock() + timeout
    while (running := owner(runtime_dir)) is not None:
        if clock() >= deadline:
            raise RealNodeError(
                f"the cluster in {running} still has real nodes on this machine after {timeout:.0f} s of waiting "
                f"(one cluster at a time can: they share the bridge {BRIDGE}): stop it with "
                f"`tfjob-devcluster down --dir {running}`")
        sleep(poll)


def prepare(layout: Layout, state: ClusterState) -> None:
    """Write every real node's certificates, kubeconfig and configuration, and create the bridge."""
    nodes = nodes_of(layout, state)
    if not nodes:
        return
    missing = missing_host_tools()
    if missing:
        raise RealNodeError(f"real nodes need {', '.join(missing)}: run `bash devcluster/install-real-nodes.sh`")
    if os.geteuid() != 0:
        raise RealNodeError("real nodes need root (a container runtime, mounts, a bridge)")
    claim(layout)
    pki = layout.pki
    server = f"https://127.0.0.1:{state.ports['kube-apiserver']}"
    for node in nodes:
        shutil.rmtree(node.folder, ignore_errors=True)
        node.folder.mkdir(parents=True)
        node.image_store.mkdir(parents=True, exist_ok=True)
        node.runtime_dir.mkdir(parents=True, exist_ok=True)
        node.cni_conf_dir.mkdir()
        write_json(node.cni_conf_dir / "10-tfjob-devcluster.conflist", cni_conflist(node, SERVICE_CIDR))
        node.containerd_config.write_text(containerd_config(node))
        node.kubelet_config.write_text(yaml.safe_dump(kubelet_config(node, state.ports, pki / "ca.crt")))
        client = sign_client(pki, f"kubelet-{node.name}", f"system:node:{node.name}", "system:nodes")
        write_kubeconfig(node.kubeconfig, server, pki / "ca.crt", f"system:node:{node.name}", client=client)
        cert, key = sign_serving(pki, f"kubelet-serving-{node.name}", node.name, [node.address])
        shutil.copyfile(cert, node.serving_cert)
        shutil.copyfile(key, node.serving_key)
    first = nodes[0]
    shared = layout.dir / "real-nodes"
    (shared / "Corefile").write_text(corefile(layout.kubeconfig, state.ports["coredns-ready"]))
    proxy_client = sign_client(pki, "kube-proxy", "system:kube-proxy", "")
    write_kubeconfig(shared / "kube-proxy.kubeconfig", server, pki / "ca.crt", "system:kube-proxy", client=proxy_client)
    (shared / "kube-proxy.yaml").write_text(yaml.safe_dump(
        kube_proxy_config(first, shared / "kube-proxy.kubeconfig", state.ports)))
    hostnet.create_bridge(node.address for node in nodes)


def command(component: str, layout: Layout, state: ClusterState) -> list[str]:
    """The argv of one real-node process."""
    nodes = nodes_of(layout, state)
    binaries = Path(state.real_bin_dir)
    shared = layout.dir / "real-nodes"
    kind, _, index = component.rpartition("-")
    if kind == "containerd":
        return [CONTAINERD, f"--config={nodes[int(index)].containerd_config}"]
    if kind == "kubelet":
        labels = {REAL_NODE_LABEL: "true"}
        return kubelet_arguments(nodes[int(index)], binaries / "kubelet", labels, taint=bool(state.nodes))
    if component == "coredns":
        return [str(binaries / "coredns"), "-conf", str(shared / "Corefile")]
    if component == "kube-proxy":
        return [str(binaries / "kube-proxy"), f"--config={shared / 'kube-proxy.yaml'}"]
    if component == "kube-router":
        return kube_router_arguments(nodes[0], binaries / "kube-router", layout.kubeconfig, state.ports,
                                     SERVICE_CIDR)
    raise ValueError(f"unknown real-node component {component!r}")


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2.0) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def _socket_answers(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(1.0)
        try:
            s.connect(str(path))
        except OSError:
            return False
    return True


def healthy(component: str, layout: Layout, state: ClusterState) -> bool:
    kind, _, index = component.rpartition("-")
    ports = state.ports
    if kind == "containerd":
        return _socket_answers(nodes_of(layout, state)[int(index)].containerd_socket)
    if kind == "kubelet":
        return _http_ok(f"http://127.0.0.1:{ports[f'kubelet-{index}-healthz']}/healthz")
    if component == "coredns":
        return _http_ok(f"http://127.0.0.1:{ports['coredns-ready']}/ready")
    if component == "kube-proxy":
        return _http_ok(f"http://127.0.0.1:{ports['kube-proxy-healthz']}/healthz")
    if component == "kube-router":
        return _http_ok(f"http://127.0.0.1:{ports['kube-router-health']}/healthz")
    raise ValueError(f"unknown real-node component {component!r}")


def clean_up(layout: Layout, state: ClusterState) -> None:
    """Remove what the real nodes leave once their processes are stopped: containers (under their
    shims), the mounts, the pods' network namespaces, veths, the bridge, the KUBE-* iptables rules."""
    nodes = nodes_of(layout, state)
    running = owner()
    if nodes and running is not None and running.resolve() != layout.dir.resolve():
        return  # another cluster's real nodes: everything here is theirs (see claim)
    for node in nodes:
        hostnet.kill_containers(node.containerd_socket)
        hostnet.unmount_under(node.kubelet_root)
        hostnet.unmount_under(node.containerd_state)
        hostnet.unmount_under(node.image_store)
        shutil.rmtree(node.runtime_dir, ignore_errors=True)
    if nodes:
        hostnet.remove_veths()
        hostnet.delete_bridge()
        hostnet.remove_kube_rules()

