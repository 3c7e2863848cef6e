"""Free TCP ports for the processes the devcluster, the tests and the benchmarks start, reserved
machine-wide while they are in use.

A port is probed here and bound later by another process, so something may take it in between.
Two things did, in busy test runs:

* the kernel: ports it hands out itself (`bind(0)`, the source port of every outgoing connection)
  come from `net.ipv4.ip_local_port_range`, and a busy run opens thousands of connections. So ports
  are picked at random *below* that range, where only an explicit bind can land;
* this project itself: a process stopped for a moment (an operator stopped for one test, an API
  server restarted) leaves its port free, and another cluster, test worker or benchmark on the same
  machine probing for a port could pick exactly that one. So every port picked here is *reserved*:
  a file named after the port in a machine-wide folder (`/tmp/tfjob-operator-ports`, or
  `$TFJOB_PORT_RESERVATIONS`) says who holds it, and no other caller picks it while its holder lives.

A holder is a process id and, optionally, a file: the reservation lives while the process runs or
the file exists (a cluster started by `tfjob-devcluster up` outlives the command that started it,
and holds its ports through its state file until `down`). A holder that is gone leaves a stale
reservation, which the next caller may take. The folder is changed only under an exclusive lock.

A process whose port is known to others (the API server's, in every kubeconfig) keeps it across a
restart, protected by its reservation. Every other process picks new ports when it starts again,
and a start that still loses a race (`lost_port_race` reads its log) is retried with new ones.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import random
import re
import socket
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

PORT_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LOWEST = 10000  # clear of the well-known and registered service ports most hosts listen on
ATTEMPTS = 200
DEFAULT_REGISTRY = Path("/tmp/tfjob-operator-ports")
ADDRESS_IN_USE = re.compile(r"address already in use|EADDRINUSE|Errno 98", re.IGNORECASE)


def registry_dir() -> Path:
    """The machine-wide folder of reservations."""
    return Path(os.environ.get("TFJOB_PORT_RESERVATIONS") or DEFAULT_REGISTRY)


@dataclass(frozen=True)
class Holder:
    """Who holds a reservation: alive while `pid` runs or `path` (when given) exists."""

    pid: int
    path: str = ""

    def alive(self) -> bool:
        if self.path and Path(self.path).exists():
            return True
        return _pid_alive(self.pid)

    def same(self, other: Holder) -> bool:
        """Whether `other` is this holder: the same file, or the same process when neither has one
        (a cluster restarted by another process than the one that started it is the same holder)."""
        if self.path or other.path:
            return self.path == other.path
        return self.pid == other.pid

    def encode(self) -> str:
        return f"{self.pid}\n{self.path}\n"

    @classmethod
    def decode(cls, text: str) -> Holder | None:
        lines = text.split("\n")
        try:
            return cls(int(lines[0]), lines[1] if len(lines) > 1 else "")
        except ValueError:
            return None


def this_process(path: str | os.PathLike[str] | None = None) -> Holder:
    """A holder for the calling process (and `path`, when the reservation must outlive it)."""
    return Holder(os.getpid(), str(path or ""))


def _pid_alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def ephemeral_start(range_file: Path = PORT_RANGE_FILE) -> int:
    """The first port the kernel may pick by itself (32768 when it cannot be read)."""
    try:
        return int(range_file.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


@contextlib.contextmanager
def _locked(registry: Path) -> Iterator[None]:
    registry.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(OSError):
        registry.chmod(0o1777)  # shared by every user's runs, like /tmp itself
    with open(registry / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _holder_of(registry: Path, port: int) -> Holder | None:
    """The live holder of `port`'s reservation, if any."""
    try:
        current = Holder.decode((registry / str(port)).read_text())
    except OSError:
        return None
    return current if current is not None and current.alive() else None


def _write(registry: Path, port: int, holder: Holder) -> None:
    target = registry / str(port)
    tmp = registry / f".{port}.{os.getpid()}"
    tmp.write_text(holder.encode())
    tmp.replace(target)


def free_ports(names: Sequence[str], rng: random.Random | None = None, *, holder: Holder | None = None,
               registry: Path | None = None) -> dict[str, int]:
    """Distinct free TCP ports on 127.0.0.1, one per name, outside the kernel's ephemeral range
    (ports the kernel picks when that range leaves no room below it), none reserved by a live
    holder (the caller included); each is reserved for `holder` (the calling process by default) until `release`d."""
    rng = rng or random.Random()
    holder = holder or this_process()
    registry = registry or registry_dir()
    high = ephemeral_start()
    sockets: list[socket.socket] = []
    with _locked(registry):
        try:
            for _ in names:
                sockets.append(_bind_below(high, rng, registry) if high - LOWEST >= 1000 else _bind(0))
            picked = {name: s.getsockname()[1] for name, s in zip(names, sockets, strict=True)}
            for port in picked.values():
                _write(registry, port, holder)
            return picked
        finally:
            for s in sockets:
                s.close()


def free_port(*, holder: Holder | None = None, registry: Path | None = None) -> int:
    return free_ports(["port"], holder=holder, registry=registry)["port"]


def reserve(ports: Iterable[int], holder: Holder, registry: Path | None = None) -> list[int]:
    """Reserve ports already chosen (a restart keeping its port) for `holder`; returns the ports a
    live other holder has reserved, which are left as they are."""
    registry = registry or registry_dir()
    conflicts = []
    with _locked(registry):
        for port in ports:
            current = _holder_of(registry, port)
            if current is not None and not current.same(holder):
                conflicts.append(port)
            else:
                _write(registry, port, holder)
    return conflicts


def release(ports: Iterable[int], registry: Path | None = None) -> None:
    """Give the reservations of `ports` up (whoever made them: the caller owns these ports)."""
    registry = registry or registry_dir()
    with _locked(registry):
        for port in ports:
            (registry / str(port)).unlink(missing_ok=True)


def lost_port_race(log_text: str) -> bool:
    """Whether a process's log says it could not bind its port (another process took it)."""
    return bool(ADDRESS_IN_USE.search(log_text))


def _bind_below(high: int, rng: random.Random, registry: Path) -> socket.socket:
    """A socket bound to a random port below `high` that nobody has reserved (not even the caller,
    for another of its processes)."""
    for _ in range(ATTEMPTS):
        port = rng.randrange(LOWEST, high)
        if _holder_of(registry, port) is not None:
            continue
        try:
            return _bind(port)
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
