"""The command line of each control-plane component, with the reason for every unusual flag.

Kept apart from the orchestration (cluster.py) so the flags can be read and reviewed in one
place. The values are tuned for fast, deterministic tests on a small machine:

* etcd keeps its data in RAM (/dev/shm) and skips fsync: a test cluster is disposable.
* kube-apiserver binds 127.0.0.1 only, but needs a non-loopback --advertise-address (it refuses
  loopback, and without a default route it cannot pick one itself). Pods get NotReady/Unreachable
  tolerations of 5 s (default 300 s), so evictions happen within a test's patience.
  The ServiceAccount admission plugin stays ON, as in every real cluster: pods get a projected
  token volume and a `default` ServiceAccount must exist in the namespace (the controller-manager
  creates it within milliseconds; `up` and the test fixtures wait for it).
  OwnerReferencesPermissionEnforcement is added (as on OpenShift): setting blockOwnerDeletion
  needs permission to update the owner's finalizers, so a too-narrow operator ClusterRole
  fails here rather than on a stricter production cluster.
* kube-controller-manager runs the default controller set (`*`: garbage collector, namespace,
  serviceaccount + token, node lifecycle, taint eviction, pod GC, job, replicaset, endpoints...),
  with per-controller ServiceAccount credentials like kubeadm. Nodes are judged lost after
  20 s without a lease renewal (default 50 s; `up(node_grace_seconds=...)` changes it for a cluster
  whose single KWOK process must keep up with tens of thousands of pods). Eviction rate limits
  and zone-disruption damping are lifted: with 4 fake nodes, 2 NotReady nodes would otherwise
  count as a "partial disruption" and stop evictions altogether.
* kube-scheduler is stock.
* From Kubernetes 1.37 on, the API server, controller-manager and scheduler run with the feature gates
  of Kubernetes' own gang scheduling (`GenericWorkload`, beta but off by default; the alpha
  `TopologyAwareWorkloadScheduling`, a gang inside one topology domain) and the API server serves
  `scheduling.k8s.io/v1beta1` (Workloads, PodGroups; a beta API is off by default): the operator's
  `--gang-scheduler=kubernetes` needs them (`workload_api_flags`). The version is the binaries' own
  (`kube-apiserver --version`), so a cache of an older release runs as before.
* kwok manages the nodes annotated kwok.x-k8s.io/node=fake with a 20 s node Lease (renewed every
  5 s) and plays the stages in devcluster/stages/ (KWOK 0.8.0 has no built-in stages). Its
  kubelet-like server listens on 127.0.0.1 (HTTPS, a cert from our CA) and serves container logs
  from the files the `pod-logs` agent writes (`--enable-crds=Logs`: one `Logs` object per pod).
  Every node publishes that port (`--node-port`, the node's daemonEndpoints) and an `InternalDNS`
  address of 127.0.0.1, which the apiserver prefers (`--kubelet-preferred-address-types`) for
  `kubectl logs`, verifying the cert with `--kubelet-certificate-authority`.
* pod-logs is the devcluster's own agent (devcluster/podlogs.py, a Python process): it writes each
  simulated container's log and its `Logs` object.
"""

from __future__ import annotations

import functools
import re
import subprocess
import sys
from pathlib import Path

from .binaries import read_versions
from .state import ClusterState, Layout

COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "pod-logs")
ALIASES = {
    "apiserver": "kube-apiserver",
    "controller-manager": "kube-controller-manager",
    "kcm": "kube-controller-manager",
    "scheduler": "kube-scheduler",
}

SERVICE_CIDR = "10.96.0.0/16"
SERVICE_IP = "10.96.0.1"  # the `kubernetes` Service: first address of SERVICE_CIDR
POD_CIDR = "10.244.0.0/16"
SA_ISSUER = "https://kubernetes.default.svc.cluster.local"
TOLERATION_SECONDS = 5
NODE_LEASE_SECONDS = 20
KWOK_NODE_ANNOTATION = ("kwok.x-k8s.io/node", "fake")
KUBELET_ADDRESS = "127.0.0.1"  # where KWOK's kubelet-like server listens; every node's InternalDNS address
# KWOK's nodes publish InternalDNS 127.0.0.1; real kubelets listen on their InternalIP, and their
# Hostname (the node name) resolves nowhere.
KUBELET_ADDRESS_TYPES = "InternalDNS,InternalIP,Hostname,ExternalDNS,ExternalIP"
REAL_NODE_COMPONENT = re.compile(r"(containerd|kubelet)-\d+|coredns|kube-proxy|kube-router")
STAGES_DIR = Path(__file__).resolve().parent / "stages"


def canonical(name: str) -> str:
    """Map a component name or alias (apiserver, kcm, scheduler, ...) to its canonical name."""
    name = ALIASES.get(name, name)
    if name not in COMPONENTS and not REAL_NODE_COMPONENT.fullmatch(name):
        raise ValueError(f"unknown component {name!r}; choose one of {', '.join(COMPONENTS)}, or with real "
                         "nodes containerd-N, kubelet-N, coredns, kube-proxy, kube-router")
    return name


WORKLOAD_GATES = "GenericWorkload=true,TopologyAwareWorkloadScheduling=true"
WORKLOAD_API = "scheduling.k8s.io/v1beta1=true"
WORKLOAD_API_SINCE = (1, 37)


def workload_api_flags(version: str, component: str) -> list[str]:
    """The flags that turn on Kubernetes' Workload and PodGroup API (`scheduling.k8s.io/v1beta1`) and
    its gang scheduling for `component` of Kubernetes `version` ("1.37.2"); none before 1.37."""
    numbers = re.match(r"v?(\d+)\.(\d+)", version)
    if numbers is None or (int(numbers.group(1)), int(numbers.group(2))) < WORKLOAD_API_SINCE:
        return []
    flags = [f"--feature-gates={WORKLOAD_GATES}"]
    if component == "kube-apiserver":
        flags.append(f"--runtime-config={WORKLOAD_API}")
    return flags


@functools.lru_cache(maxsize=8)
def kubernetes_version(bin_dir: str) -> str:
    """The Kubernetes version of the binaries in `bin_dir` (`kube-apiserver --version`), else the pinned one."""
    try:
        out = subprocess.run([str(Path(bin_dir) / "kube-apiserver"), "--version"], capture_output=True, text=True,
                             timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return read_versions().get("K8S_VERSION", "")
    return out.split()[-1] if out.split() else ""


def write_kwok_config(layout: Layout) -> Path:
    """Concatenate every stage in devcluster/stages/ into the one file kwok's --config reads."""
    documents = [p.read_text().strip() for p in sorted(STAGES_DIR.glob("*.yaml"))]
    layout.kwok_config.write_text("\n---\n".join(documents) + "\n")
    return layout.kwok_config


def command(component: str, layout: Layout, state: ClusterState) -> list[str]:
    """The argv that starts component for the cluster described by layout and state."""
    b = Path(state.bin_dir)
    p = state.ports
    gang = workload_api_flags(kubernetes_version(state.bin_dir), component)
    pki = layout.pki
    etcd_url = f"http://127.0.0.1:{p['etcd']}"
    if component == "etcd":
        peer = f"http://127.0.0.1:{p['etcd-peer']}"
        return [str(b / "etcd"), "--name=devcluster", f"--data-dir={state.etcd_data_dir}",
                f"--listen-client-urls={etcd_url}", f"--advertise-client-urls={etcd_url}",
                f"--listen-peer-urls={peer}", f"--initial-advertise-peer-urls={peer}",
                f"--initial-cluster=devcluster={peer}", "--unsafe-no-fsync=true",
                "--log-level=warn", "--quota-backend-bytes=4294967296"]
    if component == "kube-apiserver":
        # With real nodes, pods reach the apiserver at the advertised bridge address (through the
        # `kubernetes` Service), and kubelets are authorised as nodes.
        real = state.real_nodes > 0
        return [str(b / "kube-apiserver"), f"--etcd-servers={etcd_url}",
                f"--bind-address={'0.0.0.0' if real else '127.0.0.1'}", f"--secure-port={p['kube-apiserver']}",
                f"--advertise-address={state.advertise_address}",
                f"--cert-dir={pki}", f"--tls-cert-file={pki / 'apiserver.crt'}",
                f"--tls-private-key-file={pki / 'apiserver.key'}", f"--client-ca-file={pki / 'ca.crt'}",
                f"--service-account-issuer={SA_ISSUER}", f"--service-account-key-file={pki / 'sa.pub'}",
                f"--service-account-signing-key-file={pki / 'sa.key'}",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                f"--requestheader-client-ca-file={pki / 'front-proxy-ca.crt'}",
                "--requestheader-allowed-names=front-proxy-client",
                "--requestheader-username-headers=X-Remote-User", "--requestheader-group-headers=X-Remote-Group",
                "--requestheader-extra-headers-prefix=X-Remote-Extra-",
                f"--proxy-client-cert-file={pki / 'front-proxy-client.crt'}",
                f"--proxy-client-key-file={pki / 'front-proxy-client.key'}",
                f"--authorization-mode={'Node,RBAC' if real else 'RBAC'}", "--allow-privileged=true",
                "--profiling=false",
                "--enable-admission-plugins=OwnerReferencesPermissionEnforcement"
                + (",NodeRestriction" if real else ""),
                f"--default-not-ready-toleration-seconds={TOLERATION_SECONDS}",
                f"--default-unreachable-toleration-seconds={TOLERATION_SECONDS}",
                f"--kubelet-preferred-address-types={KUBELET_ADDRESS_TYPES}",
                f"--kubelet-certificate-authority={pki / 'ca.crt'}",
                f"--kubelet-client-certificate={pki / 'kube-apiserver-kubelet-client.crt'}",
                f"--kubelet-client-key={pki / 'kube-apiserver-kubelet-client.key'}", *gang]
    if component == "kube-controller-manager":
        kubeconfig = layout.component_kubeconfig("kube-controller-manager")
        return [str(b / "kube-controller-manager"), f"--kubeconfig={kubeconfig}",
                f"--authentication-kubeconfig={kubeconfig}", f"--authorization-kubeconfig={kubeconfig}",
                "--bind-address=127.0.0.1", f"--secure-port={p['kube-controller-manager']}",
                "--leader-elect=false", "--controllers=*", "--use-service-account-credentials=true",
                f"--service-account-private-key-file={pki / 'sa.key'}", f"--root-ca-file={pki / 'ca.crt'}",
                f"--cluster-signing-cert-file={pki / 'ca.crt'}", f"--cluster-signing-key-file={pki / 'ca.key'}",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                "--node-monitor-period=2s", f"--node-monitor-grace-period={state.node_grace_seconds}s",
                "--node-eviction-rate=100", "--secondary-node-eviction-rate=100",
                "--unhealthy-zone-threshold=1", "--large-cluster-size-threshold=1",
                "--kube-api-qps=100", "--kube-api-burst=200", "--profiling=false", *gang]
    if component == "kube-scheduler":
        kubeconfig = layout.component_kubeconfig("kube-scheduler")
        return [str(b / "kube-scheduler"), f"--kubeconfig={kubeconfig}",
                f"--authentication-kubeconfig={kubeconfig}", f"--authorization-kubeconfig={kubeconfig}",
                "--bind-address=127.0.0.1", f"--secure-port={p['kube-scheduler']}",
                "--leader-elect=false", "--profiling=false", *gang]
    if component == "kwok":
        key, value = KWOK_NODE_ANNOTATION
        server = []
        if p.get("kwok"):  # the kubelet-like server (absent in clusters started before it existed)
            server = [f"--server-address={KUBELET_ADDRESS}:{p['kwok']}", f"--node-port={p['kwok']}",
                      f"--tls-cert-file={pki / 'kubelet.crt'}", f"--tls-private-key-file={pki / 'kubelet.key'}",
                      "--enable-crds=Logs"]
        return [str(b / "kwok"), f"--kubeconfig={layout.component_kubeconfig('kwok')}",
                f"--config={layout.kwok_config}",
                f"--manage-nodes-with-annotation-selector={key}={value}",
                f"--node-lease-duration-seconds={NODE_LEASE_SECONDS}", f"--cidr={POD_CIDR}", *server,
                "--v=WARN"]  # INFO logs every lease renewal, drowning the interesting lines
    if component == "pod-logs":
        return [sys.executable, "-m", "devcluster.podlogs", f"--dir={layout.dir}"]
    raise ValueError(f"unknown component {component!r}")
