"""devcluster.ports: probed ports stay clear of the ports the kernel hands out by itself, and of the
ports another process of the project has reserved."""

from __future__ import annotations

import os
import random
import socket
import subprocess
from pathlib import Path

import pytest

from devcluster import ports


def test_free_ports_are_distinct_and_below_the_kernels_ephemeral_range() -> None:
    picked = ports.free_ports([f"p{i}" for i in range(20)], random.Random(7))
    assert len(set(picked.values())) == 20
    assert all(ports.LOWEST <= port < ports.ephemeral_start() for port in picked.values())


def test_a_port_in_use_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        offers = iter([taken, *range(taken + 1, taken + 50)])  # the busy port is offered first
        rng = random.Random()
        monkeypatch.setattr(rng, "randrange", lambda _low, _high: next(offers))
        assert ports.free_ports(["only"], rng)["only"] != taken


def test_the_ephemeral_range_is_read_from_the_kernel(tmp_path: Path) -> None:
    range_file = tmp_path / "ip_local_port_range"
    range_file.write_text("40000\t60999\n")
    assert ports.ephemeral_start(range_file) == 40000
    assert ports.ephemeral_start(tmp_path / "missing") == 32768


def test_a_port_reserved_by_a_live_holder_is_never_picked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    held = ports.free_ports(["held"], holder=ports.Holder(os.getpid(), "held-by-another"), registry=tmp_path)["held"]
    offers = iter([held, *range(held + 1, held + 50)])  # the reserved port is offered first
    rng = random.Random()
    monkeypatch.setattr(rng, "randrange", lambda _low, _high: next(offers))
    assert ports.free_ports(["only"], rng, registry=tmp_path)["only"] != held


def test_a_reservation_whose_holder_is_gone_is_taken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dead_pid = _exited_pid()
    stale = ports.free_ports(["stale"], holder=ports.Holder(dead_pid), registry=tmp_path)["stale"]
    rng = random.Random()
    monkeypatch.setattr(rng, "randrange", lambda _low, _high: stale)
    assert ports.free_ports(["only"], rng, registry=tmp_path)["only"] == stale


def test_a_holder_with_a_file_lives_while_the_file_exists(tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    state.write_text("{}")
    holder = ports.Holder(_exited_pid(), str(state))
    assert holder.alive()
    state.unlink()
    assert not holder.alive()


def test_keeping_a_port_reserved_by_another_live_holder_is_refused(tmp_path: Path) -> None:
    port = ports.free_port(holder=ports.Holder(os.getpid(), "cluster-a"), registry=tmp_path)
    assert ports.reserve([port], ports.Holder(os.getpid(), "cluster-b"), registry=tmp_path) == [port]
    assert ports.reserve([port], ports.Holder(12345, "cluster-a"), registry=tmp_path) == []  # the same cluster


def test_a_released_port_may_be_picked_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    port = ports.free_port(holder=ports.Holder(os.getpid(), "elsewhere"), registry=tmp_path)
    ports.release([port], registry=tmp_path)
    rng = random.Random()
    monkeypatch.setattr(rng, "randrange", lambda _low, _high: port)
    assert ports.free_ports(["again"], rng, registry=tmp_path)["again"] == port


def test_a_log_that_says_the_address_was_in_use_is_a_lost_race() -> None:
    assert ports.lost_port_race("OSError: [Errno 98] Address already in use")
    assert ports.lost_port_race('listen tcp 127.0.0.1:20001: bind: address already in use')
    assert not ports.lost_port_race("connection refused")


def _exited_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid
