"""`JobLogs`: `kubectl tfjob logs JOB -f` run in the background for the whole life of a job, the way a
user follows a training run, so that a test can read every pod's log afterwards, also of the pods the
operator deleted when the job finished (parameter servers) or recreated on the way."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
from pathlib import Path
from types import TracebackType

from devcluster.cluster import Cluster

PLUGIN = Path(sys.executable).with_name("kubectl-tfjob")
LINE = re.compile(r"^\[(?P<slot>[a-z]+-\d+)\] (?P<text>.*)$")


class JobLogs:
    """Follows one job's logs from start to end; `lines(slot)` are what one pod slot printed, `seen(text)`
    how many lines so far contain a text (while it still runs)."""

    def __init__(self, cluster: Cluster, namespace: str, job: str) -> None:
        self.argv = [str(PLUGIN), "logs", job, "-f", "-n", namespace, f"--kubeconfig={cluster.kubeconfig}"]
        self.process: subprocess.Popen[str] | None = None
        self.output = ""
        self.errors = ""
        self._received: list[str] = []
        self._reader: threading.Thread | None = None

    def __enter__(self) -> JobLogs:
        self.process = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self._reader = threading.Thread(target=self._read, args=(self.process,), daemon=True)
        self._reader.start()
        return self

    def _read(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            self._received.append(line)

    def seen(self, text: str) -> int:
        return sum(text in line for line in list(self._received))

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.finish(timeout=60.0 if kind is None else 1.0)

    def finish(self, timeout: float) -> None:
        """Wait for the follower to end by itself (it does when the job has finished), else stop it."""
        assert self.process is not None and self._reader is not None
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.terminate()
            self.process.wait(timeout=10)
        self._reader.join(timeout=10)
        assert self.process.stderr is not None
        self.errors = self.process.stderr.read()
        self.output = "".join(self._received)

    @property
    def ended_by_itself(self) -> bool:
        return self.process is not None and self.process.returncode == 0

    def lines(self, slot: str) -> list[str]:
        found = []
        for line in self.output.splitlines():
            match = LINE.match(line)
            if match and match["slot"] == slot:
                found.append(match["text"])
        return found

    def slots(self) -> set[str]:
        return {m["slot"] for m in map(LINE.match, self.output.splitlines()) if m}
