"""What the devcluster's real nodes are: their addresses, folders and every configuration file, as pure
functions of a plan.

KWOK nodes run no container, probe or network. A real node is a kubelet built from the same
Kubernetes module as the control plane, with a containerd of its own and runc, on this machine. All
real nodes of a cluster share one Linux bridge (`tfjob0`, 10.89.0.0/16) in the host's network
namespace, so pods on different nodes reach each other without routes or tunnels:

* 10.89.0.1 is the bridge's own address: the pods' gateway, the cluster DNS server (CoreDNS, a host
  process) and the address the API server advertises in the `kubernetes` Service (kube-proxy turns
  10.96.0.1:443 into it, so in-cluster clients such as the operator's own pod reach the API server).
* real node i has the node address 10.89.0.(10 + i) (its kubelet listens there) and hands its pods
  the addresses 10.89.(i + 1).2-254 (CNI `bridge` + `host-local`, with its own IPAM folder).

Every address lives on the bridge or in the pods' network namespaces that this cluster creates;
nothing is routed off the machine, and pods get no default route beyond the bridge.

The configuration is kept apart from the processes (realnodes.py) so that it can be read in one
place and tested with plain data. The unusual settings, each needed on this machine kind:

* cgroups are hybrid (v1 controllers + a v2 mount): the kubelet needs `failCgroupV1: false`, the
  cgroupfs driver and no per-QoS cgroups; runc copes, crun refuses.
* there is no CAP_SYS_RESOURCE, so nothing may lower an oom_score_adj: containerd's
  `restrict_oom_score_adj`, and oomScoreAdj 0 for the kubelet and kube-proxy.
* no registry: the sandbox image and every image a pod uses are imported into containerd
  beforehand (devcluster/images.py); pods use `imagePullPolicy: IfNotPresent`.
* containerd keeps the pods' network namespaces under its own state folder, so `down` can remove
  what a killed run left behind.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BRIDGE = "tfjob0"
NETWORK = "10.89.0.0/16"
PREFIX_LENGTH = 16
GATEWAY = "10.89.0.1"
DNS_ADDRESS = GATEWAY
CLUSTER_DOMAIN = "cluster.local"
SANDBOX_IMAGE = "registry.k8s.io/pause:3.10"
CNI_BIN_DIR = "/usr/lib/cni"
RUNTIME_DIR = Path("/run/tfjob-devcluster")  # sockets: a unix socket path has at most 107 bytes
REAL_NODE_LABEL = "tfjob-devcluster/real-node"
REAL_NODE_TAINT = {"key": REAL_NODE_LABEL, "value": "true", "effect": "NoSchedule"}
MAX_REAL_NODES = 200


@dataclass(frozen=True)
class RealNode:
    """One real node: its name, addresses and folders."""

    index: int
    folder: Path  # the node's folder inside the cluster folder (kubelet root, configs)
    image_store: Path  # containerd's root: kept across clusters, so imported images stay

    @property
    def name(self) -> str:
        return f"real-node-{self.index}"

    @property
    def address(self) -> str:
        return f"10.89.0.{10 + self.index}"

    @property
    def pod_range(self) -> tuple[str, str]:
        return f"10.89.{self.index + 1}.2", f"10.89.{self.index + 1}.254"

    @property
    def runtime_dir(self) -> Path:
        return RUNTIME_DIR / self.name

    @property
    def containerd_socket(self) -> Path:
        return self.runtime_dir / "containerd.sock"

    @property
    def containerd_state(self) -> Path:
        return self.runtime_dir / "state"

    @property
    def kubelet_root(self) -> Path:
        return self.folder / "kubelet"

    @property
    def cni_conf_dir(self) -> Path:
        return self.folder / "cni"

    @property
    def containerd_config(self) -> Path:
        return self.folder / "containerd.toml"

    @property
    def kubelet_config(self) -> Path:
        return self.folder / "kubelet.yaml"

    @property
    def kubeconfig(self) -> Path:
        return self.folder / "kubelet.kubeconfig"

    @property
    def serving_cert(self) -> Path:
        return self.folder / "kubelet-serving.crt"

    @property
    def serving_key(self) -> Path:
        return self.folder / "kubelet-serving.key"

    @property
    def containerd_component(self) -> str:
        return f"containerd-{self.index}"

    @property
    def kubelet_component(self) -> str:
        return f"kubelet-{self.index}"


def plan_nodes(count: int, cluster_folder: Path, image_store_root: Path) -> list[RealNode]:
    """The real nodes of a cluster with `count` of them."""
    if not 0 <= count <= MAX_REAL_NODES:
        raise ValueError(f"real nodes: between 0 and {MAX_REAL_NODES}, not {count}")
    return [RealNode(i, cluster_folder / "real-nodes" / f"real-node-{i}", image_store_root / f"real-node-{i}")
            for i in range(count)]


def node_components(count: int) -> tuple[str, ...]:
    """The processes of `count` real nodes, in start order: each node's containerd then kubelet, then
    the cluster's DNS server, service proxy and NetworkPolicy engine."""
    if count == 0:
        return ()
    per_node = [name for i in range(count) for name in (f"containerd-{i}", f"kubelet-{i}")]
    return (*per_node, "coredns", "kube-proxy", "kube-router")


def port_names(count: int) -> tuple[str, ...]:
    """The TCP ports the real-node processes need (see free_ports)."""
    if count == 0:
        return ()
    per_node = [name for i in range(count) for name in (f"kubelet-{i}", f"kubelet-{i}-healthz")]
    return (*per_node, "coredns-ready", "kube-proxy-healthz", "kube-proxy-metrics", "kube-router-health")


def containerd_config(node: RealNode) -> str:
    """containerd 1.6's configuration (version 2 format) for one node."""
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    return f"""version = 2
root = "{node.image_store}"
state = "{node.containerd_state}"
disabled_plugins = ["io.containerd.internal.v1.tracing", "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper"]

[grpc]
  address = "{node.containerd_socket}"

[ttrpc]
  address = "{node.containerd_socket}.ttrpc"

[debug]
  level = "warn"

[{cri}]
  sandbox_image = "{SANDBOX_IMAGE}"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  [{cri}.containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [{cri}.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [{cri}.containerd.runtimes.runc.options]
        SystemdCgroup = false
  [{cri}.cni]
    bin_dir = "{CNI_BIN_DIR}"
    conf_dir = "{node.cni_conf_dir}"
"""


def cni_conflist(node: RealNode, service_cidr: str) -> dict[str, Any]:
    """The pod network of one node: a veth on the shared bridge, an address from the node's range, and
    a route to the Services' virtual addresses through the bridge (kube-proxy rewrites them there)."""
    start, end = node.pod_range
    return {
        "cniVersion": "0.4.0",
        "name": "tfjob-devcluster",
        "plugins": [{
            "type": "bridge",
            "bridge": BRIDGE,
            "isGateway": True,
            "ipMasq": False,
            "hairpinMode": True,
            "ipam": {
                "type": "host-local",
                "dataDir": str(node.folder / "ipam"),
                "ranges": [[{"subnet": NETWORK, "rangeStart": start, "rangeEnd": end, "gateway": GATEWAY}]],
                "routes": [{"dst": service_cidr}],
            },
        }],
    }


def kubelet_config(node: RealNode, ports: dict[str, int], ca_cert: Path) -> dict[str, Any]:
    """The KubeletConfiguration of one node."""
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": node.address,
        "port": ports[node.kubelet_component],
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": ports[f"{node.kubelet_component}-healthz"],
        "tlsCertFile": str(node.serving_cert),
        "tlsPrivateKeyFile": str(node.serving_key),
        # The API server presents its kubelet-client certificate (logs, exec); nothing else may talk
        # to the kubelet.
        "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": False},
                           "x509": {"clientCAFile": str(ca_cert)}},
        "authorization": {"mode": "AlwaysAllow"},
        "containerRuntimeEndpoint": f"unix://{node.containerd_socket}",
        "cgroupDriver": "cgroupfs",
        "cgroupsPerQOS": False,
        "enforceNodeAllocatable": [],
        "failCgroupV1": False,
        "failSwapOn": False,
        "oomScoreAdj": 0,
        "clusterDNS": [DNS_ADDRESS],
        "clusterDomain": CLUSTER_DOMAIN,
        "resolvConf": "",  # pods see the cluster DNS only, never the host's resolvers
        "volumePluginDir": str(node.folder / "volume-plugins"),
        # Not /var/log/pods: kubelets on one host would delete each other's pods' logs there.
        "podLogsDir": str(node.folder / "pod-logs"),
        "serializeImagePulls": False,
        # Never evict for disk or garbage-collect the imported images: there is no registry to pull
        # them back from.
        "evictionHard": {"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%"},
        # A pod's emptyDir usage is measured this often (default 1m): a volume filled past its sizeLimit
        # is evicted within seconds, as the disruption tests cause it.
        "volumeStatsAggPeriod": "10s",
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "nodeStatusUpdateFrequency": "5s",
        "shutdownGracePeriod": "0s",
        "maxPods": 110,
        "logging": {"verbosity": 1},
    }


def kubelet_arguments(node: RealNode, kubelet: Path, labels: dict[str, str], taint: bool) -> list[str]:
    argv = [str(kubelet), f"--config={node.kubelet_config}", f"--kubeconfig={node.kubeconfig}",
            f"--root-dir={node.kubelet_root}", f"--hostname-override={node.name}", f"--node-ip={node.address}",
            "--node-labels=" + ",".join(f"{k}={v}" for k, v in sorted(labels.items()))]
    if taint:
        argv.append(f"--register-with-taints={REAL_NODE_TAINT['key']}={REAL_NODE_TAINT['value']}:"
                    f"{REAL_NODE_TAINT['effect']}")
    return argv


def corefile(admin_kubeconfig: Path, ready_port: int) -> str:
    """CoreDNS: the cluster domain from the API (headless Services' pod names included); every other
    name is answered NXDOMAIN at once, since nothing outside this machine may be asked."""
    # Two server blocks: CoreDNS runs a block's plugins in its own fixed order, where `template` comes
    # before `kubernetes`, so the catch-all answer needs a block of its own.
    return f"""{CLUSTER_DOMAIN}:53 in-addr.arpa:53 ip6.arpa:53 {{
    bind {DNS_ADDRESS}
    errors
    ready 127.0.0.1:{ready_port}
    kubernetes {CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{
        kubeconfig {admin_kubeconfig} devcluster
        pods insecure
        ttl 5
    }}
}}
.:53 {{
    bind {DNS_ADDRESS}
    template ANY ANY {{
        rcode NXDOMAIN
    }}
}}
"""


def kube_proxy_config(node: RealNode, kubeconfig: Path, ports: dict[str, int]) -> dict[str, Any]:
    """kube-proxy for every real node at once: they share the host's network namespace, so one
    instance's iptables rules serve all of them."""
    return {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "hostnameOverride": node.name,
        "mode": "iptables",
        "clusterCIDR": NETWORK,
        "healthzBindAddress": f"127.0.0.1:{ports['kube-proxy-healthz']}",
        "metricsBindAddress": f"127.0.0.1:{ports['kube-proxy-metrics']}",
        "nodePortAddresses": [NETWORK],
        "oomScoreAdj": 0,
        "conntrack": {"maxPerCore": 0, "min": 0},
        "iptables": {"localhostNodePorts": False},
    }


def kube_router_arguments(node: RealNode, kube_router: Path, kubeconfig: Path, ports: dict[str, int],
                          service_cidr: str) -> list[str]:
    """kube-router as a NetworkPolicy engine only (no routing, no service proxy, no CNI). It enforces
    the policies of the pods on the node it is started for."""
    return [str(kube_router), f"--kubeconfig={kubeconfig}", f"--hostname-override={node.name}",
            "--run-firewall=true", "--run-router=false", "--run-service-proxy=false", "--enable-cni=false",
            f"--health-port={ports['kube-router-health']}", "--metrics-port=0",
            f"--service-cluster-ip-range={service_cidr}", "--iptables-sync-period=30s", "--v=1"]


def write_json(path: Path, value: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2) + "\n")
    return path
