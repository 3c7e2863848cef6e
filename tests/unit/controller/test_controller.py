"""Controller wiring without a cluster: which informers run, and the event → job key mapping of its
handlers (delivered by calling the handler, as an informer would)."""

from __future__ import annotations

import copy
import time
from typing import Any
from unittest.mock import Mock

import pytest
from pytest_mock import MockerFixture

from controller.controller import Controller
from controller.job.progress import Target
from controller.options import ControllerOptions
from kube import Kube
from kube.clock import FakeClock
from tests.support.jobs import role, tfjob
from tests.support.queues import drain


@pytest.fixture
def kube(mocker: MockerFixture) -> Mock:
    client = mocker.Mock(spec=Kube)
    client.has_api.return_value = False
    return client


def pod(name: str, owner_uid: str, kind: str = "TensorFlowJob", owner: str = "j") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "uid": "p-" + name, "ownerReferences": [
        {"apiVersion": "kubeflow.org/v1", "kind": kind, "name": owner, "uid": owner_uid, "controller": True}]}}


def test_kueue_informers_exist_only_when_its_api_is_served(kube: Mock) -> None:
    assert Controller(kube).caches.workloads is None
    kube.has_api.return_value = True
    assert Controller(kube).caches.workloads is not None
    assert Controller(kube, ControllerOptions(kueue="off")).caches.workloads is None


def settled(controller: Controller, clock: FakeClock, seconds: float) -> list[str]:
    """Step the queue's fake clock, wait (bounded) for its delaying thread to hand over what came
    due, and drain the queue."""
    clock.step(seconds)
    deadline = time.monotonic() + 5
    while controller.queue.waiting_due() and time.monotonic() < deadline:
        time.sleep(0.001)
    return drain(controller)


def running(name: str, owner_uid: str, **status: Any) -> dict[str, Any]:
    p = pod(name, owner_uid)
    p["metadata"]["resourceVersion"] = "1"
    p["status"] = {"phase": "Running", **status}
    return p


def test_pod_added_enqueues_its_controlling_job_after_the_batch_period(kube: Mock) -> None:
    clock = FakeClock()
    controller = Controller(kube, clock=clock)
    controller.handlers.pod_added(pod("j-worker-0", "uid-1"))
    assert drain(controller) == []
    assert settled(controller, clock, 0.5) == ["ns/j"]


def test_a_jobs_pod_events_within_the_batch_period_fold_into_one_reconcile(kube: Mock) -> None:
    clock = FakeClock()
    controller = Controller(kube, clock=clock)
    for i in range(5):
        controller.handlers.pod_added(pod(f"j-worker-{i}", "uid-1"))
        clock.step(0.05)
    controller.handlers.pod_updated(running("j-worker-0", "uid-1"), running("j-worker-0", "uid-1", startTime="t"))
    assert settled(controller, clock, 0.5) == ["ns/j"]


def test_the_jobs_service_arriving_joins_its_pods_batch(kube: Mock) -> None:
    clock = FakeClock()
    controller = Controller(kube, clock=clock)
    controller.handlers.pod_added(pod("j-worker-0", "uid-1"))
    controller.handlers.child_created(pod("j", "uid-1"))  # same owner metadata; a Service's shape does not matter here
    assert drain(controller) == []
    assert settled(controller, clock, 0.5) == ["ns/j"]


def test_pod_deletion_starting_enqueues_its_job_at_once(kube: Mock) -> None:
    controller = Controller(kube, ControllerOptions(pod_batch_period=60))
    controller.memory.expectations.expect_deletions("ns/j", ["p-j-worker-0"])
    old = running("j-worker-0", "uid-1")
    new = running("j-worker-0", "uid-1")
    new["metadata"]["deletionTimestamp"] = "2026-11-29T00:00:00Z"
    controller.handlers.pod_updated(old, new)
    assert drain(controller) == ["ns/j"]
    assert controller.memory.expectations.satisfied("ns/j")


def test_pod_failing_enqueues_its_job_at_once(kube: Mock) -> None:
    controller = Controller(kube, ControllerOptions(pod_batch_period=60))
    failed = running("j-worker-0", "uid-1")
    failed["status"]["phase"] = "Failed"
    controller.handlers.pod_updated(running("j-worker-0", "uid-1"), failed)
    assert drain(controller) == ["ns/j"]


def test_pod_update_that_changes_only_its_resource_version_enqueues_nothing(kube: Mock) -> None:
    clock = FakeClock()
    controller = Controller(kube, clock=clock)
    newer = running("j-worker-0", "uid-1")
    newer["metadata"]["resourceVersion"] = "2"
    controller.handlers.pod_updated(running("j-worker-0", "uid-1"), newer)
    assert settled(controller, clock, 1) == []


def test_cached_jobs_and_services_share_their_repeated_strings(kube: Mock) -> None:
    import json

    controller = Controller(kube)
    for store, kind in ((controller.caches.jobs.store, "TensorFlowJob"), (controller.caches.services.store, "Service")):
        for name in ("a", "b"):
            store.add(json.loads(json.dumps({"kind": kind, "metadata": {
                "name": name, "namespace": "ns", "uid": f"uid-{name}", "labels": {"app": "training"}}})))
        a, b = store.get("ns/a"), store.get("ns/b")
        assert a is not None and b is not None
        assert a["metadata"]["labels"]["app"] is b["metadata"]["labels"]["app"], kind


def test_pod_of_an_earlier_job_with_the_same_name_is_ignored(kube: Mock) -> None:
    controller = Controller(kube)
    controller.caches.jobs.store.add({"apiVersion": "kubeflow.org/v1", "kind": "TensorFlowJob",
                               "metadata": {"name": "j", "namespace": "ns", "uid": "uid-new", "resourceVersion": "1"}})
    drain(controller)
    controller.handlers.pod_added(pod("j-worker-0", "uid-old"))
    assert drain(controller) == []


def test_pod_owned_by_another_kind_is_ignored(kube: Mock) -> None:
    controller = Controller(kube)
    controller.handlers.child_deleted(pod("x", "uid-1", kind="Job"))
    assert drain(controller) == []


def test_pod_creation_observed_lowers_the_expectation(kube: Mock) -> None:
    controller = Controller(kube)
    controller.memory.expectations.expect_creations("ns/j", ["j-worker-0"])
    controller.handlers.pod_added(pod("j-worker-0", "uid-1"))
    assert controller.memory.expectations.satisfied("ns/j")


def test_node_turning_not_ready_enqueues_jobs_with_pods_there(kube: Mock) -> None:
    controller = Controller(kube)
    on_node = pod("j-worker-0", "uid-1")
    on_node["spec"] = {"nodeName": "n1"}
    controller.caches.pods.store.add(on_node)
    ready = {"metadata": {"name": "n1"}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    not_ready = {"metadata": {"name": "n1"}, "status": {"conditions": [{"type": "Ready", "status": "False"}]}}
    controller.handlers.node_updated(ready, not_ready)
    assert drain(controller) == ["ns/j"]


def test_pod_being_bound_to_a_node_enqueues_nothing(kube: Mock) -> None:
    clock = FakeClock()
    controller = Controller(kube, clock=clock)
    pending = running("j-worker-0", "uid-1")
    pending["status"] = {"phase": "Pending"}
    pending["spec"] = {"containers": [{"name": "tensorflow"}]}
    bound = copy.deepcopy(pending)
    bound["metadata"]["resourceVersion"] = "2"
    bound["spec"]["nodeName"] = "n1"
    controller.handlers.pod_updated(pending, bound)
    assert settled(controller, clock, 1) == []
    started = copy.deepcopy(bound)
    started["status"] = {"phase": "Running"}
    controller.handlers.pod_updated(bound, started)
    assert settled(controller, clock, 1) == ["ns/j"]


def a_job(resource_version: str) -> dict[str, Any]:
    return tfjob("j", {"worker": role(1)}, namespace="ns", uid="uid-1", resourceVersion=resource_version)


def test_the_echo_of_our_own_status_write_enqueues_nothing_but_any_other_update_does(kube: Mock) -> None:
    kube.create.side_effect = lambda path, body, **_: body
    kube.patch.side_effect = lambda path, body, **_: {**a_job("11"), "status": body["status"]}
    controller = Controller(kube, ControllerOptions(kueue="off"))
    controller.caches.jobs.store.add(a_job("10"))
    controller.reconciler.reconcile("ns/j")  # creates
    controller.reconciler.reconcile("ns/j")  # writes the status
    assert kube.patch.called
    echo = {**a_job("11"), "status": kube.patch.call_args.args[1]["status"]}
    controller.handlers.job_updated(a_job("10"), echo)
    assert drain(controller) == []
    controller.handlers.job_updated(echo, {**echo, "metadata": {**echo["metadata"], "resourceVersion": "12"}})
    assert drain(controller) == ["ns/j"]


def test_the_echo_of_a_status_write_that_beats_its_answer_enqueues_nothing(kube: Mock) -> None:
    controller = Controller(kube, ControllerOptions(kueue="off"))

    def patch(path: str, body: dict[str, Any], **_: Any) -> dict[str, Any]:
        written = {**a_job("11"), "status": body["status"]}
        controller.handlers.job_updated(a_job("10"), written)  # the watch is faster than the answer
        return written
    kube.create.side_effect = lambda path, body, **_: body
    kube.patch.side_effect = patch
    controller.caches.jobs.store.add(a_job("10"))
    controller.reconciler.reconcile("ns/j")  # creates
    controller.reconciler.reconcile("ns/j")  # writes the status
    assert kube.patch.called
    assert drain(controller) == []


def test_a_change_by_someone_else_while_no_status_write_is_in_flight_enqueues_the_job(kube: Mock) -> None:
    controller = Controller(kube, ControllerOptions(kueue="off"))
    controller.handlers.job_updated(a_job("10"), a_job("11"))
    assert drain(controller) == ["ns/j"]


def test_a_deleted_job_is_forgotten_entirely_and_reconciled_once_more(kube: Mock) -> None:
    controller = Controller(kube)
    job = {"metadata": {"name": "j", "namespace": "ns", "uid": "uid-1", "resourceVersion": "7"}}
    controller.memory.expectations.expect_creations("ns/j", ["j-worker-0"])
    controller.memory.remember_written("ns/j", "6", job)
    controller.memory.defer("ns/j", job, {"state": "Created"})
    controller.handlers.job_deleted(job)
    assert controller.memory.expectations.satisfied("ns/j")
    assert not controller.memory.wrote("ns/j", "7")
    assert controller.memory.take_deferred("ns/j", job) is None
    assert drain(controller) == ["ns/j"]


def test_in_namespaces_the_controller_watches_its_jobs_and_their_children_but_no_nodes(kube: Mock) -> None:
    controller = Controller(kube, ControllerOptions(namespaces=("team-a",), network_policy="on"))
    sources = {name: [r.lister_watcher.description for r in informer.reflectors]
               for name, informer in controller.caches.factory.informers.items()}
    assert sources == {
        "tensorflowjobs": ["/apis/kubeflow.org/v1/namespaces/team-a/tensorflowjobs"],
        "pods": ["/api/v1/namespaces/team-a/pods (tensorflowjob.kubeflow.org/job-name)"],
        "services": ["/api/v1/namespaces/team-a/services (tensorflowjob.kubeflow.org/job-name)"],
        "networkpolicies": ["/apis/networking.k8s.io/v1/namespaces/team-a/networkpolicies "
                            "(tensorflowjob.kubeflow.org/job-name)"],
    }
    caches = controller.caches
    assert caches.informers() == [caches.jobs, caches.pods, caches.services, caches.network_policies]


def test_cluster_wide_the_controller_watches_nodes_too(kube: Mock) -> None:
    caches = Controller(kube).caches
    assert caches.nodes is not None
    assert [r.lister_watcher.description for r in caches.nodes.reflectors] == ["/api/v1/nodes"]


def test_the_progress_poller_reads_through_the_pod_proxy_and_enqueues_the_job_that_changed(kube: Mock) -> None:
    clock = FakeClock()
    controller = Controller(kube, clock=clock)
    target = Target("ns", "j", "j-worker-0", 8090, 30.0)
    controller.memory.progress.follow("ns/j", {"metadata": {"namespace": "ns", "name": "j"}}, target, {})
    kube.request.return_value = {"step": 3}
    assert {key: read.result(timeout=10) for key, read in controller.progress_poller.poll_once().items()} == {
        "ns/j": True}
    # At most 4 kB and 5 s in all, whatever the pod sends.
    kube.request.assert_called_once_with("GET", "/api/v1/namespaces/ns/pods/j-worker-0:8090/proxy/progress",
                                         timeout=5.0, max_bytes=4096, deadline=5.0)
    assert drain(controller) == ["ns/j"]


def test_events_on_pod_groups_are_watched_only_under_a_scheduler_that_explains_itself_in_them(kube: Mock) -> None:
    assert Controller(kube, ControllerOptions(gang_scheduler="scheduler-plugins")).caches.gang_events is None
    assert Controller(kube, ControllerOptions(gang_scheduler="kubernetes")).caches.gang_events is None
    informer = Controller(kube, ControllerOptions(gang_scheduler="volcano")).caches.gang_events
    assert informer is not None
    assert informer.reflectors[0].lister_watcher.field_selector == (  # type: ignore[attr-defined]
        "involvedObject.kind=PodGroup,involvedObject.apiVersion=scheduling.volcano.sh/v1beta1")


def test_an_event_on_a_pod_group_enqueues_the_job_owning_the_group(kube: Mock) -> None:
    controller = Controller(kube, ControllerOptions(gang_scheduler="volcano"))
    controller.caches.jobs.store.add(tfjob("j", {"worker": role(1)}, namespace="ns", uid="job-uid"))
    group = pod("j", "job-uid")
    group["metadata"]["uid"] = "pg-uid"
    informer = controller.caches.owned_informer("PodGroup")
    assert informer is not None
    informer.store.add(group)
    controller.handlers.pod_group_event({"involvedObject": {"kind": "PodGroup", "namespace": "ns", "name": "j"},
                                         "reason": "Unschedulable", "message": "queue resource quota insufficient"})
    controller.handlers.pod_group_event({"involvedObject": {"kind": "PodGroup", "namespace": "ns", "name": "other"}})
    assert drain(controller) == ["ns/j"]


def admitted_workload(owner_uid: str, flavor: str) -> dict[str, Any]:
    workload = pod("j-workload", owner_uid)
    workload["status"] = {"admission": {"clusterQueue": "cq", "podSetAssignments": [
        {"name": "worker", "flavors": {"cpu": flavor}, "count": 1}]}}
    return workload


def test_a_flavor_created_after_admission_enqueues_the_jobs_admitted_with_it(kube: Mock, mocker: MockerFixture) -> None:
    kube.has_api.return_value = True
    controller = Controller(kube)
    controller.caches.jobs.store.add(tfjob("j", {"worker": role(1)}, namespace="ns", uid="job-uid"))
    workloads, flavors = controller.caches.workloads, controller.caches.flavors
    assert workloads is not None and flavors is not None
    workloads.store.add(admitted_workload("job-uid", "spot"))
    mocker.patch.object(flavors, "has_synced", return_value=True)
    controller.handlers.flavor_added({"metadata": {"name": "on-demand"}})
    assert drain(controller) == []
    controller.handlers.flavor_added({"metadata": {"name": "spot"}})
    assert drain(controller) == ["ns/j"]


def test_the_flavors_first_list_enqueues_nothing(kube: Mock) -> None:
    kube.has_api.return_value = True
    controller = Controller(kube)
    controller.caches.jobs.store.add(tfjob("j", {"worker": role(1)}, namespace="ns", uid="job-uid"))
    assert controller.caches.workloads is not None
    controller.caches.workloads.store.add(admitted_workload("job-uid", "spot"))
    controller.handlers.flavor_added({"metadata": {"name": "spot"}})
    assert drain(controller) == []
