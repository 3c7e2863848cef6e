"""Start and stop the devcluster's server processes, each in a process group of its own.

Every process is started as the leader of a new session, so it survives the terminal that ran
`tfjob-devcluster up`, does not receive the test runner's Ctrl-C, and can be stopped together
with anything it forked by signalling its own process group. Processes are only ever stopped
by the pid recorded when we started them, and only after checking (via /proc) that the pid
still runs the binary we started, so a recycled pid is never signalled. Never by name.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

# Popen objects of the processes this Python process started, so they can be reaped (no zombies).
_children: dict[int, subprocess.Popen[bytes]] = {}


def spawn(argv: list[str], log_path: Path, env: dict[str, str] | None = None) -> int:
    """Start argv in a new session with stdout+stderr appended to log_path; return its pid."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        log.write(f"\n==== {time.strftime('%Y-%m-%d %H:%M:%S')} starting: {' '.join(argv)}\n".encode())
        log.flush()
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                env=env, start_new_session=True, close_fds=True)
    _children[proc.pid] = proc
    return proc.pid


def is_running(pid: int | None, executable: str | Path) -> bool:
    """True when pid is alive (not a zombie) and runs the given executable."""
    if not pid:
        return False
    child = _children.get(pid)
    if child is not None:
        # Our own child: its pid cannot be recycled before we reap it, and /proc/<pid>/cmdline
        # is briefly empty while the kernel finishes exec, so ask the Popen object instead.
        if child.poll() is None:
            return True
        del _children[pid]
        return False
    try:
        argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0", 1)[0].decode()
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z" and argv0 == str(executable)


def stop(pid: int | None, executable: str | Path, timeout: float = 5.0) -> None:
    """Stop the process group led by pid: SIGTERM, then SIGKILL after timeout seconds
    (timeout 0: SIGKILL at once, like a crash).

    The grace period is short on purpose: these are disposable test servers, and both etcd and
    kube-apiserver linger for 7-15 s after SIGTERM while clients hold connections open.
    """
    if not is_running(pid, executable):
        return
    assert pid is not None
    steps = [(signal.SIGTERM, timeout)] if timeout > 0 else []
    for sig, wait in [*steps, (signal.SIGKILL, 5.0)]:
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not is_running(pid, executable):
                return
            time.sleep(0.05)
    raise RuntimeError(f"process {pid} ({executable}) did not stop after SIGKILL")
