"""Fault 6: the leader fails while jobs are in flight, and a standby takes over.

Two operators elect a leader through a Lease in the test's namespace (4 s lease, 3 s renew
deadline, 0.5 s retry). While mixed jobs are created, scaled and finishing, the leader is taken
out at random moments — SIGKILLed, or (every second time) frozen with SIGSTOP, so it is a zombie
that wakes up after the standby took over and must exit without doing harm — and a fresh standby
is started each time. No pod may be created twice, no two live pods may share a slot, and every
job must end as it should.
"""

from __future__ import annotations

import json
import os
import random
import signal
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kube import ApiError, Kube, resource_path
from tests.support.polling import until_empty, wait_for

from ..conftest import Operator, TfJobs
from .conftest import Scale, wait_no_leftovers
from .watching import JobWatch, PodWatch
from .workload import live_pods_of_finished_jobs, mixed_jobs, outcome_problems, unfinished

pytestmark = pytest.mark.usefixtures("no_session_operator")

LEASE = "tfjob-operator"
LEASE_SECONDS = 4.0
TIMINGS = ["--lease-duration", str(LEASE_SECONDS), "--renew-deadline", "3", "--retry-period", "0.5"]
LOST_LEASE_EXIT_CODE = 1


def identity(operator: Operator) -> str:
    def starting() -> str | None:
        for line in operator.log_path.read_text(errors="replace").splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict) and event.get("event") == "starting" and event.get("identity"):
                return str(event["identity"])
        return None
    return wait_for(starting, 30, f"the identity in {operator.log_path}")


def writes_started_after(operator: Operator, moment: datetime) -> list[str]:
    """Reconciles that changed something (created, deleted or wrote status) and began after `moment`.

    One that was in flight when the process was frozen may finish after it wakes: its writes carry
    preconditions (names, UIDs, the resourceVersion) that make a stale one fail, not do harm."""
    late = []
    for line in operator.log_path.read_text(errors="replace").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not (isinstance(event, dict) and event.get("event") == "reconciled" and event.get("timestamp")):
            continue
        ended = datetime.fromisoformat(event["timestamp"].replace("Z", "+00:00"))
        if ended - timedelta(milliseconds=float(event.get("duration_ms") or 0)) > moment:
            late.append(line)
    return late


def holder(api: Kube, namespace: str) -> str | None:
    try:
        lease = api.get(resource_path("coordination.k8s.io", "v1", "leases", namespace, LEASE))
    except ApiError as error:
        if error.not_found:
            return None
        raise
    return (lease.get("spec") or {}).get("holderIdentity")


def test_leader_taken_out_under_load_hands_over_without_duplicate_pods(
        scale: Scale, rng: random.Random, operators: Callable[..., Operator], tfjobs_no_operator: TfJobs,
        api: Kube, pod_watch: PodWatch, job_watch: JobWatch, chaos_results: Callable[..., None]) -> None:
    tfjobs = tfjobs_no_operator
    namespace = tfjobs.namespace
    args = ["--namespace", namespace, "--leader-elect", "--leader-election-namespace", namespace, *TIMINGS]
    running = {identity(op): op for op in (operators(args), operators(args))}
    wait_for(lambda: holder(api, namespace) in running, 30, "a leader to be elected")

    jobs = mixed_jobs(rng, scale.failover_jobs, "f", 8.0, 8.0 + 6.0 * scale.failovers)
    window = 3.0 + 6.0 * scale.failovers
    actions: list[tuple[float, str, Any]] = []
    for job in jobs:
        at = rng.uniform(0, window * 0.6)
        actions.append((at, "create", job))
        if job.scale_to is not None:
            actions.append((at + job.scale_after, "scale", job))
    actions += [(window * (i + rng.uniform(0.3, 0.9)) / scale.failovers, "failover", i) for i in range(scale.failovers)]
    actions.sort(key=lambda action: action[0])
    print("schedule:", [(round(at, 1), what, getattr(x, "name", x)) for at, what, x in actions])

    takeovers: list[float] = []
    zombies: list[Operator] = []
    start = time.monotonic()
    for at, what, subject in actions:
        threading.Event().wait(max(0.0, start + at - time.monotonic()))  # the planned moment of the action
        if what == "create":
            subject.create(tfjobs)
        elif what == "scale":
            tfjobs.patch(subject.name, {"worker": {"replicas": subject.scale_to}})
        else:
            leader_id = wait_for(lambda: holder(api, namespace) in running and holder(api, namespace), 30,
                                 "a live leader")
            leader = running.pop(leader_id)
            assert leader.process is not None
            freeze = subject % 2 == 1
            os.kill(leader.process.pid, signal.SIGSTOP if freeze else signal.SIGKILL)
            taken_out = time.monotonic()
            if freeze:
                zombies.append(leader)
            new = operators(args)
            running[identity(new)] = new
            wait_for(lambda: holder(api, namespace) in running, 3 * LEASE_SECONDS + 10,
                     "a standby to take the Lease over")
            takeovers.append(time.monotonic() - taken_out)
            for zombie in zombies:  # wakes up after losing the Lease: it must exit, not reconcile
                assert zombie.process is not None
                woken = datetime.now(UTC)
                os.kill(zombie.process.pid, signal.SIGCONT)
                zombie.process.wait(timeout=15)
                assert zombie.process.returncode == LOST_LEASE_EXIT_CODE, zombie.tail()
                late = writes_started_after(zombie, woken)
                assert not late, f"the deposed leader started reconciling after waking up: {late}"
            zombies.clear()

    until_empty(lambda: unfinished(tfjobs, jobs, job_watch), 60 + 3 * len(jobs), "every job to reach a terminal state")
    wait_for(lambda: not live_pods_of_finished_jobs(pod_watch, jobs), 30, "finished jobs to keep no live pods")
    problems = outcome_problems(tfjobs, jobs, pod_watch, job_watch)
    assert not problems, "\n".join(problems)
    for job in jobs:
        if not job.deleted_by_ttl:
            tfjobs.delete(job.name)
    wait_no_leftovers(api, namespace, 90)
    chaos_results(fault="leader failover", failovers=scale.failovers, jobs=len(jobs),
                  takeover_s=[round(t, 1) for t in takeovers], duplicates=len(pod_watch.duplicates), lost_jobs=0)
