"""Serving Kubeflow's TFJob kind beside TensorFlowJob: the TFJob informer and when it exists, keys
that carry the kind, owned pods mapped by kind and UID, and `runPolicy.managedBy` honoured."""

from __future__ import annotations

from typing import Any
from unittest.mock import Mock

import pytest
from pytest_mock import MockerFixture

from controller.caches import tfjob_crd_is_ours
from controller.controller import Controller
from controller.job.kinds import TFJOB
from controller.options import ControllerOptions
from kube import ApiError, Kube
from tests.support.jobs import role, tfjob
from tests.support.kubeflow import replica, tfjob_manifest
from tests.support.queues import drain

TFJOB_DISCOVERY = {"resources": [
    {"name": "tfjobs", "kind": "TFJob", "categories": ["kubeflow", "tfjob-operator"]},
    {"name": "tensorflowjobs", "kind": "TensorFlowJob", "categories": ["all", "kubeflow"]}]}


@pytest.fixture
def kube(mocker: MockerFixture) -> Mock:
    client = mocker.Mock(spec=Kube)
    client.has_api.side_effect = lambda group, version, kind=None, crds=True: kind == "TFJob"
    client.get.return_value = TFJOB_DISCOVERY
    return client


def a_tfjob(uid: str = "tf-uid", **run_policy: Any) -> dict[str, Any]:
    return tfjob_manifest("j", {"Worker": replica(1)}, metadata={"namespace": "ns", "uid": uid,
                                                                  "resourceVersion": "1"}, **run_policy)


def owned_pod(kind: str, uid: str) -> dict[str, Any]:
    return {"metadata": {"name": "j-worker-0", "namespace": "ns", "uid": "p1", "ownerReferences": [
        {"apiVersion": "kubeflow.org/v1", "kind": kind, "name": "j", "uid": uid, "controller": True}]}}


def test_tfjobs_are_served_when_this_projects_tfjob_crd_is(kube: Mock) -> None:
    assert Controller(kube).caches.tfjobs is not None


def test_tfjobs_are_not_served_under_kubeflows_own_crd(kube: Mock) -> None:
    kube.get.return_value = {"resources": [{"name": "tfjobs", "kind": "TFJob"}]}
    assert not tfjob_crd_is_ours(kube)
    assert Controller(kube).caches.tfjobs is None


def test_tfjobs_are_not_served_while_their_group_is_not(kube: Mock) -> None:
    kube.get.side_effect = ApiError(404, "NotFound")
    assert Controller(kube).caches.tfjobs is None


def test_a_discovery_failure_at_start_is_raised_for_the_process_to_report(kube: Mock) -> None:
    kube.get.side_effect = ApiError(503, "unavailable")
    with pytest.raises(ApiError):
        Controller(kube)


# ---- auto follows the CRD, without a restart ------------------------------------------------------


def test_auto_starts_serving_tfjobs_when_this_projects_crd_appears(kube: Mock) -> None:
    kube.get.side_effect = ApiError(404, "NotFound")
    controller = Controller(kube)
    kube.get.side_effect = None
    assert controller.caches.recheck_tfjobs()
    informer = controller.caches.tfjobs
    assert informer is not None and "tfjobs" in controller.caches.factory.informers
    informer.on_event("ADDED", a_tfjob())  # the new informer's events reach the handlers
    assert drain(controller) == ["TFJob:ns/j"]
    assert controller.caches.get_job("TFJob:ns/j") is not None


def test_auto_starts_serving_tfjobs_when_this_projects_crd_replaces_kubeflows(kube: Mock) -> None:
    kube.get.return_value = {"resources": [{"name": "tfjobs", "kind": "TFJob", "categories": ["kubeflow"]}]}
    controller = Controller(kube)
    assert controller.caches.tfjobs is None
    kube.get.return_value = TFJOB_DISCOVERY
    assert controller.caches.recheck_tfjobs()
    assert controller.caches.serves_kind(TFJOB)


def test_auto_stops_serving_tfjobs_when_the_crd_goes(kube: Mock) -> None:
    controller = Controller(kube)
    controller.caches.tfjobs.store.add(a_tfjob())
    kube.get.side_effect = ApiError(404, "NotFound")
    assert controller.caches.recheck_tfjobs()
    assert controller.caches.tfjobs is None and "tfjobs" not in controller.caches.factory.informers
    assert not controller.caches.serves_kind(TFJOB)
    assert controller.caches.get_job("TFJob:ns/j") is None
    controller.handlers.child_deleted(owned_pod("TFJob", "tf-uid"))  # its pods are left alone
    assert drain(controller) == []


def test_a_failed_discovery_read_leaves_tfjobs_served_as_before(kube: Mock) -> None:
    controller = Controller(kube)
    kube.get.side_effect = ApiError(503, "unavailable")
    assert not controller.caches.recheck_tfjobs()
    assert controller.caches.tfjobs is not None


def test_tfjobs_served_again_after_the_crd_came_back_get_a_fresh_informer(kube: Mock) -> None:
    controller = Controller(kube)
    first = controller.caches.tfjobs
    kube.get.side_effect = ApiError(404, "NotFound")
    controller.caches.recheck_tfjobs()
    kube.get.side_effect = None
    controller.caches.recheck_tfjobs()
    assert controller.caches.tfjobs is not None and controller.caches.tfjobs is not first


@pytest.mark.parametrize("switch", ["on", "off"])
def test_with_tfjobs_on_or_off_discovery_is_never_read_again(kube: Mock, switch: str) -> None:
    controller = Controller(kube, ControllerOptions(kubeflow_tfjob=switch, kueue="off"))
    served = controller.caches.tfjobs is not None
    kube.get.reset_mock()
    assert not controller.caches.recheck_tfjobs()
    assert not kube.get.called
    assert (controller.caches.tfjobs is not None) == served == (switch == "on")


def test_with_tfjobs_off_no_tfjob_is_read_or_written(kube: Mock) -> None:
    controller = Controller(kube, ControllerOptions(kubeflow_tfjob="off", kueue="off"))
    assert controller.caches.tfjobs is None
    assert "tfjobs" not in controller.caches.factory.informers
    controller.handlers.pod_added(owned_pod("TFJob", "tf-uid"))
    assert controller.caches.get_job("TFJob:ns/j") is None
    assert controller.reconciler.reconcile("TFJob:ns/j").created == []
    assert not kube.create.called and not kube.patch.called and not kube.delete.called
    assert drain(controller) == []


def test_a_tfjob_is_queued_under_a_key_that_names_its_kind(kube: Mock) -> None:
    controller = Controller(kube)
    controller.handlers.tfjob_added(a_tfjob())
    assert drain(controller) == ["TFJob:ns/j"]


def test_a_pod_maps_to_the_tfjob_or_tensorflowjob_that_controls_it(kube: Mock) -> None:
    controller = Controller(kube)
    controller.caches.tfjobs.store.add(a_tfjob(uid="tf-uid"))
    controller.caches.jobs.store.add(tfjob("j", {"worker": role(1)}, namespace="ns", uid="tfj-uid", resourceVersion="1"))
    controller.handlers.child_deleted(owned_pod("TFJob", "tf-uid"))
    controller.handlers.child_deleted(owned_pod("TensorFlowJob", "tfj-uid"))
    assert drain(controller) == ["TFJob:ns/j", "ns/j"]


def test_a_pod_of_an_earlier_tfjob_of_the_same_name_is_ignored(kube: Mock) -> None:
    controller = Controller(kube)
    controller.caches.tfjobs.store.add(a_tfjob(uid="new-uid"))
    controller.handlers.child_deleted(owned_pod("TFJob", "old-uid"))
    assert drain(controller) == []


def test_a_tfjob_managed_by_kubeflows_operator_is_never_queued_nor_read(kube: Mock) -> None:
    controller = Controller(kube)
    job = a_tfjob(managedBy="kubeflow.org/training-operator")
    controller.caches.tfjobs.store.add(job)
    controller.handlers.tfjob_added(job)
    controller.handlers.tfjob_updated(job, {**job, "metadata": {**job["metadata"], "resourceVersion": "2"}})
    assert drain(controller) == []
    assert controller.caches.get_job("TFJob:ns/j") is None


def test_during_a_hand_over_only_tfjobs_that_name_this_operator_are_served(kube: Mock) -> None:
    controller = Controller(kube, ControllerOptions(kubeflow_tfjob_without_managed_by="leave"))
    unmanaged = a_tfjob()
    ours = {**a_tfjob(managedBy="tensorflowjob.kubeflow.org/tfjob-operator")}
    ours["metadata"] = {**ours["metadata"], "name": "mine"}
    controller.handlers.tfjob_added(unmanaged)
    controller.handlers.tfjob_added(ours)
    assert drain(controller) == ["TFJob:ns/mine"]
