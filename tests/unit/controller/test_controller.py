"""Controller wiring without a cluster: Kueue detection and the event → job key mapping."""

from __future__ import annotations

from typing import Any
from unittest.mock import Mock

import pytest
from pytest_mock import MockerFixture

from controller.controller import Controller
from controller.kube import Kube


@pytest.fixture
def kube(mocker: MockerFixture) -> Mock:
    client = mocker.Mock(spec=Kube)
    client.has_api.return_value = False
    return client


def pod(name: str, owner_uid: str, kind: str = "TensorFlowJob", owner: str = "j") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "uid": "p-" + name, "ownerReferences": [
        {"apiVersion": "kubeflow.org/v1", "kind": kind, "name": owner, "uid": owner_uid, "controller": True}]}}


def drain(controller: Controller) -> list[str]:
    keys = []
    while len(controller.queue):
        key, _ = controller.queue.get()
        keys.append(key)
        controller.queue.done(key)
    return keys


def test_kueue_informers_exist_only_when_its_api_is_served(kube: Mock) -> None:
    assert Controller(kube).workloads is None
    kube.has_api.return_value = True
    assert Controller(kube).workloads is not None
    assert Controller(kube, use_kueue=False).workloads is None


def test_pod_event_enqueues_its_controlling_job(kube: Mock) -> None:
    controller = Controller(kube)
    controller._pod_added(pod("j-worker-0", "uid-1"))
    assert drain(controller) == ["ns/j"]


def test_pod_of_an_earlier_job_with_the_same_name_is_ignored(kube: Mock) -> None:
    controller = Controller(kube)
    controller.jobs.store.add({"apiVersion": "kubeflow.org/v1", "kind": "TensorFlowJob",
                               "metadata": {"name": "j", "namespace": "ns", "uid": "uid-new", "resourceVersion": "1"}})
    drain(controller)
    controller._pod_added(pod("j-worker-0", "uid-old"))
    assert drain(controller) == []


def test_pod_owned_by_another_kind_is_ignored(kube: Mock) -> None:
    controller = Controller(kube)
    controller._child_deleted(pod("x", "uid-1", kind="Job"))
    assert drain(controller) == []


def test_pod_creation_observed_lowers_the_expectation(kube: Mock) -> None:
    controller = Controller(kube)
    controller.expectations.expect_creations("ns/j", ["j-worker-0"])
    controller._pod_added(pod("j-worker-0", "uid-1"))
    assert controller.expectations.satisfied("ns/j")


def test_node_turning_not_ready_enqueues_jobs_with_pods_there(kube: Mock) -> None:
    controller = Controller(kube)
    on_node = pod("j-worker-0", "uid-1")
    on_node["spec"] = {"nodeName": "n1"}
    controller.pods.store.add(on_node)
    ready = {"metadata": {"name": "n1"}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    not_ready = {"metadata": {"name": "n1"}, "status": {"conditions": [{"type": "Ready", "status": "False"}]}}
    controller._node_updated(ready, not_ready)
    assert drain(controller) == ["ns/j"]
