"""The controller-manager's node grace period follows the cluster's state (a plain argv check)."""

from __future__ import annotations

from pathlib import Path

from devcluster.components import command
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
