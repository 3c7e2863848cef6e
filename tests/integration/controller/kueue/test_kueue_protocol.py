"""The Workload protocol against a real Kueue: controller/kueue/protocol.py's pure functions driven by hand.

These tests play the operator's part step by step (create the Workload, read its admission, clear an
eviction, finish it) with `controller.kueue.protocol` and `kube.Kube`, and let the real Kueue
manager answer. They prove that Kueue runs here and that the functions speak its protocol; the
end-to-end TensorFlowJob tests come with the reconciler's wiring.

The TensorFlowJobs are real (suspended) objects, so the Workloads' owner exists and garbage
collection leaves them alone; the queue label is put on the tests' local copy only, so that an
operator running in the same session never acts on these jobs.
"""

from __future__ import annotations

import copy
from typing import Any

from controller.kueue import protocol as kq
from kube import Kube, resource_path
from tests.support.jobs import DEVCLUSTER_IMAGE, container, role, tfjob
from tests.support.polling import wait_for
from tfjob_api.timeutil import format_time, utcnow

from .conftest import POOL_LABEL, POOL_TOLERATION, Flavors, Queue, Workloads, kueue_path


def make_job(api: Kube, namespace: str, name: str, workers: int, cpu: str, queue: str = "lq",
             priority_class: str | None = None) -> dict[str, Any]:
    """Create a suspended TensorFlowJob whose workers request `cpu` each; return it with Kueue's labels."""
    worker = container(DEVCLUSTER_IMAGE, port=2222, requests={"cpu": cpu, "memory": "1Gi"})
    body = tfjob(name, {"suspend": True, "worker": role(workers, containers=[worker])}, namespace=namespace)
    job = api.create(resource_path("kubeflow.org", "v1", "tensorflowjobs", namespace), body)
    labels = job["metadata"].setdefault("labels", {})
    labels[kq.QUEUE_LABEL] = queue
    if priority_class:
        labels[kq.PRIORITY_CLASS_LABEL] = priority_class
    return job


def now() -> str:
    return format_time(utcnow())


def test_a_workload_over_quota_waits_with_a_clear_message_until_the_admitted_one_finishes(
        kueue_queue: Queue, workloads: Workloads, kueue_api: Kube) -> None:
    first = make_job(kueue_api, kueue_queue.namespace, "first", workers=2, cpu="3")
    second = make_job(kueue_api, kueue_queue.namespace, "second", workers=2, cpu="3")

    created = workloads.create(kq.build_workload(first))
    assert created["metadata"]["name"] == kq.workload_name(first)
    admitted = workloads.wait(kq.workload_name(first), lambda a: a.can_run, "admitted")
    info = kq.admission(admitted)
    assert info.cluster_queue == kueue_queue.cluster_queue
    assert info.flavors_by_podset == {"worker": [kueue_queue.flavor]}
    assert kq.workload_matches(first, admitted)  # also with the CRD's defaults applied on the server
    assert kq.waiting_message(first, admitted) == ("Admitted", f"admitted by ClusterQueue {kueue_queue.cluster_queue}")

    workloads.create(kq.build_workload(second))
    pending = workloads.wait(kq.workload_name(second), lambda a: bool(a.pending_message), "pending with a message")
    info = kq.admission(pending)
    assert not info.quota_reserved and not info.admitted and info.pending_reason == "Pending"
    assert "couldn't assign flavors to pod set worker" in info.pending_message
    assert "insufficient unused quota for cpu" in info.pending_message
    reason, message = kq.waiting_message(second, pending)
    assert reason == "WaitingForAdmission"
    assert message == f"waiting for quota in LocalQueue lq: {info.pending_message}"

    workloads.finish(kq.workload_name(first), succeeded=True, message="first succeeded")
    finished = workloads.get(kq.workload_name(first))
    assert kq.admission(finished).finished
    workloads.wait(kq.workload_name(second), lambda a: a.can_run, "admitted once the first finished")


def test_admitted_flavor_node_labels_steer_pods_to_the_matching_nodes(
        kueue_queue: Queue, workloads: Workloads, kueue_api: Kube, kueue_flavors: Flavors) -> None:
    job = make_job(kueue_api, kueue_queue.namespace, "placed", workers=4, cpu="1")
    workloads.create(kq.build_workload(job))
    workload = workloads.wait(kq.workload_name(job), lambda a: a.can_run, "admitted")

    info = kq.admission(workload)
    flavors = {name: kueue_api.get(kueue_path("resourceflavors", name=name)) for name in info.flavor_names}
    started = kq.apply_flavors(job, workload, kq.flavors_for_roles(workload, flavors))
    template = started["spec"]["worker"]["template"]
    assert template["spec"]["nodeSelector"] == {POOL_LABEL: "a"}
    assert template["spec"]["tolerations"] == [POOL_TOLERATION]
    assert template["metadata"]["labels"][kq.PODSET_LABEL] == "worker"
    assert template["metadata"]["labels"][kq.CLUSTER_QUEUE_LABEL] == kueue_queue.cluster_queue
    assert template["metadata"]["annotations"][kq.WORKLOAD_ANNOTATION] == kq.workload_name(job)
    assert "nodeSelector" not in job["spec"]["worker"]["template"]["spec"]  # the input is untouched

    # Pods from that template (the operator's builders would add TF_CONFIG etc.) land on the pool.
    pods_path = resource_path("", "v1", "pods", kueue_queue.namespace)
    for index in range(4):
        kueue_api.create(pods_path, {"apiVersion": "v1", "kind": "Pod",
                                     "metadata": {"name": f"placed-worker-{index}", **copy.deepcopy(template["metadata"])},
                                     "spec": copy.deepcopy(template["spec"])})

    def placed() -> list[str] | None:
        pods = kueue_api.list(pods_path)["items"]
        running = [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]
        return [p["spec"]["nodeName"] for p in running] if len(running) == 4 else None

    nodes = wait_for(placed, 60, "4 pods Running")
    assert set(nodes) <= set(kueue_flavors.labelled_nodes), nodes


def test_a_higher_priority_workload_preempts_a_lower_one_which_is_requeued_once_cleared(
        kueue_queue: Queue, workloads: Workloads, kueue_api: Kube, kueue_priority_classes: dict[str, int]) -> None:
    low = make_job(kueue_api, kueue_queue.namespace, "low", workers=2, cpu="3", priority_class="low")
    high = make_job(kueue_api, kueue_queue.namespace, "high", workers=2, cpu="3", priority_class="high")

    def create(job: dict[str, Any]) -> str:
        name = kq.priority_class_name(job)
        workloads.create(kq.build_workload(job, kueue_priority_classes[name], kq.priority_class_ref(name)))
        return kq.workload_name(job)

    low_name = create(low)
    workloads.wait(low_name, lambda a: a.can_run, "admitted")
    high_name = create(high)

    evicted = workloads.wait(low_name, lambda a: a.evicted, "evicted by the higher-priority Workload")
    info = kq.admission(evicted)
    assert info.eviction_reason == "Preempted" and info.preempted
    assert "Preempted to accommodate a workload" in info.eviction_message
    assert info.must_clear and not info.can_run  # Kueue leaves QuotaReserved/Admitted True...
    assert not kq.admission(workloads.get(high_name)).quota_reserved  # ...so the quota is still taken
    reason, message = kq.waiting_message(low, evicted)
    assert reason == "Preempted" and message.endswith("re-queued in LocalQueue lq")

    # The operator deleted the low job's pods; now it clears the admission, which frees the quota.
    assert workloads.patch_status(low_name, lambda w: kq.clear_admission_status(w, now()))
    workloads.wait(high_name, lambda a: a.can_run, "admitted after the preemption")
    requeued = workloads.wait(low_name, lambda a: a.requeued is True and not a.quota_reserved, "re-queued")
    assert kq.clear_admission_status(requeued, now()) is None  # nothing left to clear
    reason, message = kq.waiting_message(low, requeued)
    assert reason == "Preempted" and "re-queued in LocalQueue lq" in message

    workloads.finish(high_name)
    readmitted = workloads.wait(low_name, lambda a: a.can_run, "admitted again once the high one finished")
    evicted_condition = next(c for c in readmitted["status"]["conditions"] if c["type"] == "Evicted")
    assert evicted_condition["status"] == "False"


def test_a_pending_workload_updated_in_place_for_a_scaled_down_job_is_admitted(
        kueue_queue: Queue, workloads: Workloads, kueue_api: Kube) -> None:
    running = make_job(kueue_api, kueue_queue.namespace, "running", workers=2, cpu="3")
    waiting = make_job(kueue_api, kueue_queue.namespace, "waiting", workers=2, cpu="2")
    workloads.create(kq.build_workload(running))
    workloads.wait(kq.workload_name(running), lambda a: a.can_run, "admitted")
    workloads.create(kq.build_workload(waiting))
    stale = workloads.wait(kq.workload_name(waiting), lambda a: bool(a.pending_message), "pending")

    scaled = copy.deepcopy(waiting)
    scaled["spec"]["worker"]["replicas"] = 1  # 2 CPUs now fit beside the 6 in use
    assert not kq.workload_matches(scaled, stale)
    assert not kq.admission(stale).quota_reserved  # so the spec may be updated in place
    kueue_api.patch(kq.workload_path(kueue_queue.namespace, kq.workload_name(waiting)),
                    {"metadata": {"resourceVersion": stale["metadata"]["resourceVersion"]},
                     "spec": {"podSets": kq.podsets(scaled)}})
    admitted = workloads.wait(kq.workload_name(waiting), lambda a: a.can_run, "admitted after the update")
    assert kq.workload_matches(scaled, admitted)


def test_a_workload_for_a_missing_local_queue_is_inadmissible(
        kueue_queue: Queue, workloads: Workloads, kueue_api: Kube) -> None:
    job = make_job(kueue_api, kueue_queue.namespace, "lost", workers=1, cpu="1", queue="no-such-queue")
    workloads.create(kq.build_workload(job))
    workload = workloads.wait(kq.workload_name(job), lambda a: a.pending_reason == "Inadmissible", "inadmissible")
    reason, message = kq.waiting_message(job, workload)
    assert reason == "Inadmissible"
    assert message.startswith("LocalQueue no-such-queue cannot admit the job: ")
    assert "no-such-queue" in kq.admission(workload).pending_message
