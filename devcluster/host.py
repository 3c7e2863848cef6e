"""Facts of the machine a devcluster runs on: an address for the API server to advertise, and a fast
folder for etcd's data. Kept apart from cluster.py, which starts and stops the processes."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
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
