"""Free TCP ports for the processes the devcluster, the tests and the benchmarks start.

A port is probed here and bound later by another process, so something may take it in between.
Ports the kernel hands out itself (`bind(0)`, and the source port of every outgoing connection)
come from `net.ipv4.ip_local_port_range`; a busy test run opens thousands of connections, and one of
them once took an operator's health port in that gap ("Address already in use"). So the ports are
picked at random *below* that range, where only an explicit bind can land, and all of one call's
ports are held open together so they are distinct.
"""

from __future__ import annotations

import random
import socket
from collections.abc import Sequence
from pathlib import Path

PORT_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LOWEST = 10000  # clear of the well-known and registered service ports most hosts listen on
ATTEMPTS = 200


def ephemeral_start(range_file: Path = PORT_RANGE_FILE) -> int:
    """The first port the kernel may pick by itself (32768 when it cannot be read)."""
    try:
        return int(range_file.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_ports(names: Sequence[str], rng: random.Random | None = None) -> dict[str, int]:
    """Distinct free TCP ports on 127.0.0.1, one per name, outside the kernel's ephemeral range
    (ports the kernel picks when that range leaves no room below it)."""
    rng = rng or random.Random()
    high = ephemeral_start()
    sockets: list[socket.socket] = []
    try:
        for _ in names:
            sockets.append(_bind_below(high, rng) if high - LOWEST >= 1000 else _bind(0))
        return {name: s.getsockname()[1] for name, s in zip(names, sockets, strict=True)}
    finally:
        for s in sockets:
            s.close()


def free_port() -> int:
    return free_ports(["port"])["port"]


def _bind_below(high: int, rng: random.Random) -> socket.socket:
    for _ in range(ATTEMPTS):
        try:
            return _bind(rng.randrange(LOWEST, high))
        except OSError:
            continue
    return _bind(0)


def _bind(port: int) -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        s.close()
        raise
    return s
