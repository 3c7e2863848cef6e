"""A new job's status writes and reconciles, through the event handlers and the reconciler together
(the API client mocked, the queue on a fake clock): when its pods start soon after they arrive,
"Created" and "Running" go out in one status write and the job costs two reconciles; when they do
not, "Created" is written once a short wait ends; and the pods' starts cost one reconcile, that of
the last one, unless the job reads its progress from a pod."""

from __future__ import annotations

import copy
import time
from typing import Any
from unittest.mock import Mock

import pytest
from pytest_mock import MockerFixture

from controller.controller import Controller
from controller.options import ControllerOptions
from kube import Kube
from kube.clock import FakeClock
from tests.support.jobs import role, tfjob
from tests.support.queues import drain

OPTIONS = ControllerOptions(kueue="off", kubeflow_tfjob="off")


def a_job() -> dict[str, Any]:
    return tfjob("j", {"ps": role(1), "worker": role(4)}, namespace="ns", uid="job-uid", resourceVersion="10")


@pytest.fixture
def kube(mocker: MockerFixture) -> Mock:
    client = mocker.Mock(spec=Kube)
    client.has_api.return_value = False
    client.create.side_effect = lambda path, body, **_: body
    client.patch.side_effect = lambda path, body, **_: {
        **a_job(), "status": body["status"], "metadata": {**a_job()["metadata"], "resourceVersion": "11"}}
    return client


def due(controller: Controller, clock: FakeClock, seconds: float) -> list[str]:
    """Step the fake clock, let the delaying queue hand over what came due (bounded), drain it."""
    clock.step(seconds)
    deadline = time.monotonic() + 5
    while controller.queue.waiting_due() and time.monotonic() < deadline:
        time.sleep(0.001)
    return drain(controller)


def created_job(kube: Mock, clock: FakeClock) -> tuple[Controller, list[dict[str, Any]]]:
    """The job's first reconcile has run, and its pods and Service arrived in the cache (ADDED),
    Pending and bound to no node: the controller and the cached pods."""
    controller = Controller(kube, OPTIONS, clock=clock)
    controller.caches.jobs.store.add(a_job())
    controller.handlers.job_added(a_job())
    assert drain(controller) == ["ns/j"]
    controller.process("ns/j")
    assert not kube.patch.called  # the status waits for the reconcile the pods' events bring
    pods = []
    for call in kube.create.call_args_list:
        body = copy.deepcopy(call.args[1])
        body["metadata"].update(uid="uid-" + body["metadata"]["name"], resourceVersion="20")
        if body["kind"] == "Service":
            controller.caches.services.store.add(body)
            controller.handlers.child_created(body)
            continue
        body["status"] = {"phase": "Pending"}
        controller.caches.pods.store.add(body)
        controller.handlers.pod_added(controller.caches.pods.store.get_object(body) or body)
        pods.append(body)
    return controller, pods


def start(controller: Controller, pod: dict[str, Any]) -> None:
    old = controller.caches.pods.store.get_object(pod)
    assert old is not None
    new = {**old, "metadata": {**old["metadata"], "resourceVersion": "30"}, "status": {"phase": "Running"}}
    controller.caches.pods.store.add(new)
    controller.handlers.pod_updated(old, controller.caches.pods.store.get_object(new) or new)


def written_states(kube: Mock) -> list[list[str]]:
    return [[c["type"] for c in call.args[1]["status"]["conditions"] if c["status"] == "True"]
            for call in kube.patch.call_args_list]


def test_pods_starting_soon_after_they_arrive_get_one_status_write_saying_created_and_running(kube: Mock) -> None:
    clock = FakeClock()
    controller, pods = created_job(kube, clock)
    assert due(controller, clock, 0.5) == []  # their arrival alone writes nothing yet
    for pod in pods[:-1]:
        start(controller, pod)
        assert due(controller, clock, 0.2) == []  # a sibling is still Pending: the job cannot be Running
    start(controller, pods[-1])
    assert due(controller, clock, 0.5) == ["ns/j"]
    controller.process("ns/j")
    assert written_states(kube) == [["Created", "Running"]]
    assert due(controller, clock, 10) == []  # nothing else is left waiting: two reconciles in all


def test_pods_that_do_not_start_get_created_written_when_the_short_wait_ends(kube: Mock) -> None:
    clock = FakeClock()
    controller, pods = created_job(kube, clock)
    assert due(controller, clock, OPTIONS.first_status_wait) == ["ns/j"]
    controller.process("ns/j")
    assert written_states(kube) == [["Created"]]
    body = kube.patch.call_args.args[1]["status"]
    assert body["replicaStatuses"]["worker"]["active"] == 4 and body["replicaStatuses"]["ps"]["active"] == 1
    for pod in pods:
        start(controller, pod)
    assert due(controller, clock, 0.5) == ["ns/j"]  # every start in one reconcile
    controller.caches.jobs.store.add({**a_job(), "status": body, "metadata": {**a_job()["metadata"],
                                                                                "resourceVersion": "11"}})
    controller.process("ns/j")
    assert written_states(kube) == [["Created"], ["Created", "Running"]]


def test_pods_starting_while_a_sibling_is_pending_cost_no_reconcile_until_the_last_one_starts(kube: Mock) -> None:
    clock = FakeClock()
    controller, pods = created_job(kube, clock)
    assert due(controller, clock, OPTIONS.first_status_wait) == ["ns/j"]
    for pod in pods[:-1]:
        start(controller, pod)
    assert due(controller, clock, 60) == []
    start(controller, pods[-1])
    assert due(controller, clock, 0.5) == ["ns/j"]


def test_a_job_reading_its_progress_from_a_pod_is_reconciled_when_any_of_its_pods_starts(kube: Mock) -> None:
    clock = FakeClock()
    controller, pods = created_job(kube, clock)
    assert due(controller, clock, OPTIONS.first_status_wait) == ["ns/j"]
    job = a_job()
    job["spec"]["progress"] = {"port": 8090}
    controller.caches.jobs.store.add(job)
    start(controller, pods[0])
    assert due(controller, clock, 0.5) == ["ns/j"]
