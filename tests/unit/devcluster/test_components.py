"""The controller-manager's node grace period follows the cluster's state (a plain argv check)."""

from __future__ import annotations

from pathlib import Path

from devcluster.components import command, workload_api_flags
from devcluster.ports import free_ports
from devcluster.state import NODE_MONITOR_GRACE_SECONDS, ClusterState, Layout

PORTS = ("etcd", "etcd-peer", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")


def controller_manager_argv(tmp_path: Path, **state: object) -> list[str]:
    cluster = ClusterState(bin_dir="/bin", advertise_address="127.0.0.1", etcd_data_dir=str(tmp_path / "etcd"),
                           ports=free_ports(PORTS), **state)  # type: ignore[arg-type]
    return command("kube-controller-manager", Layout(tmp_path), cluster)


def test_nodes_are_judged_lost_after_the_default_grace_period(tmp_path: Path) -> None:
    assert f"--node-monitor-grace-period={NODE_MONITOR_GRACE_SECONDS}s" in controller_manager_argv(tmp_path)


def test_a_cluster_started_with_a_longer_node_grace_period_passes_it_on(tmp_path: Path) -> None:
    argv = controller_manager_argv(tmp_path, node_grace_seconds=600)
    assert "--node-monitor-grace-period=600s" in argv


def apiserver_argv(tmp_path: Path, **state: object) -> list[str]:
    cluster = ClusterState(bin_dir="/bin", advertise_address="10.89.0.1", etcd_data_dir=str(tmp_path / "etcd"),
                           ports=free_ports(PORTS), **state)  # type: ignore[arg-type]
    return command("kube-apiserver", Layout(tmp_path), cluster)


def test_a_cluster_of_fake_nodes_keeps_its_apiserver_on_loopback_with_rbac_alone(tmp_path: Path) -> None:
    argv = apiserver_argv(tmp_path)
    assert "--bind-address=127.0.0.1" in argv
    assert "--authorization-mode=RBAC" in argv


def test_with_real_nodes_pods_reach_the_apiserver_and_kubelets_are_authorised_as_nodes(tmp_path: Path) -> None:
    argv = apiserver_argv(tmp_path, real_nodes=1)
    assert "--bind-address=0.0.0.0" in argv
    assert "--authorization-mode=Node,RBAC" in argv
    assert "--enable-admission-plugins=OwnerReferencesPermissionEnforcement,NodeRestriction" in argv


def test_the_apiserver_reaches_a_real_kubelet_by_its_internal_ip_before_its_unresolvable_hostname(
        tmp_path: Path) -> None:
    types = next(a for a in apiserver_argv(tmp_path) if a.startswith("--kubelet-preferred-address-types="))
    order = types.split("=", 1)[1].split(",")
    assert order.index("InternalDNS") < order.index("InternalIP") < order.index("Hostname")


def test_from_1_37_the_workload_api_and_its_gang_scheduling_are_turned_on() -> None:
    gates = "--feature-gates=GenericWorkload=true,TopologyAwareWorkloadScheduling=true"
    assert workload_api_flags("1.37.2", "kube-apiserver") == [gates, "--runtime-config=scheduling.k8s.io/v1beta1=true"]
    assert workload_api_flags("v1.37.2", "kube-scheduler") == [gates]
    assert workload_api_flags("1.38.0", "kube-controller-manager") == [gates]


def test_before_1_37_no_gate_or_api_is_asked_for() -> None:
    assert workload_api_flags("1.36.3", "kube-apiserver") == []
    assert workload_api_flags("", "kube-scheduler") == []
