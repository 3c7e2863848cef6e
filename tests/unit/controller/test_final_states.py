"""Final states stay final: a Succeeded or Failed job never gets a pod again -- not when its pods are
gone, its spec is edited or resumed, and not when the write that marks it finished fails after its
pods were deleted (the status is written first)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from unittest.mock import Mock

import pytest
from pytest_mock import MockerFixture

from controller.job.kinds import TENSORFLOWJOB
from controller.job.plan import PlanInputs, plan_job
from controller.reconciler import Reconciler, RequeueError
from kube import ApiError
from kube.clock import FakeClock
from tests.support.caches import FakeCaches
from tests.support.jobs import pods_for, role, tfjob
from tests.support.mock_kube import status_patching_kube
from tfjob_api.defaults import apply_defaults

NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)


def make_job(**spec: Any) -> dict[str, Any]:
    return tfjob("j", {"chief": role(1), "worker": role(2), **spec}, namespace="ns", uid="job-uid",
                 resourceVersion="10", generation=1)


def finished(state: str, **spec: Any) -> dict[str, Any]:
    job = apply_defaults(make_job(**spec))
    job["status"] = {"conditions": [{"type": state, "status": "True", "reason": "Earlier", "message": "",
                                     "lastTransitionTime": "2026-11-29T11:00:00Z"}],
                     "completionTime": "2026-11-29T11:00:00Z", "restartCount": 0}
    return job


@pytest.mark.parametrize("state", ["Succeeded", "Failed"])
@pytest.mark.parametrize("edit", [{}, {"suspend": False}, {"worker": role(5)}, {"cleanPodPolicy": "All"},
                                  {"backoffLimit": 100}])
def test_a_finished_job_without_pods_plans_none_whatever_its_spec_says(state: str, edit: dict[str, Any]) -> None:
    job = finished(state, **edit)
    plan = plan_job(PlanInputs(job, [], None, now=NOW, kind=TENSORFLOWJOB))
    assert plan.create_pods == [] and plan.create_service is None


@pytest.fixture
def kube(mocker: MockerFixture) -> Mock:
    return status_patching_kube(mocker, make_job)


def succeeding_chief(job: dict[str, Any]) -> list[dict[str, Any]]:
    pods = pods_for(apply_defaults(job), node=None)
    pods[0]["status"] = {"phase": "Succeeded"}
    return pods


def test_success_is_written_before_the_clean_pod_policy_deletes_the_chief(kube: Mock, mocker: MockerFixture) -> None:
    job = make_job(cleanPodPolicy="All")
    order = mocker.Mock()
    order.attach_mock(kube.patch, "patch")
    order.attach_mock(kube.delete, "delete")
    Reconciler(kube, FakeCaches(job, succeeding_chief(job)), clock=FakeClock(wall=NOW)).reconcile("ns/j")
    calls = [name for name, _, _ in order.mock_calls]
    assert calls[0] == "patch" and "delete" in calls
    assert any(c["type"] == "Succeeded" for c in order.mock_calls[0].args[1]["status"]["conditions"])


def test_a_refused_write_of_the_success_deletes_no_pod(kube: Mock) -> None:
    job = make_job(cleanPodPolicy="All")
    kube.patch.side_effect = ApiError(500, "InternalError", "etcd is away")
    with pytest.raises(RequeueError):
        Reconciler(kube, FakeCaches(job, succeeding_chief(job)), clock=FakeClock(wall=NOW)).reconcile("ns/j")
    kube.delete.assert_not_called()
