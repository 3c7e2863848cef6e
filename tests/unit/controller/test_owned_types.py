"""An owned type is one declaration and one plan rule: the caches watch it, the handlers route its
events to the owning job, and the reconcile loop creates, repairs and deletes it -- with no edit of
the caches, the handlers or the reconciler (a made-up `Widget`, client mocked). Every type a job
owns -- its pods and Service and its Kueue Workload too -- is such a declaration, watched and routed
as it declares."""

from __future__ import annotations

import copy
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any
from unittest.mock import Mock

import pytest
from pytest_mock import MockerFixture

from controller.companions import Companion
from controller.controller import Controller
from controller.job.builders import owned_metadata
from controller.job.children import ChildSituation, Step
from controller.options import ControllerOptions
from controller.owned import OwnedType, Routing, Writer, declarations
from informers.informer import SharedInformer
from kube.clock import FakeClock
from tests.support.jobs import role, tfjob
from tests.support.mock_kube import mock_kube
from tests.support.queues import drain
from tfjob_api import conditions as cond
from tfjob_api.names import JOB_NAME_LABEL

NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)
WIDGETS = "/apis/example.com/v1/namespaces/ns/widgets"


def widget_spec(job: Any) -> dict[str, Any]:
    return {"workers": job["spec"]["worker"]["replicas"]}


def widget_rule(situation: ChildSituation) -> Step:
    """A widget while the job runs, sized by its workers; none once it is finished or suspended."""
    existing, job = situation.existing, situation.job
    if situation.finished or situation.suspended:
        return Step(delete=existing) if existing is not None else Step()
    if existing is None:
        name = job["metadata"]["name"]
        metadata = owned_metadata(job, f"{name}-widget", {JOB_NAME_LABEL: name}, {}, situation.kind)
        return Step(create={"apiVersion": "example.com/v1", "kind": "Widget", "metadata": metadata,
                            "spec": widget_spec(job)})
    if existing.get("spec") != widget_spec(job):
        return Step(patch=(existing, {"spec": widget_spec(job)}))
    return Step()


WIDGET = OwnedType(Companion("Widget", "example.com", "v1", "widgets", "InvalidWidget"), "widgets",
                   object_name=lambda job_name: f"{job_name}-widget", rule=widget_rule, holds_pods=False)


def make_job() -> dict[str, Any]:
    return tfjob("j", {"worker": role(2)}, namespace="ns", uid="job-uid", resourceVersion="10", generation=1)


@pytest.fixture
def kube(mocker: MockerFixture) -> Mock:
    client = mock_kube(mocker, make_job())
    client.has_api.return_value = False
    return client


@pytest.fixture
def controller(kube: Mock) -> Controller:
    options = ControllerOptions(kueue="off")
    made = Controller(kube, options, clock=FakeClock(wall=NOW), owned=declarations(options, extra=[WIDGET]))
    made.caches.jobs.on_event("ADDED", make_job())
    drain(made)
    return made


def widgets(controller: Controller) -> SharedInformer:
    informer = controller.caches.owned_informer("Widget")
    assert informer is not None
    return informer


def stored_widget(kube: Mock) -> dict[str, Any]:
    """The widget the reconciler created, as the API server would store it."""
    body = next(c.args[1] for c in kube.create.call_args_list if c.args[0] == WIDGETS)
    widget = copy.deepcopy(body)
    widget["metadata"].update(uid="widget-uid", resourceVersion="5")
    return widget


def widget_calls(method: Mock) -> list[Any]:
    return [c for c in method.call_args_list if c.args[0].startswith(WIDGETS)]


def test_a_declared_type_is_watched_by_the_job_name_label(controller: Controller) -> None:
    assert widgets(controller) in controller.caches.informers()


def test_the_loop_creates_a_declared_object_the_job_should_have(controller: Controller, kube: Mock) -> None:
    controller.process("ns/j")
    assert [c.args[1]["metadata"]["name"] for c in widget_calls(kube.create)] == ["j-widget"]
    assert stored_widget(kube)["spec"] == {"workers": 2}


def test_a_declared_object_in_the_cache_is_not_created_again(controller: Controller, kube: Mock) -> None:
    controller.process("ns/j")
    widgets(controller).on_event("ADDED", stored_widget(kube))
    kube.create.reset_mock()
    controller.process("ns/j")
    assert widget_calls(kube.create) == []


def test_a_deleted_declared_object_wakes_its_job_and_is_recreated(controller: Controller, kube: Mock) -> None:
    controller.process("ns/j")
    widget = stored_widget(kube)
    widgets(controller).on_event("ADDED", widget)
    widgets(controller).on_event("DELETED", widget)
    assert drain(controller) == ["ns/j"]
    kube.create.reset_mock()
    controller.process("ns/j")
    assert [c.args[1]["metadata"]["name"] for c in widget_calls(kube.create)] == ["j-widget"]


def test_a_declared_object_edited_by_hand_is_patched_back(controller: Controller, kube: Mock) -> None:
    controller.process("ns/j")
    widget = stored_widget(kube)
    widgets(controller).on_event("ADDED", widget)
    edited = {**copy.deepcopy(widget), "spec": {"workers": 7}}
    edited["metadata"]["resourceVersion"] = "6"
    widgets(controller).on_event("MODIFIED", edited)
    assert "ns/j" in drain(controller)
    kube.patch.reset_mock()
    controller.process("ns/j")
    [patch] = widget_calls(kube.patch)
    assert patch.args == (f"{WIDGETS}/j-widget", {"spec": {"workers": 2}, "metadata": {"resourceVersion": "6"}})


def test_a_finished_jobs_declared_object_is_deleted_by_uid(controller: Controller, kube: Mock) -> None:
    controller.process("ns/j")
    widgets(controller).on_event("ADDED", stored_widget(kube))
    finished = make_job()
    finished["status"] = {"conditions": [{"type": cond.SUCCEEDED, "status": "True", "reason": "JobSucceeded"}]}
    finished["metadata"]["resourceVersion"] = "20"
    controller.caches.jobs.on_event("MODIFIED", finished)
    controller.process("ns/j")
    [delete] = widget_calls(kube.delete)
    assert delete.args == (f"{WIDGETS}/j-widget",) and delete.kwargs["uid"] == "widget-uid"


def test_a_declared_types_arrival_joins_the_pod_batch_and_its_change_goes_in_at_once(
        controller: Controller, kube: Mock) -> None:
    controller.process("ns/j")
    widget = stored_widget(kube)
    widgets(controller).on_event("ADDED", widget)
    assert drain(controller) == []  # routine: folded into the job's pod batch, not a reconcile of its own
    edited = {**copy.deepcopy(widget), "spec": {"workers": 7}}
    edited["metadata"]["resourceVersion"] = "6"
    widgets(controller).on_event("MODIFIED", edited)
    assert drain(controller) == ["ns/j"]


def test_a_type_declared_to_route_at_once_wakes_its_job_on_arrival(kube: Mock) -> None:
    options = ControllerOptions(kueue="off")
    urgent = replace(WIDGET, routing=Routing.AT_ONCE)
    made = Controller(kube, options, clock=FakeClock(wall=NOW), owned=declarations(options, extra=[urgent]))
    made.caches.jobs.on_event("ADDED", make_job())
    drain(made)
    made.process("ns/j")
    informer = made.caches.owned_informer("Widget")
    assert informer is not None
    informer.on_event("ADDED", stored_widget(kube))
    assert drain(made) == ["ns/j"]


def test_every_object_a_job_owns_is_one_declaration_watched_as_it_declares(kube: Mock) -> None:
    options = ControllerOptions(kueue="on", network_policy="on", namespaces=("ns",))
    made = Controller(kube, options, owned=declarations(options, extra=[WIDGET], kueue_workloads=True))
    assert [(d.kind, d.writer) for d in made.caches.owned] == [
        ("Pod", Writer.PODS), ("Service", Writer.SERVICE), ("NetworkPolicy", Writer.COMPANION),
        ("Widget", Writer.COMPANION), ("Workload.kueue.x-k8s.io", Writer.KUEUE)]
    watched = {name: [r.lister_watcher.description for r in informer.reflectors]
               for name, informer in made.caches.factory.informers.items()}
    assert watched["pods"] == ["/api/v1/namespaces/ns/pods (tensorflowjob.kubeflow.org/job-name)"]
    assert watched["workloads"] == ["/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads (kueue.x-k8s.io/job-uid)"]
    assert made.caches.workloads is made.caches.owned_informer("Workload.kueue.x-k8s.io")
    # Only the companions are written by the companion writer; the others have writers of their own.
    assert [d.kind for d in made.reconciler.owned] == ["NetworkPolicy", "Widget"]
