"""The real nodes' plan and configuration files, as plain data: distinct addresses and pod ranges on
the one bridge, the settings this machine kind needs, DNS that never asks outside."""

from __future__ import annotations

import ipaddress
import tomllib
from pathlib import Path

import pytest

from devcluster.components import canonical
from devcluster.realnode_config import (
    DNS_ADDRESS,
    NETWORK,
    RealNode,
    cni_conflist,
    containerd_config,
    corefile,
    kubelet_arguments,
    kubelet_config,
    node_components,
    plan_nodes,
    port_names,
)


def nodes(count: int, tmp_path: Path) -> list:  # type: ignore[type-arg]
    return plan_nodes(count, tmp_path / "cluster", tmp_path / "images")


def test_every_real_node_has_its_own_address_and_pod_range_inside_the_bridge_network(tmp_path: Path) -> None:
    network = ipaddress.ip_network(NETWORK)
    planned = nodes(3, tmp_path)
    addresses = [node.address for node in planned]
    ranges = [node.pod_range for node in planned]
    assert len(set(addresses)) == 3 and len(set(ranges)) == 3
    for node in planned:
        start, end = (ipaddress.ip_address(a) for a in node.pod_range)
        assert start in network and end in network
        assert not start <= ipaddress.ip_address(node.address) <= end
        assert ipaddress.ip_address(DNS_ADDRESS) not in (start, end)


def test_the_cni_network_hands_out_the_nodes_range_and_routes_services_through_the_bridge(tmp_path: Path) -> None:
    node = nodes(2, tmp_path)[1]
    plugin = cni_conflist(node, "10.96.0.0/16")["plugins"][0]
    assert plugin["type"] == "bridge" and plugin["ipMasq"] is False
    (pool,) = plugin["ipam"]["ranges"][0]
    assert (pool["rangeStart"], pool["rangeEnd"]) == node.pod_range
    assert plugin["ipam"]["routes"] == [{"dst": "10.96.0.0/16"}]  # no default route off the machine
    assert plugin["ipam"]["dataDir"].startswith(str(node.folder))


def test_the_kubelet_is_configured_for_hybrid_cgroups_without_lowering_oom_scores(tmp_path: Path) -> None:
    node = nodes(1, tmp_path)[0]
    ports = {"kubelet-0": 10250, "kubelet-0-healthz": 10248}
    config = kubelet_config(node, ports, tmp_path / "ca.crt")
    assert config["failCgroupV1"] is False and config["cgroupsPerQOS"] is False
    assert config["oomScoreAdj"] == 0
    assert config["address"] == node.address and config["port"] == 10250
    assert config["clusterDNS"] == [DNS_ADDRESS] and config["resolvConf"] == ""
    assert config["authentication"]["anonymous"]["enabled"] is False


def test_containerd_never_lowers_oom_scores_and_uses_the_imported_sandbox_image(tmp_path: Path) -> None:
    node = nodes(1, tmp_path)[0]
    text = containerd_config(node)
    assert "restrict_oom_score_adj = true" in text
    assert 'sandbox_image = "registry.k8s.io/pause:3.10"' in text
    assert f'address = "{node.containerd_socket}"' in text
    assert len(str(node.containerd_socket)) < 100  # a unix socket path has at most 107 bytes


def test_real_nodes_are_tainted_only_when_fake_nodes_share_the_cluster(tmp_path: Path) -> None:
    node = nodes(1, tmp_path)[0]
    tainted = kubelet_arguments(node, Path("/bin/kubelet"), {"a": "b"}, taint=True)
    plain = kubelet_arguments(node, Path("/bin/kubelet"), {"a": "b"}, taint=False)
    assert any(a.startswith("--register-with-taints=") for a in tainted)
    assert not any(a.startswith("--register-with-taints=") for a in plain)


def test_the_cluster_dns_answers_the_cluster_domain_and_refuses_everything_else_itself() -> None:
    text = corefile(Path("/k/admin.kubeconfig"), 18181)
    assert "kubernetes cluster.local" in text and "pods insecure" in text
    assert "forward" not in text
    assert "rcode NXDOMAIN" in text
    assert f"bind {DNS_ADDRESS}" in text


def test_each_node_starts_its_runtime_before_its_kubelet_and_the_shared_services_come_last() -> None:
    assert node_components(0) == () and port_names(0) == ()
    assert node_components(2) == ("containerd-0", "kubelet-0", "containerd-1", "kubelet-1",
                                  "coredns", "kube-proxy", "kube-router")
    for name in node_components(2):
        assert canonical(name) == name


def test_a_negative_number_of_real_nodes_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="real nodes"):
        nodes(-1, tmp_path)


def test_each_kubelet_keeps_its_pods_logs_in_its_own_folder(tmp_path: Path) -> None:
    first, second = nodes(2, tmp_path)
    ports = {"kubelet-0": 1, "kubelet-0-healthz": 2, "kubelet-1": 3, "kubelet-1-healthz": 4}
    folders = {kubelet_config(node, ports, tmp_path / "ca.crt")["podLogsDir"] for node in (first, second)}
    assert len(folders) == 2 and all(folder.startswith(str(tmp_path)) for folder in folders)


def test_two_real_nodes_on_one_host_share_no_folder_socket_or_port_their_kubelets_and_runtimes_use(
        tmp_path: Path) -> None:
    planned = nodes(2, tmp_path)
    ports = {name: number for number, name in enumerate(port_names(2), start=10250)}

    def used(node: RealNode) -> set[str]:
        runtime = tomllib.loads(containerd_config(node))
        cri = runtime["plugins"]["io.containerd.grpc.v1.cri"]
        kubelet = kubelet_config(node, ports, tmp_path / "ca.crt")
        argv = kubelet_arguments(node, tmp_path / "kubelet", {}, taint=False)
        flags = {arg.split("=", 1)[0]: arg.split("=", 1)[1] for arg in argv[1:]}
        return {runtime["root"], runtime["state"], runtime["grpc"]["address"], runtime["ttrpc"]["address"],
                cri["cni"]["conf_dir"], cni_conflist(node, "10.96.0.0/16")["plugins"][0]["ipam"]["dataDir"],
                f"{kubelet['address']}:{kubelet['port']}", f"healthz:{kubelet['healthzPort']}",
                kubelet["containerRuntimeEndpoint"], kubelet["tlsCertFile"], kubelet["volumePluginDir"],
                kubelet["podLogsDir"], flags["--root-dir"], flags["--hostname-override"], flags["--node-ip"],
                flags["--kubeconfig"]}

    first, second = (used(node) for node in planned)
    assert len(first) == len(second) == 16
    assert not first & second
