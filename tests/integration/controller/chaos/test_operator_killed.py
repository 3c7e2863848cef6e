"""Fault 1: the operator is SIGKILLed at random moments while jobs are created, scaled and
finishing, and restarted each time.

Nothing may be lost or doubled: every job reaches its right terminal state, the raw-watch detector
sees no moment with two live pods for one job/role/index, no pod is created twice where nothing
failed, a retried job's restartCount matches the failures that happened, and once the jobs are
deleted no pod or Service is left behind.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.support.polling import until_empty, wait_for

from ..conftest import Operator, TfJobs
from .conftest import Scale, wait_no_leftovers
from .watching import JobWatch, PodWatch
from .workload import live_pods_of_finished_jobs, mixed_jobs, outcome_problems, unfinished

pytestmark = pytest.mark.usefixtures("no_session_operator")


def _pause_until(moment: float) -> None:
    """Wait for a moment of the injection schedule (a planned fault time, not a synchronisation)."""
    threading.Event().wait(max(0.0, moment - time.monotonic()))


def test_jobs_survive_operator_sigkills_without_duplicates_or_orphans(
        scale: Scale, rng: random.Random, operators: Callable[..., Operator], tfjobs_no_operator: TfJobs,
        pod_watch: PodWatch, job_watch: JobWatch, chaos_results: Callable[..., None]) -> None:
    tfjobs = tfjobs_no_operator
    extra = ["--namespace", tfjobs.namespace]
    jobs = mixed_jobs(rng, scale.kill_jobs, "k", 6.0, 6.0 + 2.0 * scale.kills)
    window = 4.0 + 3.0 * scale.kills  # jobs are created and the operator killed within this many seconds
    start = time.monotonic()
    actions: list[tuple[float, str, Any]] = []
    for job in jobs:
        at = rng.uniform(0, window * 0.7)
        actions.append((at, "create", job))
        if job.scale_to is not None:
            actions.append((at + job.scale_after, "scale", job))
    actions += [(rng.uniform(1.0, window), "kill", None) for _ in range(scale.kills)]
    actions.sort(key=lambda action: action[0])
    print("schedule:", [(round(at, 1), what, getattr(job, "name", "")) for at, what, job in actions])

    operator = operators(extra)
    downtimes: list[float] = []
    for at, what, job in actions:
        _pause_until(start + at)
        if what == "create":
            job.create(tfjobs)
        elif what == "scale":
            tfjobs.patch(job.name, {"worker": {"replicas": job.scale_to}})
        else:
            operator.kill()
            killed = time.monotonic()
            threading.Event().wait(rng.uniform(0.0, 1.5))  # the operator stays down a random while
            operator = operators(extra)
            downtimes.append(time.monotonic() - killed)
    last_restart = time.monotonic()

    until_empty(lambda: unfinished(tfjobs, jobs, job_watch), 60 + 4 * scale.kill_jobs,
                "every job to reach a terminal state")
    converged = time.monotonic() - last_restart
    wait_for(lambda: not live_pods_of_finished_jobs(pod_watch, jobs), 30,
             "finished jobs to keep no Pending or Running pods")

    problems = outcome_problems(tfjobs, jobs, pod_watch, job_watch)
    assert not problems, "\n".join(problems)
    assert operator.process is not None and operator.process.poll() is None

    for job in jobs:
        if not job.deleted_by_ttl:
            tfjobs.delete(job.name)
    collected = wait_no_leftovers(tfjobs.api, tfjobs.namespace, 90)
    assert not pod_watch.duplicates
    chaos_results(fault="operator SIGKILL", kills=scale.kills, jobs=len(jobs),
                  down_s=f"{min(downtimes):.1f}-{max(downtimes):.1f}",
                  converged_after_last_restart_s=round(converged, 1), duplicates=len(pod_watch.duplicates),
                  lost_jobs=0, orphans_collected_s=round(collected, 1), pods_seen=len(pod_watch.pods()))

