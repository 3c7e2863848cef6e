"""Facts of the machine a devcluster runs on: an address for the API server to advertise, and a fast
folder for etcd's data. Kept apart from cluster.py, which starts and stops the processes."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

FALLBACK_ADVERTISE_ADDRESS = "172.31.255.254"  # any non-loopback IPv4 will do; nothing connects to it


def advertise_address() -> str:
    """A non-loopback IPv4 address of this host for --advertise-address.

    The apiserver rejects loopback; it only publishes this address in the `kubernetes` Endpoints,
    which nothing in a devcluster dials, so a fixed private address is an acceptable fallback.
    """
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))  # UDP connect sends nothing; it only picks the route
            ip = str(s.getsockname()[0])
        if ip and not ip.startswith("127.") and ip != "0.0.0.0":
            return ip
    except OSError:
        pass
    try:
        out = subprocess.run(["ip", "-4", "-o", "addr", "show", "scope", "global"],
                             capture_output=True, text=True, check=False).stdout
        for line in out.splitlines():
            fields = line.split()
            if "inet" in fields:
                return fields[fields.index("inet") + 1].split("/")[0]
    except OSError:
        pass
    return FALLBACK_ADVERTISE_ADDRESS


def etcd_data_dir(cluster_dir: Path) -> Path:
    """A fresh 0700 folder for etcd: in RAM (/dev/shm) when possible, else in the cluster folder."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        return Path(tempfile.mkdtemp(prefix="tfjob-devcluster-etcd-", dir=shm))
    path = cluster_dir / "etcd-data"
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(mode=0o700)
    return path


INOTIFY = Path("/proc/sys/fs/inotify")
# Each cluster's processes hold about 15 inotify instances (certificate and config watchers), and
# KWOK opens one more per followed log. Every process runs as the same user, whose default allowance
# (128, or 1024 on some hosts) several clusters side by side (parallel test workers, MultiKueue, a
# neighbour cluster) used up: Kueue then died at start and `kubectl logs -f` failed with "too many open
# files". These are the values kind recommends for many clusters on one host.
INOTIFY_LIMITS = {"max_user_instances": 8192, "max_user_watches": 524288}


def raise_inotify_limits(folder: Path = INOTIFY) -> list[str]:
    """Raise the per-user inotify limits to INOTIFY_LIMITS where they are lower and this process may
    (root); a limit left lower is said on stderr, and returned."""
    left = []
    for name, wanted in INOTIFY_LIMITS.items():
        path = folder / name
        try:
            if int(path.read_text()) >= wanted:
                continue
            path.write_text(str(wanted))
        except (OSError, ValueError) as error:
            left.append(f"fs.inotify.{name} is below {wanted} and could not be raised ({error}); "
                        f"several local clusters at once may fail with 'too many open files'")
    for line in left:
        print(f"devcluster: {line}", file=sys.stderr)
    return left
