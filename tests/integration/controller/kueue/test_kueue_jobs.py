"""Jobs of both kinds queued by a real Kueue through the operator, end to end.

The operator makes the Workloads of TensorFlowJobs, and of Kubeflow TFJobs too while Kueue's own
`kubeflow.org/tfjob` integration is off, as it is for the session's Kueue (batch/job only): the
operator under test (the session's, `kueue_operator`) runs with `--kueue-tfjob=auto` and learns that
from Kueue's Configuration. It runs from a start after Kueue's (it detects Kueue's API at start).
Each scenario runs for both kinds.
"""

from __future__ import annotations

from typing import Any

import pytest

from controller.kueue import protocol as kq
from kube import resource_path
from tests.integration.controller.conftest import KubeflowTfJobs, TfJobs
from tests.support.jobs import DEVCLUSTER_IMAGE, container, devcluster_role, tfjob
from tests.support.kinds import both_kinds
from tests.support.kubeflow import as_tfjob

pytestmark = [both_kinds]


@pytest.fixture
def jobs(kind_jobs: TfJobs, kueue_queue: Any, kueue_operator: Any) -> Any:
    return kind_jobs


def cpu_role(replicas: int, cpu: str, exit_code: int | None = None) -> dict[str, Any]:
    """A role whose pods request `cpu` CPUs and 1Gi each (what Kueue's quota counts)."""
    requests = {"cpu": cpu, "memory": "1Gi"}
    return devcluster_role(replicas, containers=[container(DEVCLUSTER_IMAGE, requests=requests)], exit_code=exit_code)


def submit(jobs: Any, name: str, queue: str | None = "lq", priority: str | None = None, **spec: Any) -> dict[str, Any]:
    labels = {}
    if queue:
        labels[kq.QUEUE_LABEL] = queue
    if priority:
        labels[kq.PRIORITY_CLASS_LABEL] = priority
    make = as_tfjob if isinstance(jobs, KubeflowTfJobs) else tfjob
    return jobs.api.create(jobs.path(), make(name, spec, namespace=jobs.namespace, labels=labels))


def workloads_of(jobs: Any, job: dict[str, Any]) -> list[dict[str, Any]]:
    return jobs.api.list(kq.workload_path(jobs.namespace), labelSelector=kq.job_uid_selector(job))["items"]


def suspended_reason(jobs: Any, name: str) -> str | None:
    condition = jobs.condition(name, "Suspended")
    return condition["reason"] if condition and condition["status"] == "True" else None


def test_second_job_waits_for_quota_then_runs_when_the_first_finishes(jobs: Any) -> None:
    submit(jobs, "first", ps=cpu_role(0, "1"), worker=cpu_role(2, "3"))
    jobs.wait_pods("first", 2, timeout=60)
    jobs.wait_condition("first", "Running")
    submit(jobs, "second", worker=cpu_role(2, "3"))
    jobs.wait_for(lambda: suspended_reason(jobs, "second") == "WaitingForAdmission", 30, "second to wait")
    # First "waiting for quota in LocalQueue lq" (no Workload yet), then Kueue's reason
    jobs.wait_for(lambda: "insufficient" in jobs.condition("second", "Suspended")["message"], 30,
                  "Kueue's reason in second's condition")
    message = jobs.condition("second", "Suspended")["message"]
    assert "LocalQueue lq" in message, message
    assert jobs.pods("second") == []
    assert jobs.status("second")["state"] == "Suspended"
    jobs.exit_pod("first-worker-0", 0)
    jobs.wait_condition("first", "Succeeded")
    jobs.wait_pods("second", 2, timeout=60)
    jobs.wait_condition("second", "Running")
    resumed = jobs.condition("second", "Suspended")
    assert resumed["status"] == "False"


def test_higher_priority_job_preempts_a_lower_one_which_resumes_later(jobs: Any) -> None:
    submit(jobs, "low", priority="low", worker=cpu_role(2, "3"))
    jobs.wait_pods("low", 2, timeout=60)
    submit(jobs, "high", priority="high", worker=cpu_role(2, "3"))
    jobs.wait_for(lambda: suspended_reason(jobs, "low") == "Preempted", 60, "low to be preempted")
    assert "re-queued" in jobs.condition("low", "Suspended")["message"]
    jobs.wait_for(lambda: jobs.pods("low") == [], 30, "low's pods to be deleted")
    jobs.wait_pods("high", 2, timeout=60)
    jobs.wait_condition("high", "Running")
    jobs.exit_pod("high-worker-0", 0)
    jobs.wait_condition("high", "Succeeded")
    jobs.wait_pods("low", 2, timeout=90)
    jobs.exit_pod("low-worker-0", 0)
    jobs.wait_condition("low", "Succeeded")


def test_job_naming_an_unknown_queue_says_so_in_its_condition(jobs: Any) -> None:
    submit(jobs, "lost", queue="no-such-queue", worker=cpu_role(1, "1"))
    jobs.wait_for(lambda: suspended_reason(jobs, "lost") == "Inadmissible", 60, "lost to be inadmissible")
    message = jobs.condition("lost", "Suspended")["message"]
    assert "LocalQueue no-such-queue" in message and "doesn't exist" in message, message
    assert jobs.pods("lost") == []


def test_admitted_flavor_node_labels_steer_the_pods(jobs: Any, kueue_flavors: Any) -> None:
    submit(jobs, "flav", worker=cpu_role(3, "1"))
    pods = jobs.wait_pods("flav", 3, timeout=60)
    for pod in pods:
        assert pod["spec"]["nodeSelector"] == {"tfjob-test/pool": "a"}
        assert pod["spec"]["nodeName"] in kueue_flavors.labelled_nodes
        assert pod["metadata"]["labels"][kq.PODSET_LABEL] == "worker"


def test_finished_job_marks_its_workload_finished(jobs: Any) -> None:
    job = submit(jobs, "done", worker=cpu_role(1, "1"))
    jobs.wait_pods("done", 1, timeout=60)
    jobs.exit_pod("done-worker-0", 0)
    jobs.wait_condition("done", "Succeeded")
    jobs.wait_for(lambda: any(kq.admission(w).finished for w in workloads_of(jobs, job)), 30,
                  "the Workload to be Finished")


def test_deleting_a_queued_job_removes_its_workload(jobs: Any) -> None:
    job = submit(jobs, "big", worker=cpu_role(4, "4"))  # 16 CPUs: never fits in 8
    jobs.wait_for(lambda: workloads_of(jobs, job), 30, "a Workload for the job")
    jobs.wait_for(lambda: suspended_reason(jobs, "big") == "WaitingForAdmission", 30, "the job to wait")
    jobs.delete("big")
    jobs.wait_for(lambda: workloads_of(jobs, job) == [], 60, "the Workload to be garbage-collected")


def test_job_without_queue_label_ignores_kueue(jobs: Any) -> None:
    job = submit(jobs, "free", queue=None, worker=cpu_role(2, "20"))  # far beyond the queue's quota
    jobs.wait_pods("free", 2, timeout=60)
    assert workloads_of(jobs, job) == []
    assert jobs.condition("free", "Suspended") is None
    assert jobs.api.list(resource_path(kq.GROUP, kq.VERSION, "workloads", jobs.namespace))["items"] == []
