"""How the reconciler ends pods when the cluster takes a job's pods back: all at once, each with its grace
period, so TensorFlow can save on SIGTERM (the planner's rules are in job/test_disruptions.py)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any
from unittest.mock import Mock

import pytest
from pytest_mock import MockerFixture

from controller.job.builders import build_service
from controller.job.kinds import TENSORFLOWJOB
from controller.reconciler import Reconciler
from kube.clock import FakeClock
from tests.support.caches import FakeCaches
from tests.support.jobs import pods_for, role, tfjob
from tests.support.mock_kube import status_patching_kube
from tfjob_api.defaults import apply_defaults
from tfjob_api.timeutil import format_time

NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)
WORKERS = 6


def make_job(**spec: Any) -> dict[str, Any]:
    return tfjob("j", {"worker": role(WORKERS), **spec}, namespace="ns", uid="job-uid", resourceVersion="10",
                 generation=1)


@pytest.fixture
def kube(mocker: MockerFixture) -> Mock:
    return status_patching_kube(mocker, make_job)


def deletes_all_at_once(kube: Mock, count: int) -> list[dict[str, Any]]:
    """Make `kube.delete` of a pod wait until `count` of them are in flight together (a BrokenBarrierError,
    which fails the reconcile, if they come one by one); return the calls' keywords."""
    together = threading.Barrier(count, timeout=10)
    seen: list[dict[str, Any]] = []

    def delete(path: str, **options: Any) -> None:
        seen.append({"path": path, **options})
        if "/pods/" in path:
            together.wait()

    kube.delete.side_effect = delete
    return seen


def reconcile(kube: Mock, job: dict[str, Any], pods: list[dict[str, Any]]) -> None:
    service = build_service(apply_defaults(job), TENSORFLOWJOB)
    service["metadata"]["uid"] = "svc-uid"
    Reconciler(kube, FakeCaches(job, pods, service), clock=FakeClock(wall=NOW)).reconcile("ns/j")


def test_a_suspension_deletes_every_pod_at_once_with_its_grace_period(kube: Mock) -> None:
    job = make_job(suspend=True)
    seen = deletes_all_at_once(kube, WORKERS)
    reconcile(kube, job, pods_for(apply_defaults(job)))
    pod_deletes = [call for call in seen if "/pods/" in call["path"]]
    assert len(pod_deletes) == WORKERS
    assert all(call["grace_seconds"] is None for call in pod_deletes)  # the pod's terminationGracePeriodSeconds


def test_an_evicted_worker_restarts_its_peers_at_once_with_their_grace_period(kube: Mock) -> None:
    job = make_job(restartScope="All")
    pods = pods_for(apply_defaults(job), creationTimestamp=format_time(NOW - timedelta(minutes=5)))
    pods[0]["metadata"].update(deletionTimestamp=format_time(NOW + timedelta(seconds=29)),
                               deletionGracePeriodSeconds=30)
    seen = deletes_all_at_once(kube, WORKERS - 1)
    reconcile(kube, job, pods)
    assert sorted(call["path"].rsplit("/", 1)[1] for call in seen) == [f"j-worker-{i}" for i in range(1, WORKERS)]
    assert all(call["grace_seconds"] is None for call in seen)
    assert kube.patch.call_args.args[1]["status"]["restartCount"] == 0
