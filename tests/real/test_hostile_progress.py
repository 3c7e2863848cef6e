"""Hostile trainers on a real node: pods whose `/progress` answers 500 MB, streams without end, sends a
byte every 2 s, answers garbage, or quotes 1 500-character names and values. None of them may hurt the
operator or another job: the operator's memory stays flat, an honest job beside them keeps its progress
period, every job's status stays writable, and each hostile job ends in its true state (its pod exits
0: Succeeded) with what it sent refused in `status.progress.problem`.

The hostile servers are plain Python in the stock TensorFlow image (no TensorFlow imported), each
serving for a while and then exiting 0, like a trainer that finished.
"""

from __future__ import annotations

import itertools
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.real.kubectl import Kubectl, wait_for
from tests.real.reporting import PERIOD, code_config_map, progress, reporting_job
from tests.support.operator import Operator

LIFETIME = 100  # seconds each hostile pod serves before it exits 0

SERVER = """
import http.server, json, os, socketserver, sys, threading, time

BEHAVIOUR = os.environ["HOSTILE"]

class Hostile(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        try:
            self.answer()
        except OSError:
            pass  # the operator hung up on us: that is the point

    def answer(self):
        if BEHAVIOUR == "names":
            body = json.dumps({"step": 5, "metrics": {"m" * 1500: 1.0}}).encode()
        elif BEHAVIOUR == "values":
            body = json.dumps({"step": "7" * 1500, "metrics": {"loss": "x" * 1500}}).encode()
        elif BEHAVIOUR == "garbage":
            body = bytes(range(256)) * 8
        else:
            body = None
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if body is not None:
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if BEHAVIOUR == "huge":  # says so: 500 MB
            self.send_header("Content-Length", str(500 * 2**20))
            self.end_headers()
            piece = b"0" * 2**20
            for _ in range(500):
                self.wfile.write(piece)
            return
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        piece, pause = (b"1" * 2**20, 0.25) if BEHAVIOUR == "endless" else (b" ", 2.0)  # 4 MB/s, or 1 B/2 s
        while True:
            self.wfile.write(b"%x\\r\\n%s\\r\\n" % (len(piece), piece))
            self.wfile.flush()
            time.sleep(pause)

class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True

threading.Thread(target=Server(("", 8090), Hostile).serve_forever, daemon=True).start()
print("HOSTILE", BEHAVIOUR, flush=True)
time.sleep(float(os.environ["LIFETIME"]))
print("DONE", flush=True)
os._exit(0)
"""

HONEST = """
import time
import tfheartbeat

for step in range(1, 2001):  # 400 s: longer than the test
    tfheartbeat.report(step=step, total_steps=2000, metrics={"loss": 1.0 / step})
    time.sleep(0.2)
"""

BEHAVIOURS = ("huge", "endless", "trickle", "garbage", "names", "values")


def hostile_job(name: str, behaviour: str) -> dict[str, Any]:
    job = reporting_job(name, role="chief")
    container = job["spec"]["chief"]["template"]["spec"]["containers"][0]
    container["env"] += [{"name": "HOSTILE", "value": behaviour}, {"name": "LIFETIME", "value": str(LIFETIME)}]
    container["resources"] = {"requests": {"cpu": "10m", "memory": "32Mi"}}  # 20 of them share 2 cores
    return job


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for process {pid}")


def submit_all(kubectl: Kubectl, jobs: list[tuple[str, str]]) -> None:
    documents: list[dict[str, Any]] = []
    for name, behaviour in jobs:
        script = HONEST if behaviour == "honest" else SERVER
        documents.append(code_config_map(f"{name}-code", script))
        documents.append(reporting_job(name) if behaviour == "honest" else hostile_job(name, behaviour))
    kubectl("apply", "-f", "-", input=yaml.safe_dump_all(documents))


def states(kubectl: Kubectl) -> dict[str, str]:
    """Every job's state, in one call."""
    return {job["metadata"]["name"]: (job.get("status") or {}).get("state", "")
            for job in kubectl.json("tensorflowjob")["items"]}


def update_times(kubectl: Kubectl, name: str, seconds: float) -> list[str]:
    """The distinct `status.progress.lastUpdateTime`s of a job seen over `seconds`."""
    seen: list[str] = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        stamp = progress(kubectl, name).get("lastUpdateTime")
        if stamp and stamp not in seen:
            seen.append(stamp)
        time.sleep(1)
    return seen


def gaps(stamps: list[str]) -> list[float]:
    times = [time.mktime(time.strptime(s, "%Y-%m-%dT%H:%M:%SZ")) for s in stamps]
    return [b - a for a, b in itertools.pairwise(times)]


@pytest.mark.real_ci
def test_twenty_hostile_progress_endpoints_hurt_neither_the_operator_nor_an_honest_job(
        kubectl: Kubectl, operator: Operator) -> None:
    assert operator.process is not None
    pid = operator.process.pid
    hostile = [(f"{behaviour}-{n}", behaviour) for n in range(4) for behaviour in BEHAVIOURS][:20]
    submit_all(kubectl, [("honest", "honest")])
    wait_for(lambda: progress(kubectl, "honest").get("step"), 240, "the honest job's first progress")
    before = rss_kib(pid)
    submit_all(kubectl, hostile)
    wait_for(lambda: all(states(kubectl).get(name) == "Running" for name, _ in hostile), 300,
             "the 20 hostile jobs to run")
    peak = before
    # While every hostile endpoint is being read: the honest job's updates, and the operator's memory.
    stamps: list[str] = []
    end = time.monotonic() + 6 * PERIOD
    while time.monotonic() < end:
        stamps += [s for s in update_times(kubectl, "honest", 2) if s not in stamps]
        peak = max(peak, rss_kib(pid))
    finals = wait_for(lambda: (lambda now: {name: now.get(name) for name, _ in hostile}
                               if all(now.get(name) in ("Succeeded", "Failed") for name, _ in hostile) else None)(
        states(kubectl)), LIFETIME + 240, "the hostile jobs to finish")
    problems = {name: progress(kubectl, name).get("problem", "") for name, _ in hostile}
    kubectl("delete", "tensorflowjob", "--all", "--wait=false")
    assert (peak - before) < 20 * 1024, f"operator RSS grew by {(peak - before) / 1024:.1f} MB"
    assert len(stamps) >= 5 and max(gaps(stamps)) <= PERIOD + 5, stamps  # the documented delay
    assert finals is not None and set(finals.values()) == {"Succeeded"}, finals
    for name, behaviour in hostile:
        problem = problems[name]
        assert len(problem) <= 1024
        if behaviour in ("huge", "endless"):
            assert problem.endswith("the answer is larger than 4096 bytes"), (name, problem)
        elif behaviour == "names":
            assert "must match" in problem, (name, problem)
        elif behaviour in ("garbage", "values"):
            assert problem.startswith("refused the report of"), (name, problem)
        else:  # a trickle never completes an answer: nothing to show, and the job unharmed
            assert problem == "", (name, problem)
