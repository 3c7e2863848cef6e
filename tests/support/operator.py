"""`Operator`: the operator as a real `tfjob-operator run --kubeconfig ...` subprocess, for the tests that
run it against a local cluster (its log in $TFJOB_TEST_LOG_DIR, printed when a test fails)."""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import urllib.request

from devcluster.ports import free_port
from tests.support.polling import wait_for

ROOT = pathlib.Path(__file__).resolve().parents[2]
LOG_DIR = pathlib.Path(os.environ.get("TFJOB_TEST_LOG_DIR", "/tmp/tfjob-operator-test-logs"))


class Operator:
    """A `tfjob-operator run` subprocess."""

    def __init__(self, kubeconfig: str, name: str, extra: list[str] | None = None, *,
                 command: list[str] | None = None, cwd: pathlib.Path = ROOT) -> None:
        """`command` runs the operator (default: this checkout's, with this interpreter); `cwd` is
        where it runs."""
        LOG_DIR.mkdir(parents=True, exist_ok=True)
        self.metrics_port = free_port()
        self.health_port = free_port()
        self.log_path = LOG_DIR / f"{name}.log"
        self.cwd = cwd
        command = command or [sys.executable, "-m", "controller.process.cli"]
        self.args = [*command, "run", "--kubeconfig", kubeconfig,
                     "--metrics-addr", f"127.0.0.1:{self.metrics_port}",
                     "--health-addr", f"127.0.0.1:{self.health_port}",
                     "--log-format", "json", "--resync", "60", *(extra or [])]  # default workers, QPS
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, wait_ready: bool = True) -> Operator:
        log = open(self.log_path, "ab")  # noqa: SIM115 - owned by the child for its lifetime
        self.process = subprocess.Popen(self.args, stdout=log, stderr=subprocess.STDOUT, cwd=self.cwd)
        log.close()
        if wait_ready:
            wait_for(self.ready, 60, "the operator's /readyz")
        return self

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

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()

    def tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"
