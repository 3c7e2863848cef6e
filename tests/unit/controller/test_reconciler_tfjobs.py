"""One reconciler for both kinds: a TFJob's API calls (its pods, its status as Kubeflow writes it)."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any
from unittest.mock import Mock

import pytest
from pytest_mock import MockerFixture

from controller.events import EventRecorder
from controller.job.builders import build_pods, build_service
from controller.job.kinds import TFJOB
from controller.reconciler import Reconciler
from kube import Kube
from kube.clock import FakeClock
from tests.support.caches import FakeCaches
from tests.support.kubeflow import replica, tfjob_manifest
from tfjob_api.kubeflow_model import to_model

NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)
KEY = "TFJob:ns/j"
STATUS_PATH = "/apis/kubeflow.org/v1/namespaces/ns/tfjobs/j/status"


def a_tfjob(**run_policy: Any) -> dict[str, Any]:
    return tfjob_manifest("j", {"PS": replica(1), "Worker": replica(2)},
                          metadata={"namespace": "ns", "uid": "tf-uid", "resourceVersion": "10", "generation": 1},
                          **run_policy)


def running(job: dict[str, Any]) -> list[dict[str, Any]]:
    pods = build_pods(to_model(job), "", (), TFJOB)
    for index, pod in enumerate(pods):
        pod["metadata"]["uid"] = f"p{index}"
        pod["status"] = {"phase": "Running"}
    return pods


@pytest.fixture
def kube(mocker: MockerFixture) -> Mock:
    client = mocker.Mock(spec=Kube)

    def patch(path: str, body: dict[str, Any], **_: Any) -> dict[str, Any]:
        return {**a_tfjob(), "metadata": {**a_tfjob()["metadata"], "resourceVersion": "11"}, "status": body["status"]}
    client.patch.side_effect = patch
    return client


def test_a_tfjobs_pods_and_service_are_created_owned_by_the_tfjob(kube: Mock) -> None:
    Reconciler(kube, FakeCaches(a_tfjob(), key=KEY), clock=FakeClock(wall=NOW)).reconcile(KEY)
    bodies = [c.args[1] for c in kube.create.call_args_list]
    assert sorted(b["metadata"]["name"] for b in bodies) == ["j", "j-ps-0", "j-worker-0", "j-worker-1"]
    assert {b["metadata"]["ownerReferences"][0]["kind"] for b in bodies} == {"TFJob"}


def test_a_tfjobs_status_is_written_to_its_status_subresource_as_kubeflow_writes_it(kube: Mock) -> None:
    caches = FakeCaches(a_tfjob(), key=KEY)
    caches.pods, caches.service = running(caches.job), build_service(to_model(caches.job), TFJOB)
    Reconciler(kube, caches, clock=FakeClock(wall=NOW)).reconcile(KEY)
    path, body = kube.patch.call_args.args
    assert path == STATUS_PATH
    status = body["status"]
    assert [(c["type"], c["status"], c["reason"]) for c in status["conditions"]] == [
        ("Created", "True", "TFJobCreated"), ("Running", "True", "TFJobRunning")]
    assert {k: v["active"] for k, v in status["replicaStatuses"].items()} == {"PS": 1, "Worker": 2}
    assert "state" not in status


def test_an_unchanged_tfjob_costs_no_status_write(kube: Mock) -> None:
    caches = FakeCaches(a_tfjob(), key=KEY)
    caches.pods, caches.service = running(caches.job), build_service(to_model(caches.job), TFJOB)
    clock = FakeClock(wall=NOW)
    reconciler = Reconciler(kube, caches, clock=clock)
    reconciler.reconcile(KEY)
    caches.job = copy.deepcopy(kube.patch.side_effect(*kube.patch.call_args.args))  # the watch brings what was written
    clock.step(timedelta(seconds=30).total_seconds())
    kube.patch.reset_mock()
    outcome = reconciler.reconcile(KEY)
    assert not kube.patch.called and not outcome.status_written


def test_a_tfjob_with_fields_the_operator_does_not_use_says_so_in_an_event(kube: Mock,
                                                                            mocker: MockerFixture) -> None:
    recorder = mocker.Mock(spec=EventRecorder)
    job = a_tfjob(schedulingPolicy={"minAvailable": 3})
    Reconciler(kube, FakeCaches(job, key=KEY), clock=FakeClock(wall=NOW), recorder=recorder).reconcile(KEY)
    ignored = [c.args for c in recorder.record.call_args_list if c.args[2] == "IgnoredField"]
    assert len(ignored) == 1 and ignored[0][1] == "Warning"
    assert ignored[0][0]["kind"] == "TFJob"


def test_the_ignored_field_event_is_posted_once_although_the_first_status_was_deferred(
        kube: Mock, mocker: MockerFixture) -> None:
    recorder = mocker.Mock(spec=EventRecorder)
    reconciler = Reconciler(kube, FakeCaches(a_tfjob(schedulingPolicy={"minAvailable": 3}), key=KEY),
                            clock=FakeClock(wall=NOW), recorder=recorder)
    assert reconciler.reconcile(KEY).status_deferred  # created the pods; the status waits for the next pass
    reconciler.reconcile(KEY)
    assert sum(1 for c in recorder.record.call_args_list if c.args[2] == "IgnoredField") == 1


def test_an_invalid_tfjob_fails_with_its_own_field_paths(kube: Mock) -> None:
    job = a_tfjob()
    job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["name"] = "trainer"
    Reconciler(kube, FakeCaches(job, key=KEY), clock=FakeClock(wall=NOW)).reconcile(KEY)
    failed = next(c for c in kube.patch.call_args.args[1]["status"]["conditions"] if c["type"] == "Failed")
    assert failed["reason"] == "TFJobFailed"
    assert "spec.tfReplicaSpecs.Worker.template.spec.containers" in failed["message"]
    assert kube.patch.call_args.args[1]["status"]["conditionReasons"]["Failed"] == "InvalidSpec"
