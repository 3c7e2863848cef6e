"""`Cluster`: start, inspect, disturb and stop one local control plane (the devcluster).

A devcluster is etcd + kube-apiserver + kube-controller-manager + kube-scheduler + KWOK with
N fake nodes: real Kubernetes control-plane behaviour (admission, RBAC, scheduling, garbage
collection, node lifecycle, evictions) without a kubelet or containers. KWOK plays the pods'
lifecycle from the stages in devcluster/stages/ (Running; exit codes chosen by annotation;
deletion; node NotReady), and serves the containers' logs that the pod-logs agent writes
(podlogs.py), so `kubectl logs` works.

The class is shaped for two users: the `tfjob-devcluster` CLI (each command a new process, so
all runtime facts live in the cluster folder, see state.py) and pytest fixtures that start one
cluster per session and then disturb it on purpose (restart the apiserver or etcd, compact etcd,
lose a node). Startup is ordered for speed on two cores: etcd, then the apiserver, then the
controller-manager, scheduler, KWOK and the pod-logs agent together, then one poll loop that
waits for all of them.
"""

from __future__ import annotations

import base64
import datetime
import functools
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import component_ports, ports, processes, realnodes
from .api import ApiClient, ApiError, admin_client, etcd_call, probe_https
from .binaries import find_bin_dir, find_real_bin_dir
from .components import (
    COMPONENTS,
    KUBELET_ADDRESS,
    KWOK_NODE_ANNOTATION,
    REAL_NODE_COMPONENT,
    SERVICE_IP,
    canonical,
    command,
    write_kwok_config,
)
from .host import advertise_address, etcd_data_dir, raise_inotify_limits
from .pki import CLIENTS, make_pki, write_kubeconfig
from .ports import Holder
from .realnode_config import GATEWAY, node_components, port_names
from .state import NODE_MONITOR_GRACE_SECONDS, ClusterState, Layout, default_dir

if TYPE_CHECKING:
    from .images import ImageArchive

NOT_READY_LABEL = "node-not-ready.stage.kwok.x-k8s.io"
NODE_LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
KWOK_STARTS = 3  # attempts at (re)starting KWOK before giving up
KWOK_TAKEOVER_SECONDS = 15.0  # a fresh KWOK creates the missing node Leases within a second or two
LOST_HOLDER = "tfjob-devcluster/lost-node"
PORTS = ("etcd", "etcd-peer", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")


class ClusterError(RuntimeError):
    """The cluster could not be started or is not in the state an operation needs."""


class KubectlError(subprocess.CalledProcessError):
    """kubectl exited non-zero; the message includes its stderr."""

    def __str__(self) -> str:
        args = [str(a) for a in self.cmd[1:] if not str(a).startswith(("--kubeconfig=", "--cache-dir="))]
        return f"kubectl {' '.join(args)} exited {self.returncode}: {(self.stderr or '').strip()}"


def _micro_time(when: datetime.datetime | None = None) -> str:
    when = when or datetime.datetime.now(datetime.UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _node_ready(node: dict[str, Any]) -> bool:
    conditions = node.get("status", {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


class Cluster:
    """One devcluster living in the folder `dir` (default ~/.cache/tfjob-operator/clusters/default)."""

    def __init__(self, dir: str | os.PathLike[str] | None = None) -> None:
        self.dir = Path(dir or default_dir()).expanduser().resolve()
        self.layout = Layout(self.dir)
        self._state = ClusterState.load(self.layout.state_file)

    # ------------------------------------------------------------------ facts

    @property
    def state(self) -> ClusterState:
        if self._state is None:
            raise ClusterError(f"no cluster in {self.dir} (run up first)")
        return self._state

    @property
    def kubeconfig(self) -> Path:
        """Path of the admin (system:masters) kubeconfig."""
        return self.layout.kubeconfig

    @property
    def bin_dir(self) -> Path:
        """The folder of the binaries this cluster runs (or would run: up() builds them if missing)."""
        return Path(self._state.bin_dir) if self._state else find_bin_dir(build=False)

    @property
    def api_url(self) -> str:
        return f"https://127.0.0.1:{self.state.ports['kube-apiserver']}"

    @property
    def etcd_url(self) -> str:
        return f"http://127.0.0.1:{self.state.ports['etcd']}"

    @property
    def ports(self) -> dict[str, int]:
        return dict(self.state.ports)

    @property
    def pids(self) -> dict[str, int]:
        return dict(self.state.pids)

    @property
    def nodes(self) -> list[str]:
        """Names of the fake nodes created by up()."""
        return list(self.state.nodes)

    @property
    def real_nodes(self) -> list[str]:
        """Names of the real nodes (kubelet + containerd) started by up()."""
        return [node.name for node in realnodes.nodes_of(self.layout, self.state)]

    @property
    def api(self) -> ApiClient:
        """A standard-library client authenticated as the admin."""
        return admin_client(self.layout, self.state)

    def _port_holder(self) -> Holder:  # the state file holds the cluster's ports from `up` to `down`
        return ports.this_process(self.layout.state_file)

    def is_running(self, component: str) -> bool:
        component = canonical(component)
        if self._state is None:
            return False
        return processes.is_running(self._state.pids.get(component), self._executable(component))

    def _executable(self, component: str) -> Path:
        """What the component's process runs: a binary of bin_dir, or the Python of the pod-logs agent."""
        state = self.state
        return Path(state.executables.get(component) or Path(state.bin_dir) / component)

    @property
    def components(self) -> tuple[str, ...]:
        """The components this cluster runs: COMPONENTS (less pod-logs when started without it), then
        the real nodes' processes."""
        if self._state is None:
            return COMPONENTS
        core = tuple(c for c in COMPONENTS if self._state.pod_logs or c != "pod-logs")
        return core + node_components(self._state.real_nodes)

    def status(self) -> dict[str, dict[str, Any]]:
        """Per component: pid, whether it runs, its port (None if it has none) and log file."""
        result = {}
        for component in self.components:
            result[component] = {
                "pid": self._state.pids.get(component) if self._state else None,
                "running": self.is_running(component),
                "port": self._state.ports.get(component) if self._state else None,
                "log": str(self.layout.log(component)),
            }
        return result

    def logs(self, component: str, tail: int | None = None) -> str:
        """The component's log (its last `tail` lines when given); '' if it has none yet."""
        try:
            text = self.layout.log(canonical(component)).read_text(errors="replace")
        except FileNotFoundError:
            return ""
        return "\n".join(text.splitlines()[-tail:]) if tail else text

    # ------------------------------------------------------------------ lifecycle

    def up(self, nodes: int = 4, cpus: str = "32", memory: str = "256Gi", pods: str = "110",
           gpus: int = 8, timeout: float = 180.0, bin_dir: str | os.PathLike[str] | None = None,
           pod_logs: bool = True, node_grace_seconds: int = NODE_MONITOR_GRACE_SECONDS,
           real_nodes: int = 0) -> None:
        """Start a fresh cluster with `nodes` fake nodes of the given capacity and `real_nodes` real
        ones (a kubelet with containerd each, see realnodes.py); wait until usable.

        Usable means: apiserver /readyz, controller-manager and scheduler /healthz, every node
        Ready and untainted, the `default` ServiceAccount present, and (with `pod_logs`) the agent
        that writes the simulated containers' logs started. On any failure (also
        KeyboardInterrupt) everything started so far is stopped again. `node_grace_seconds` is how
        long a node may miss its lease renewals before it is NotReady and its pods are evicted.
        With real nodes, usable also means: every real node Ready, the cluster DNS answering, kube-proxy
        and the NetworkPolicy engine healthy, and the images of devcluster/images.py imported.
        """
        if self._state is not None and any(self.is_running(c) for c in COMPONENTS):
            raise ClusterError(f"a cluster is already running in {self.dir}; run down first")
        self.down()  # leftovers of a crashed run: stray processes, etcd data in /dev/shm
        raise_inotify_limits()
        resolved_bin_dir = Path(bin_dir) if bin_dir else find_bin_dir()
        real_bin_dir = find_real_bin_dir() if real_nodes else None
        self.dir.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(self.layout.logs, ignore_errors=True)
        self.layout.kubeconfigs.mkdir(parents=True, exist_ok=True)

        # Pods reach the apiserver at the bridge's address (kube-proxy maps the `kubernetes` Service there).
        address = GATEWAY if real_nodes else advertise_address()
        state = ClusterState(
            bin_dir=str(resolved_bin_dir),
            advertise_address=address,
            etcd_data_dir=str(etcd_data_dir(self.dir)),
            ports=ports.free_ports(PORTS + port_names(real_nodes), holder=self._port_holder()),
            nodes=[f"kwok-node-{i}" for i in range(nodes)],
            node_ips={f"kwok-node-{i}": f"10.240.{i // 250}.{i % 250 + 1}" for i in range(nodes)},
            node_resources={"cpu": str(cpus), "memory": str(memory), "pods": str(pods),
                            "ephemeral-storage": "1Ti", **({"nvidia.com/gpu": str(gpus)} if gpus else {})},
            pod_logs=pod_logs,
            node_grace_seconds=node_grace_seconds,
            real_nodes=real_nodes,
            real_bin_dir=str(real_bin_dir or ""),
        )
        self._state = state
        state.save(self.layout.state_file)
        pki = make_pki(self.layout.pki, ["127.0.0.1", address, SERVICE_IP])
        server = f"https://127.0.0.1:{state.ports['kube-apiserver']}"
        write_kubeconfig(self.kubeconfig, server, pki.ca_cert, "admin", client=pki.clients["admin"])
        for user in CLIENTS:
            write_kubeconfig(self.layout.component_kubeconfig(user), server, pki.ca_cert, user,
                             client=pki.clients[user])
        write_kwok_config(self.layout)
        shutil.rmtree(self.layout.pod_logs, ignore_errors=True)

        deadline = time.monotonic() + timeout
        try:
            self.start_component("etcd", timeout=max(deadline - time.monotonic(), 1))
            self.start_component("kube-apiserver", timeout=max(deadline - time.monotonic(), 1))
            # Imported here: `python -m devcluster.podlogs` runs that module as __main__ after importing
            # this package, and must not find it imported already.
            from .podlogs import install_crd

            install_crd(self.api)  # KWOK's Logs kind, established while the nodes are created
            for name in state.nodes:
                self.api.post("/api/v1/nodes", self._node_manifest(name))
            for component in ("kube-controller-manager", "kube-scheduler", "kwok", "pod-logs"):
                if component in self.components:
                    self.start_component(component, wait=False)
            if real_nodes:
                self._start_real_nodes(deadline)
            self._wait_usable(max(deadline - time.monotonic(), 1))
        except BaseException:
            self.down()
            raise

    def down(self) -> None:
        """Stop every process this cluster started (by pid, newest first) and drop etcd's data.

        Logs, PKI and kubeconfigs stay in the folder for post-mortems; `up` replaces them.
        """
        if self._state is None:
            return
        for component in reversed(self.components):
            self.stop_component(component)
        realnodes.clean_up(self.layout, self._state)
        ports.release(self._state.ports.values())
        data = Path(self._state.etcd_data_dir)
        if data.name.startswith("tfjob-devcluster-etcd-") or data == self.dir / "etcd-data":
            shutil.rmtree(data, ignore_errors=True)
        self.layout.state_file.unlink(missing_ok=True)
        self._state = None

    def start_component(self, name: str, wait: bool = True, timeout: float = 90.0) -> None:
        """Start one component (no-op if it runs); with wait, block until it is healthy, and start again
        on new ports when private ones were lost to another process (devcluster/component_ports.py)."""
        component = canonical(name)
        for attempt in range(1, component_ports.STARTS + 1):
            if not self.is_running(component):
                self._spawn(component)
            if not wait:
                return
            try:
                self._wait({component: lambda: self._healthy(component)}, timeout)
                return
            except ClusterError:
                if (attempt == component_ports.STARTS or self.is_running(component)
                        or not component_ports.movable(component)
                        or not ports.lost_port_race(self.logs(component, tail=30))):
                    raise

    def _spawn(self, component: str) -> None:
        if not (real := REAL_NODE_COMPONENT.fullmatch(component)):  # PortTaken: a kept port is another's
            self.state.ports.update(component_ports.claim(component, self.state.ports, self._port_holder()))
        env = {**os.environ, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
        argv = (realnodes.command if real else command)(component, self.layout, self.state)
        pid = processes.spawn(argv, self.layout.log(component), env)
        self.state.pids[component] = pid
        if Path(argv[0]) != Path(self.state.bin_dir) / component:
            self.state.executables[component] = argv[0]
        self.state.save(self.layout.state_file)

    def stop_component(self, name: str, grace: float = 5.0) -> None:
        """Stop one component by its recorded pid (its whole process group): SIGTERM, and
        SIGKILL after `grace` seconds (grace=0 simulates a crash)."""
        component = canonical(name)
        state = self.state
        executable = self._executable(component)
        pid = state.pids.pop(component, None)
        processes.stop(pid, executable, timeout=grace)
        if self.layout.state_file.parent.exists() and self._state is not None:
            state.save(self.layout.state_file)

    def restart_apiserver(self, timeout: float = 90.0, grace: float = 5.0) -> None:
        """Stop and start kube-apiserver (same port and flags); wait for /readyz."""
        self.stop_component("kube-apiserver", grace=grace)
        self.start_component("kube-apiserver", timeout=timeout)
        self._refresh_node_agents(timeout)

    def restart_etcd(self, timeout: float = 90.0, grace: float = 5.0) -> None:
        """Restart etcd with its data; the apiserver reconnects on its own (and is waited for)."""
        self.stop_component("etcd", grace=grace)
        self.start_component("etcd", timeout=timeout)
        self._wait({"kube-apiserver": lambda: self._healthy("kube-apiserver")}, timeout)
        self._refresh_node_agents(timeout)

    def _refresh_node_agents(self, timeout: float) -> None:
        """Restart the controller-manager and KWOK after a control-plane restart.

        Observed here: after the apiserver or etcd restarts, a node whose heartbeats stop later
        (lose_node) was never marked Unknown nor had its pods evicted, which breaks every later
        node-failure scenario of the same session. The clients under test (the operator) must ride
        the restart out by themselves; the cluster's own node agents are simply started afresh."""
        self.stop_component("kube-controller-manager", grace=2.0)
        self.start_component("kube-controller-manager", timeout=timeout)
        self.restart_kwok(timeout=timeout)

    def restart_kwok(self, timeout: float = 90.0, grace: float = 2.0) -> None:
        """Start KWOK afresh without disturbing the nodes it keeps alive.

        Every KWOK process holds the node Leases under a new identity (hostname + UUID), so a new
        process would wait for the old Leases to expire (20 s) before heartbeating, just as the
        controller-manager's 20 s grace runs out: healthy nodes would go Unknown and their pods be
        evicted, at random. The old process's Leases are therefore deleted once it has stopped, and
        the new one creates its own at once. Lost nodes (lose_node) keep their fake holder."""
        for _attempt in range(KWOK_STARTS):
            self.stop_component("kwok", grace=grace)
            lost = set()
            for lease in self.api.get(NODE_LEASES)["items"]:
                if (lease.get("spec") or {}).get("holderIdentity") == LOST_HOLDER:
                    lost.add(lease["metadata"]["name"])
                else:
                    self._delete_lease(lease["metadata"]["name"])
            self.start_component("kwok", timeout=timeout)
            if self._kwok_holds_leases(set(self.state.node_ips) - lost, KWOK_TAKEOVER_SECONDS):
                return
        raise ClusterError(f"kwok did not take the node Leases over after {KWOK_STARTS} starts; "
                           f"see {self.layout.log('kwok')}")

    def _kwok_holds_leases(self, nodes: set[str], timeout: float) -> bool:
        """Whether a running KWOK holds the Lease of every one of `nodes` within `timeout` seconds.

        KWOK 0.8.0 sometimes dies at start ("fatal error: concurrent map writes" in a CEL helper),
        and it has no health endpoint: its Leases are the sign of life."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.is_running("kwok"):
                return False
            held = {lease["metadata"]["name"] for lease in self.api.get(NODE_LEASES)["items"]
                    if (lease.get("spec") or {}).get("holderIdentity") not in (None, "", LOST_HOLDER)}
            if nodes <= held:
                return True
            time.sleep(0.2)
        return False

    def compact_etcd(self, restart_apiserver: bool = True) -> int:
        """Compact etcd up to its current revision and return that revision.

        Compaction alone is invisible to clients: the apiserver's watch cache keeps serving recent
        history (~75 s) from memory. So by default the apiserver is restarted too; its watch cache
        then starts at the compacted revision and every watch resumed from an older
        resourceVersion gets `410 Gone` ("too old resource version"), as after a long disconnect.
        Open watches are dropped by the restart, which is what makes clients resume.
        """
        header = etcd_call(self.etcd_url, "/v3/kv/range", {"key": base64.b64encode(b"/").decode()})["header"]
        revision = int(header["revision"])
        etcd_call(self.etcd_url, "/v3/kv/compaction", {"revision": revision, "physical": True})
        if restart_apiserver:
            self.restart_apiserver()
        return revision

    # ------------------------------------------------------------------ nodes

    def set_node_ready(self, name: str, ready: bool) -> None:
        """Make a node report NotReady (kwok's node-not-ready stage) or Ready again."""
        value = None if ready else "true"
        self.api.merge_patch(f"/api/v1/nodes/{name}", {"metadata": {"labels": {NOT_READY_LABEL: value}}})

    def lose_node(self, name: str) -> None:
        """Simulate a node that vanished: its heartbeats stop, and nothing acts for it any more.

        The node's Lease is taken over by a fake holder for a year, and the node stops matching
        KWOK's node selector; KWOK is restarted, so it neither heartbeats for the node nor confirms
        pod deletions there (a running KWOK was seen to go on confirming them). After
        --node-monitor-grace-period (20 s) the controller-manager marks the node Unknown, taints it
        unreachable and evicts its pods, which then stay Terminating (no kubelet confirms) until
        they are force-deleted or the node comes back.
        """
        self.api.merge_patch(f"{NODE_LEASES}/{name}",
                             {"spec": {"holderIdentity": LOST_HOLDER, "leaseDurationSeconds": 365 * 24 * 3600,
                                       "renewTime": _micro_time()}})
        self.api.merge_patch(f"/api/v1/nodes/{name}", {"metadata": {"annotations": {KWOK_NODE_ANNOTATION[0]: None}}})
        self.restart_kwok()

    def recover_node(self, name: str) -> None:
        """Undo lose_node: the node matches KWOK's selector again and KWOK (restarted, so it lists
        the node afresh) creates its own Lease and manages it again."""
        key, value = KWOK_NODE_ANNOTATION
        self.api.merge_patch(f"/api/v1/nodes/{name}", {"metadata": {"annotations": {key: value}}})
        self._delete_lease(name)
        self.restart_kwok()

    def _delete_lease(self, name: str) -> None:
        try:
            self.api.delete(f"{NODE_LEASES}/{name}")
        except ApiError as error:
            if error.status != 404:
                raise

    def add_node(self, name: str) -> None:
        """Create one more fake node with the cluster's node capacity (it becomes Ready by itself)."""
        self.state.node_ips[name] = f"10.241.{len(self.state.node_ips) // 250}.{len(self.state.node_ips) % 250 + 1}"
        self.state.save(self.layout.state_file)
        self.api.post("/api/v1/nodes", self._node_manifest(name))

    def _node_manifest(self, name: str) -> dict[str, Any]:
        key, value = KWOK_NODE_ANNOTATION
        resources = dict(self.state.node_resources)
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "annotations": {key: value, "node.alpha.kubernetes.io/ttl": "0"},
                "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                           "kubernetes.io/arch": "amd64", "type": "kwok"},
            },
            "status": {"allocatable": resources, "capacity": resources,
                       # InternalDNS: where the apiserver reaches this node's kubelet (KWOK's server)
                       "addresses": [{"type": "InternalIP", "address": self.state.node_ips[name]},
                                     {"type": "Hostname", "address": name},
                                     {"type": "InternalDNS", "address": KUBELET_ADDRESS}]},
        }

    # ------------------------------------------------------------------ identities and kubectl

    def kubectl(self, *args: str, check: bool = True, input: str | None = None, timeout: float = 120.0,
                kubeconfig: str | os.PathLike[str] | None = None) -> subprocess.CompletedProcess[str]:
        """Run kubectl (admin unless kubeconfig is given) and capture its text output."""
        argv = [str(self.bin_dir / "kubectl"), f"--kubeconfig={kubeconfig or self.kubeconfig}",
                f"--cache-dir={self.dir / 'kubectl-cache'}", *args]
        env = {**os.environ, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
        env.pop("KUBECONFIG", None)
        result = subprocess.run(argv, input=input, capture_output=True, text=True, timeout=timeout,
                                env=env, check=False)
        if check and result.returncode != 0:
            raise KubectlError(result.returncode, argv, result.stdout, result.stderr)
        return result

    def service_account_kubeconfig(self, namespace: str, name: str, expiration_seconds: int = 3600) -> Path:
        """Write a kubeconfig that authenticates as ServiceAccount namespace/name; return its path.

        The token comes from the TokenRequest API (like `kubectl create token`), so it is bound,
        expiring and needs no Secret.
        """
        answer = self.api.post(f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
                               {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                                "spec": {"expirationSeconds": expiration_seconds}})
        path = self.layout.component_kubeconfig(f"sa-{namespace}-{name}")
        return write_kubeconfig(path, self.api_url, self.layout.pki / "ca.crt",
                                f"system:serviceaccount:{namespace}:{name}", token=answer["status"]["token"])

    # ------------------------------------------------------------------ waiting

    def _healthy(self, component: str) -> bool:
        if REAL_NODE_COMPONENT.fullmatch(component):
            return realnodes.healthy(component, self.layout, self.state)
        port = self.state.ports.get(component)
        if component == "etcd":
            try:
                return bool(etcd_call(self.etcd_url, "/health", timeout=5.0).get("health") == "true")
            except (OSError, RuntimeError, ValueError):
                return False
        if component == "kube-apiserver":
            return self.api.healthy("/readyz")
        if component in ("kube-controller-manager", "kube-scheduler"):
            return probe_https(f"https://127.0.0.1:{port}/healthz")
        if component == "pod-logs":
            return self.layout.pod_logs.is_dir()  # the agent's first act (up() removed it before)
        return True  # kwok has no endpoint; it is judged by the nodes it makes Ready

    def _nodes_usable(self) -> bool:
        items = self.api.get("/api/v1/nodes")["items"]
        by_name = {n["metadata"]["name"]: n for n in items}
        for name in [*self.state.nodes, *self.real_nodes]:
            node = by_name.get(name)
            if node is None or not _node_ready(node):
                return False
            if any(t.get("key", "").startswith("node.kubernetes.io/") for t in node["spec"].get("taints") or []):
                return False
        return True

    def _default_service_account(self) -> bool:
        try:
            self.api.get("/api/v1/namespaces/default/serviceaccounts/default")
        except ApiError:
            return False
        return True

    def wait_ready(self, timeout: float = 90.0) -> None:
        """Wait until every component is healthy and every node of up() is Ready and untainted
        (e.g. after restarting a component); raise ClusterError naming what is not."""
        self._wait({component: functools.partial(self._healthy, component) for component in self.components
                    if component != "kwok"}, timeout)
        self._wait_usable(timeout)

    def _wait_usable(self, timeout: float) -> None:
        self._wait({
            "kube-controller-manager": lambda: self._healthy("kube-controller-manager"),
            "kube-scheduler": lambda: self._healthy("kube-scheduler"),
            "kwok": self._nodes_usable,
            "kube-apiserver": self._default_service_account,
            **({"pod-logs": lambda: self._healthy("pod-logs")} if "pod-logs" in self.components else {}),
            **{c: functools.partial(self._healthy, c) for c in node_components(self.state.real_nodes)},
        }, timeout, nodes_msg=True)

    # ------------------------------------------------------------------ real nodes

    def _start_real_nodes(self, deadline: float) -> None:
        """Prepare the real nodes' files and bridge, start each node's containerd, import the images,
        then start the kubelets and the cluster-wide DNS, service proxy and NetworkPolicy engine."""
        from .images import build_images  # here: only real nodes need images (and their build tools)

        realnodes.prepare(self.layout, self.state)
        nodes = realnodes.nodes_of(self.layout, self.state)
        archives = build_images(which=("pause",))
        for node in nodes:
            self.start_component(node.containerd_component, timeout=max(deadline - time.monotonic(), 1))
        self.load_images(archives.values())
        for node in nodes:
            self.start_component(node.kubelet_component, wait=False)
        self.start_component("coredns", wait=False)
        # kube-proxy and kube-router read their node's addresses from its Node object at start.
        self._wait({node.kubelet_component: functools.partial(self._node_registered, node.name) for node in nodes},
                   max(deadline - time.monotonic(), 1))
        for component in ("kube-proxy", "kube-router"):
            self.start_component(component, wait=False)

    def _node_registered(self, name: str) -> bool:
        try:
            self.api.get(f"/api/v1/nodes/{name}")
        except ApiError:
            return False
        return True

    def load_images(self, archives: Iterable[ImageArchive]) -> None:
        """Import image archives (devcluster/images.py) into every real node's containerd."""
        from .images import import_image

        archives = list(archives)
        for node in realnodes.nodes_of(self.layout, self.state):
            for archive in archives:
                import_image(archive, str(node.containerd_socket))

    def _wait(self, checks: dict[str, Callable[[], bool]], timeout: float, nodes_msg: bool = False) -> None:
        """Poll every check until all pass; fail fast (with its log tail) if a component exits."""
        pending = dict(checks)
        deadline = time.monotonic() + timeout
        while True:
            for component in list(pending):
                if not self.is_running(component):
                    raise ClusterError(f"{component} exited; last lines of {self.layout.log(component)}:\n"
                                       + self.logs(component, tail=30))
                try:
                    ok = pending[component]()
                except (OSError, ApiError):
                    ok = False
                if ok:
                    del pending[component]
            if not pending:
                return
            if time.monotonic() >= deadline:
                break
            time.sleep(0.25)
        detail = "\n".join(f"--- {c} (last lines of {self.layout.log(c)}):\n{self.logs(c, tail=20)}"
                           for c in pending)
        what = ", ".join(c + (" (nodes Ready and untainted)" if c == "kwok" and nodes_msg else "")
                         for c in pending)
        raise ClusterError(f"timed out after {timeout:.0f}s waiting for {what}\n{detail}")
