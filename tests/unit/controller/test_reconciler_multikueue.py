"""A job MultiKueue dispatched to a worker, on its manager: the reconciler writes nothing for it
but its Workload -- no pod, Service, status or TTL deletion -- with the client mocked."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from unittest.mock import Mock

import pytest
from pytest_mock import MockerFixture

from controller.kueue import protocol as kueue
from controller.kueue.multikueue import MultiKueueGate
from controller.reconciler import Reconciler
from kube import Kube
from kube.clock import FakeClock
from tests.support.caches import FakeCaches
from tests.support.jobs import container, role, tfjob

NOW = datetime(2026, 12, 3, 12, 0, 0, tzinfo=UTC)


def dispatched_job(**status: Any) -> dict[str, Any]:
    job = tfjob("j", {"worker": role(2, containers=[container(requests={"cpu": "1"})])}, namespace="ns",
                uid="job-uid", resourceVersion="10", generation=1, labels={kueue.QUEUE_LABEL: "lq"})
    job["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    job["spec"]["ttlSecondsAfterFinished"] = 0
    return {**job, "status": status}


@pytest.fixture
def kube(mocker: MockerFixture) -> Mock:
    return mocker.Mock(spec=Kube)


def gate(kube: Mock) -> MultiKueueGate:
    return MultiKueueGate(kube, lambda _uid: None, lambda _name: None, FakeClock(wall=NOW), lambda _ns, _name: None)


def test_a_dispatched_job_gets_its_workload_and_no_pod_service_or_status(kube: Mock) -> None:
    Reconciler(kube, FakeCaches(dispatched_job()), clock=FakeClock(wall=NOW), kueue_gate=gate(kube)).reconcile("ns/j")
    [create] = kube.create.call_args_list
    assert create.args[0] == "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads"
    kube.patch.assert_not_called()
    kube.delete.assert_not_called()


def test_a_dispatched_job_finished_on_its_worker_is_neither_written_nor_deleted_by_its_ttl(kube: Mock) -> None:
    finished = dispatched_job(conditions=[{"type": "Succeeded", "status": "True", "reason": "JobSucceeded",
                                           "lastTransitionTime": "2026-12-03T11:00:00Z"}],
                              completionTime="2026-12-03T11:00:00Z")
    Reconciler(kube, FakeCaches(finished), clock=FakeClock(wall=NOW), kueue_gate=gate(kube)).reconcile("ns/j")
    kube.create.assert_not_called()
    kube.patch.assert_not_called()
    kube.delete.assert_not_called()


def test_without_kueue_a_dispatched_job_is_left_entirely_alone(kube: Mock) -> None:
    Reconciler(kube, FakeCaches(dispatched_job()), clock=FakeClock(wall=NOW)).reconcile("ns/j")
    assert kube.method_calls == []
