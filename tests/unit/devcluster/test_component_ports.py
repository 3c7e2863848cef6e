"""devcluster.component_ports: a restarted component whose port only the cluster's health checks know
takes a new one; one whose port clients know keeps it, and only while the cluster holds it."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from devcluster import component_ports, ports

CLUSTER = ports.Holder(os.getpid(), "/clusters/a/state.json")


@pytest.fixture(autouse=True)
def registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TFJOB_PORT_RESERVATIONS", str(tmp_path))
    return tmp_path


def test_a_restarted_controller_manager_takes_a_new_port_when_its_old_one_is_held() -> None:
    old = ports.free_ports(["kube-controller-manager"], holder=CLUSTER)
    with socket.socket() as other:
        other.bind(("127.0.0.1", old["kube-controller-manager"]))
        other.listen()
        new = component_ports.claim("kube-controller-manager", old, CLUSTER)
        assert new["kube-controller-manager"] != old["kube-controller-manager"]
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", new["kube-controller-manager"]))  # free to bind


def test_a_restarted_api_server_keeps_its_port_for_its_clients() -> None:
    old = ports.free_ports(["kube-apiserver"], holder=CLUSTER)
    assert component_ports.claim("kube-apiserver", old, CLUSTER) == old


def test_a_port_an_api_server_must_keep_is_refused_when_another_cluster_holds_it() -> None:
    old = ports.free_ports(["kube-apiserver"], holder=ports.Holder(os.getpid(), "/clusters/b/state.json"))
    with pytest.raises(component_ports.PortTaken, match="kube-apiserver must keep port"):
        component_ports.claim("kube-apiserver", old, CLUSTER)


def test_the_old_private_port_is_given_back(registry: Path) -> None:
    old = ports.free_ports(["kube-scheduler"], holder=CLUSTER)
    component_ports.claim("kube-scheduler", old, CLUSTER)
    assert not (registry / str(old["kube-scheduler"])).exists()


def test_only_controller_manager_and_scheduler_move() -> None:
    assert [c for c in ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")
            if component_ports.movable(c)] == ["kube-controller-manager", "kube-scheduler"]
