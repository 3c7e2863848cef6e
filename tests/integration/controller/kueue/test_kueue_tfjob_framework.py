"""Kubeflow TFJobs run by this operator and queued by Kueue's own TFJob integration, end to end.

Kueue's built-in framework `kubeflow.org/tfjob` (not this project's Workload protocol, which is for
TensorFlowJobs) creates a Workload for a TFJob with the queue-name label, keeps the TFJob suspended
through `spec.runPolicy.suspend` until the Workload is admitted, then writes the flavor's node selector
and tolerations into the replica templates and unsuspends it; on preemption it suspends it again and
restores the templates. The operator only has to honour `runPolicy.suspend` and build pods from the
templates as they are, and report what Kueue reads (`replicaStatuses[*].active`, `Succeeded`/`Failed`).

Kueue enables a framework's controller only once the kind's API is served, so the session's Kueue
(batch/job only) is stopped and one with `kubeflow.org/tfjob` is started after the TFJob CRD is
installed; the session's Kueue is started again after this module. The session operator is restarted
after each switch: it reads Kueue's Configuration at start (`--kueue-tfjob=auto`) and leaves TFJobs
to Kueue while its TFJob integration is on, so the two never both make a TFJob's Workload. Kueue's webhooks are not installed
on the devcluster, so each TFJob is created as Kueue's mutating webhook would have left it: suspended
(`runPolicy.suspend: true`) and with the queue-name label.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from controller.kueue import protocol as kq
from devcluster.cluster import Cluster
from devcluster.kueue import DEFAULT_FRAMEWORKS, Kueue
from kube import Kube
from tests.support.kubeflow import tfjob_manifest
from tests.support.operator import Operator
from tests.support.polling import wait_for

from .kubeflow_queueing import (
    TFJOB_FRAMEWORK,
    WORKLOAD_FINALIZER,
    cpu_workers,
    suspended,
    tfjob_workloads_held,
    wait_workload,
    workload_of,
)

POOL_LABEL = "tfjob-test/pool"  # the node label of the `pool-a` flavor (kueue/conftest.py)


@pytest.fixture(scope="module")
def _tfjob_framework_kueue(cluster: Cluster, kueue: Kueue, kueue_api: Kube,
                           operator: Operator) -> Iterator[dict[str, Kueue]]:
    """Holds the Kueue with the TFJob framework once a test started it (`tfjob_kueue`); at the end
    of the module it is stopped and the session's Kueue started again."""
    started: dict[str, Kueue] = {}
    yield started
    manager = started.get("manager")
    if manager is not None:
        # The tests' Workloads are finished (kueue_queue); let this Kueue drop their finalizers, which
        # the session's Kueue (no TFJob controller) would not, leaving their namespaces Terminating.
        wait_for(lambda: not tfjob_workloads_held(kueue_api), 60, "Kueue to release the TFJobs' Workloads")
        manager.stop()
        kueue.start()
        operator.stop()
        operator.start()


@pytest.fixture
def tfjob_kueue(cluster: Cluster, kueue: Kueue, kubeflow_tfjobs: Any, operator: Operator,
                _tfjob_framework_kueue: dict[str, Kueue]) -> Kueue:
    """Kueue with the batch/job and kubeflow.org/tfjob frameworks, started after `kubeflow_tfjobs`
    installed the TFJob CRD (and restarted the session operator so it serves TFJobs)."""
    if "manager" not in _tfjob_framework_kueue:
        kueue.stop()
        manager = Kueue(cluster, frameworks=(*DEFAULT_FRAMEWORKS, TFJOB_FRAMEWORK))
        manager.start()
        _tfjob_framework_kueue["manager"] = manager
        operator.stop()  # it reads Kueue's Configuration at start: now it leaves TFJobs to Kueue
        operator.start()
    return _tfjob_framework_kueue["manager"]


@pytest.fixture
def jobs(kubeflow_tfjobs: Any, tfjob_kueue: Kueue, kueue_queue: Any, kueue_priority_classes: Any) -> Any:
    return kubeflow_tfjobs


def submit(jobs: Any, name: str, workers: dict[str, Any], priority: str | None = None) -> dict[str, Any]:
    """Create the TFJob as Kueue's webhook would have left it: suspended, with the queue-name label."""
    labels = {kq.QUEUE_LABEL: "lq"}
    if priority:
        labels[kq.PRIORITY_CLASS_LABEL] = priority
    body = tfjob_manifest(name, {"Worker": workers}, metadata={"namespace": jobs.namespace, "labels": labels},
                          suspend=True)
    return jobs.api.create(jobs.path(), body)


def worker_template(jobs: Any, name: str) -> dict[str, Any]:
    return jobs.get(name)["spec"]["tfReplicaSpecs"]["Worker"]["template"]


def suspended_condition(jobs: Any, name: str) -> dict[str, Any] | None:
    conditions = jobs.stored_status(name).get("conditions") or []
    return next((c for c in conditions if c["type"] == "Suspended"), None)


def is_suspended_condition(jobs: Any, name: str, status: str, reason: str) -> bool:
    found = suspended_condition(jobs, name)
    return bool(found) and found["status"] == status and found.get("reason") == reason


def assert_on_the_flavors_nodes(pods: list[dict[str, Any]], nodes: tuple[str, ...]) -> None:
    for pod in pods:
        assert pod["spec"].get("nodeSelector", {}).get(POOL_LABEL) == "a", pod["spec"].get("nodeSelector")
        assert pod["spec"].get("nodeName") in nodes, (pod["metadata"]["name"], pod["spec"].get("nodeName"))


def test_queued_tfjob_over_quota_has_no_pods_while_its_workload_waits(jobs: Any) -> None:
    job = submit(jobs, "big", cpu_workers(3, "3"))  # 9 CPUs, the ClusterQueue has 8
    workload = wait_workload(jobs, job, lambda a: a.pending_reason == kq.REASON_PENDING, "to wait for quota")
    assert "insufficient" in kq.admission(workload).pending_message, kq.admission(workload).pending_message
    assert workload["metadata"]["ownerReferences"][0]["kind"] == "TFJob"
    assert [p["name"] for p in workload["spec"]["podSets"]] == ["worker"]
    jobs.wait_for(lambda: is_suspended_condition(jobs, "big", "True", "TFJobSuspended"), 30,
                  f"big to be Suspended (status: {jobs.stored_status('big')})")
    assert suspended(jobs, "big")
    assert jobs.pods("big") == []
    assert "nodeSelector" not in worker_template(jobs, "big")["spec"]


def test_admitted_tfjob_runs_on_the_flavors_nodes_and_finishes_its_workload(jobs: Any, kueue_flavors: Any) -> None:
    job = submit(jobs, "fits", cpu_workers(2, "3"))
    wait_workload(jobs, job, lambda a: a.admitted, "to be admitted")
    pods = jobs.wait_pods("fits", 2, timeout=60)
    assert not suspended(jobs, "fits")
    template = worker_template(jobs, "fits")
    assert template["spec"]["nodeSelector"] == {POOL_LABEL: "a"}
    assert template["metadata"]["labels"][kq.PODSET_LABEL] == "worker"
    assert_on_the_flavors_nodes(pods, kueue_flavors.labelled_nodes)
    jobs.wait_condition("fits", "Running")
    # Suspended True/TFJobSuspended appears only if the operator saw the job before Kueue admitted it;
    # when it did, the condition must now say the job was resumed.
    resumed = suspended_condition(jobs, "fits")
    assert resumed is None or (resumed["status"], resumed.get("reason")) == ("False", "TFJobResumed"), resumed
    for pod in pods:
        jobs.exit_pod(pod["metadata"]["name"], 0)
    jobs.wait_condition("fits", "Succeeded")
    workload = wait_workload(jobs, job, lambda a: a.finished, "to be Finished")
    assert kq.admission(workload).finished_reason == kq.FINISHED_SUCCEEDED


def test_higher_priority_tfjob_preempts_a_running_one_which_is_suspended(jobs: Any) -> None:
    low = submit(jobs, "low", cpu_workers(2, "3"), priority="low")
    jobs.wait_pods("low", 2, timeout=60)
    high = submit(jobs, "high", cpu_workers(2, "3"), priority="high")
    jobs.wait_for(lambda: suspended(jobs, "low"), 60, "Kueue to suspend low")
    jobs.wait_for(lambda: jobs.pods("low") == [], 30, "low's pods to be deleted")
    jobs.wait_for(lambda: is_suspended_condition(jobs, "low", "True", "TFJobSuspended"), 30,
                  f"low to be Suspended (status: {jobs.stored_status('low')})")
    evicted = wait_workload(jobs, low, lambda a: a.evicted and not a.quota_reserved, "to be preempted and requeued")
    assert kq.admission(evicted).eviction_reason == kq.EVICTED_BY_PREEMPTION
    assert kq.admission(evicted).requeued is True
    assert "nodeSelector" not in worker_template(jobs, "low")["spec"]  # Kueue restored the template
    wait_workload(jobs, high, lambda a: a.admitted, "to be admitted")
    jobs.wait_pods("high", 2, timeout=60)
    assert jobs.pods("low") == []


def test_preempted_tfjob_resumes_when_the_preemptor_finishes(jobs: Any, kueue_flavors: Any) -> None:
    low = submit(jobs, "low", cpu_workers(2, "3"), priority="low")
    jobs.wait_pods("low", 2, timeout=60)
    submit(jobs, "high", cpu_workers(2, "3", exit_after="5s"), priority="high")
    jobs.wait_for(lambda: suspended(jobs, "low"), 60, "Kueue to suspend low")
    jobs.wait_pods("high", 2, timeout=60)
    jobs.wait_condition("high", "Succeeded", timeout=60)
    wait_workload(jobs, low, lambda a: a.admitted and not a.evicted, "to be admitted again", timeout=60)
    pods = jobs.wait_pods("low", 2, timeout=60)
    assert not suspended(jobs, "low")
    assert_on_the_flavors_nodes(pods, kueue_flavors.labelled_nodes)
    jobs.wait_for(lambda: is_suspended_condition(jobs, "low", "False", "TFJobResumed"), 30,
                  f"low to be resumed (status: {jobs.stored_status('low')})")
    jobs.wait_condition("low", "Running")


def test_switching_to_the_operators_queueing_keeps_each_tfjob_and_its_workload(
        jobs: Any, kueue: Kueue, operator: Operator, _tfjob_framework_kueue: dict[str, Kueue]) -> None:
    """Kueue's TFJob integration turned off on a live cluster (docs/kubeflow.md, "Switching over"):
    Kueue restarted without it, then the operator restarted, which now queues TFJobs itself. Last in
    this module: the session's Kueue (without the integration) runs from here on."""
    running = submit(jobs, "running", cpu_workers(2, "3"))  # 6 of the 8 CPUs
    before = {p["metadata"]["name"]: p["metadata"]["uid"] for p in jobs.wait_pods("running", 2, timeout=60)}
    waiting = submit(jobs, "waiting", cpu_workers(2, "3"))
    wait_workload(jobs, waiting, lambda a: a.pending_reason == kq.REASON_PENDING, "to wait for quota")
    names = {job["metadata"]["name"]: (workload_of(jobs, job) or {})["metadata"]["name"] for job in (running, waiting)}

    _tfjob_framework_kueue.pop("manager").stop()
    kueue.start()
    operator.stop()
    operator.start()

    def held() -> list[str]:
        return [w["metadata"]["name"] for job in (running, waiting) if (w := workload_of(jobs, job))
                and WORKLOAD_FINALIZER in (w["metadata"].get("finalizers") or [])]
    jobs.wait_for(lambda: not held(), 60, "the operator to adopt the Workloads (dropping Kueue's finalizer)")
    assert {job["metadata"]["name"]: (workload_of(jobs, job) or {})["metadata"]["name"]
            for job in (running, waiting)} == names
    assert kq.admission(workload_of(jobs, running) or {}).admitted
    assert {p["metadata"]["name"]: p["metadata"]["uid"] for p in jobs.wait_pods("running", 2)} == before
    assert jobs.pods("waiting") == [] and suspended(jobs, "waiting")
    jobs.exit_pod("running-worker-0", 0)  # worker 0 succeeding ends the job (no chief)
    jobs.wait_condition("running", "Succeeded")
    wait_workload(jobs, running, lambda a: a.finished, "to be Finished by the operator")
    wait_workload(jobs, waiting, lambda a: a.admitted, "to be admitted")
    jobs.wait_pods("waiting", 2, timeout=60)  # started by the operator, its runPolicy.suspend left true
    assert workload_of(jobs, waiting)["metadata"]["name"] == names["waiting"]
