"""devcluster.ports: probed ports stay clear of the ports the kernel hands out by itself."""

from __future__ import annotations

import random
import socket
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
