"""A manager dispatching to two workers with quota for one job each: two jobs land on different
workers, and a job whose worker goes away (its API server stopped) is dispatched again by Kueue to
the other worker and succeeds there."""

from __future__ import annotations

from typing import Any

from controller.kueue import multikueue as mkq
from controller.kueue import protocol as kq
from tests.integration.controller.multikueue.test_dispatch import condition, submit_tensorflowjob
from tests.support.polling import wait_for

APISERVER = "kube-apiserver"


def placement(mk: Any, path: str) -> str:
    """The worker the manager's Workload of the job says it runs on ('' while it is not placed)."""
    job = mk.manager.get(path)
    if job is None:
        return ""
    workloads = mk.manager.api.list(kq.workload_path(mk.namespace), labelSelector=kq.job_uid_selector(job))["items"]
    return mkq.placement(workloads[0]) if workloads else ""


def test_two_jobs_land_on_different_workers(mk2: Any) -> None:
    first = submit_tensorflowjob(mk2, "first", exit_after=None)
    wait_for(lambda: condition(mk2.manager.get(first), "Running"), 120, "the first job to run")
    second = submit_tensorflowjob(mk2, "second", exit_after=None)
    wait_for(lambda: condition(mk2.manager.get(second), "Running"), 120, "the second job to run")
    assert {placement(mk2, first), placement(mk2, second)} == {"worker", "worker-2"}
    for path in (first, second):
        assert mk2.side(placement(mk2, path)).get(path) is not None
    assert mk2.manager.pods(mk2.namespace) == []


def test_a_lost_workers_job_is_dispatched_again_and_succeeds_on_the_other(mk2: Any) -> None:
    path = submit_tensorflowjob(mk2, "moved", exit_after="40s")
    wait_for(lambda: condition(mk2.manager.get(path), "Running"), 120, "the job to run")
    lost = mk2.side(placement(mk2, path))
    other = next(side for side in mk2.workers if side is not lost)
    lost.cluster.stop_component(APISERVER)
    try:
        wait_for(lambda: other.get(path) is not None, 240, f"the job dispatched again, to {other.name}")
        wait_for(lambda: condition(mk2.manager.get(path), "Succeeded"), 180, "the job to succeed on the other worker")
        assert placement(mk2, path) == other.name
        assert mk2.manager.pods(mk2.namespace) == []
    finally:
        lost.cluster.start_component(APISERVER)
