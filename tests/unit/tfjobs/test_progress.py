"""Unit tests of `tfjobs.progress`: the one-line progress of a job, from plain dicts."""

from __future__ import annotations

from tests.support.jobs import make_job, pods_for
from tfjobs.progress import RoleProgress, progress, render


def job_in(state: str, **roles: int) -> dict:
    job = make_job(**roles)
    job["status"] = {"state": state, "restartCount": 2}
    return job


def test_pods_are_counted_per_role_by_phase() -> None:
    job = job_in("Running", chief=1, worker=3)
    pods = pods_for(job)
    pods[1]["status"] = {"phase": "Pending"}
    pods[2]["status"] = {"phase": "Succeeded"}
    pods[3]["metadata"]["deletionTimestamp"] = "2030-01-01T00:00:00Z"  # going: not counted

    p = progress(job, pods, 12.0)

    assert p.roles == (RoleProgress("chief", 1, running=1), RoleProgress("worker", 3, pending=1, succeeded=1))
    assert (p.state, p.restarts, p.elapsed) == ("Running", 2, 12.0)


def test_the_line_shows_state_pods_per_role_restarts_and_time() -> None:
    job = job_in("Running", chief=1, worker=2)

    line = render(progress(job, pods_for(job), 65.0))

    assert line == "j  Running  chief 1/1  worker 2/2 running  restarts 2  1m05s"


def test_finished_pods_are_shown_beside_the_running_ones() -> None:
    job = job_in("Restarting", worker=2)
    pods = pods_for(job)
    pods[0]["status"] = {"phase": "Failed"}

    assert "worker 1/2 (1 failed)" in render(progress(job, pods, 0))


def test_progress_is_the_same_when_only_the_time_moved() -> None:
    job = job_in("Running", worker=1)
    pods = pods_for(job)

    assert progress(job, pods, 1.0).same_as(progress(job, pods, 9.0))
    assert not progress(job, pods, 1.0).same_as(progress(job_in("Succeeded", worker=1), pods, 1.0))
