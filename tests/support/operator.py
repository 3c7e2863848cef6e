"""`Operator`: the operator as a real `tfjob-operator run --kubeconfig ...` subprocess, for the tests that
run it against a local cluster (its log in $TFJOB_TEST_LOG_DIR, printed when a test fails).

Its metrics and health ports are picked (and reserved, devcluster/ports.py) each time it starts, never
once for its lifetime: a test stops the shared operator and starts it again later, and a port free
when it was first picked may be someone else's by then. A start whose port was taken anyway between
the pick and the bind is retried with new ports.

`started_at` is the wall-clock time of the last spawn: the operator reads what the cluster offers
(Kueue's API and Configuration, the served kinds) once, at start, so a fixture can tell whether a
running operator started after something it must have seen.
"""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import time
import urllib.request

from devcluster import ports
from tests.support.polling import wait_for

ROOT = pathlib.Path(__file__).resolve().parents[2]
# One folder per pytest-xdist worker: each worker's session operator has the same name.
LOG_DIR = (pathlib.Path(os.environ.get("TFJOB_TEST_LOG_DIR", "/tmp/tfjob-operator-test-logs"))
           / os.environ.get("PYTEST_XDIST_WORKER", "main"))
STARTS = 3  # attempts at a start whose ports were taken between the pick and the bind


class Operator:
    """A `tfjob-operator run` subprocess."""

    def __init__(self, kubeconfig: str, name: str, extra: list[str] | None = None, *,
                 command: list[str] | None = None, cwd: pathlib.Path = ROOT) -> None:
        """`command` runs the operator (default: this checkout's, with this interpreter); `cwd` is
        where it runs."""
        LOG_DIR.mkdir(parents=True, exist_ok=True)
        self.metrics_port = 0  # picked by start()
        self.health_port = 0
        self.log_path = LOG_DIR / f"{name}.log"
        self.cwd = cwd
        self.command = command or [sys.executable, "-m", "controller.process.cli"]
        self.kubeconfig = kubeconfig
        self.extra = list(extra or [])
        self.process: subprocess.Popen[bytes] | None = None
        self.started_at: float | None = None  # time.time() of the last spawn
        self._log_offset = 0

    @property
    def args(self) -> list[str]:
        """The command line of the current (or next) start."""
        return [*self.command, "run", "--kubeconfig", self.kubeconfig,
                "--metrics-addr", f"127.0.0.1:{self.metrics_port}",
                "--health-addr", f"127.0.0.1:{self.health_port}",
                "--log-format", "json", "--resync", "60", *self.extra]  # default workers, QPS

    def start(self, wait_ready: bool = True) -> Operator:
        """Start on ports picked now; with `wait_ready`, until /readyz answers, retrying with new
        ports when the process lost one of them to another process."""
        for attempt in range(1, STARTS + 1):
            self._spawn()
            if not wait_ready:
                return self
            try:
                wait_for(self.ready, 60, "the operator's /readyz")
                return self
            except AssertionError:
                if attempt == STARTS or not self.lost_port_race():
                    raise
        return self

    def _spawn(self) -> None:
        self._release_ports()
        picked = ports.free_ports(["metrics", "health"])
        self.metrics_port, self.health_port = picked["metrics"], picked["health"]
        self._log_offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        log = open(self.log_path, "ab")  # noqa: SIM115 - owned by the child for its lifetime
        self.started_at = time.time()
        self.process = subprocess.Popen(self.args, stdout=log, stderr=subprocess.STDOUT, cwd=self.cwd)
        log.close()

    def lost_port_race(self) -> bool:
        """Whether the last start exited because one of its ports was in use."""
        if self.process is None or self.process.poll() is None:
            return False
        try:
            with open(self.log_path, "rb") as log:
                log.seek(self._log_offset)
                return ports.lost_port_race(log.read().decode(errors="replace"))
        except OSError:
            return False

    def _release_ports(self) -> None:
        ports.release(p for p in (self.metrics_port, self.health_port) if p)

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def ready(self) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            raise AssertionError(f"operator exited with {self.process.returncode}:\n{self.tail()}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.health_port}/readyz", timeout=2) as answer:
                return answer.status == 200
        except OSError:
            return False

    def metrics(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5) as answer:
            return answer.read().decode()

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)
        self._release_ports()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()
        self._release_ports()

    def tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"
