"""A queued job its user suspends holds no Kueue quota, against a real Kueue, for both kinds.

The user's suspension (`spec.suspend`, a TFJob's `runPolicy.suspend`) deactivates the job's Workload
(`controller/kueue/suspension.py`): Kueue evicts it, the operator clears its admission once the pods
are gone, and the ClusterQueue's quota goes to the job queued behind it. A resume reactivates the
Workload and Kueue queues it again. Each test reads the ClusterQueue's own counts
(`status.reservingWorkloads`, `admittedWorkloads`, `pendingWorkloads`) as well as the pods. The operator
under test runs from a start after Kueue's, as in test_kueue_jobs.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from controller.kueue import protocol as kq
from controller.kueue import suspension
from kube import resource_path
from tests.integration.controller.conftest import KubeflowTfJobs, TfJobs
from tests.support.jobs import DEVCLUSTER_IMAGE, container, devcluster_role, tfjob
from tests.support.kinds import both_kinds
from tests.support.kubeflow import as_tfjob

pytestmark = [both_kinds]


@pytest.fixture
def jobs(kind_jobs: TfJobs, kueue_queue: Any, kueue_operator: Any) -> Any:
    return kind_jobs


def cpu_role(replicas: int, cpu: str) -> dict[str, Any]:
    """A role whose pods request `cpu` CPUs and 1Gi each (what Kueue's quota counts)."""
    return devcluster_role(replicas, containers=[container(DEVCLUSTER_IMAGE, requests={"cpu": cpu, "memory": "1Gi"})])


def submit(jobs: Any, name: str, **spec: Any) -> dict[str, Any]:
    make = as_tfjob if isinstance(jobs, KubeflowTfJobs) else tfjob
    return jobs.api.create(jobs.path(), make(name, spec, namespace=jobs.namespace, labels={kq.QUEUE_LABEL: "lq"}))


def workload_of(jobs: Any, job: dict[str, Any]) -> dict[str, Any] | None:
    items = jobs.api.list(kq.workload_path(jobs.namespace), labelSelector=kq.job_uid_selector(job))["items"]
    assert len(items) <= 1, [w["metadata"]["name"] for w in items]
    return items[0] if items else None


def admission(jobs: Any, job: dict[str, Any]) -> kq.Admission:
    return kq.admission(workload_of(jobs, job) or {})


def queue_counts(jobs: Any, queue: Any) -> tuple[int, int, int]:
    """The ClusterQueue's (reservingWorkloads, admittedWorkloads, pendingWorkloads)."""
    found = jobs.api.get(resource_path(kq.GROUP, kq.VERSION, "clusterqueues", None, queue.cluster_queue))
    status = found.get("status") or {}
    return (int(status.get("reservingWorkloads") or 0), int(status.get("admittedWorkloads") or 0),
            int(status.get("pendingWorkloads") or 0))


def wait_counts(jobs: Any, queue: Any, counts: tuple[int, int, int], what: str) -> None:
    jobs.wait_for(lambda: queue_counts(jobs, queue) == counts, 60,
                  f"ClusterQueue {queue.cluster_queue} (reserving, admitted, pending) == {counts} ({what}; "
                  f"now {queue_counts(jobs, queue)})")


def wait_job(jobs: Any, job: dict[str, Any], check: Any, what: str, timeout: float = 60) -> None:
    """wait_for(check), and on a timeout say where the job and its Workload stand."""
    name = job["metadata"]["name"]
    try:
        jobs.wait_for(check, timeout, what)
    except AssertionError as error:
        workload = workload_of(jobs, job) or {}
        raise AssertionError(f"{error}; Suspended: {jobs.condition(name, 'Suspended')}; Workload spec.active: "
                             f"{(workload.get('spec') or {}).get('active')}, status: {workload.get('status')}") from None


def suspended_reason(jobs: Any, name: str) -> str | None:
    condition = jobs.condition(name, "Suspended")
    return condition["reason"] if condition and condition["status"] == "True" else None


def test_suspending_an_admitted_job_frees_its_quota_for_the_job_queued_behind_it(jobs: Any, kueue_queue: Any) -> None:
    first = submit(jobs, "first", worker=cpu_role(2, "3"))  # 6 of the queue's 8 CPUs
    jobs.wait_pods("first", 2, timeout=60)
    second = submit(jobs, "second", worker=cpu_role(2, "3"))
    jobs.wait_for(lambda: "insufficient" in ((jobs.condition("second", "Suspended") or {}).get("message") or ""),
                  60, "second to wait for quota")
    wait_counts(jobs, kueue_queue, (1, 1, 1), "first runs, second waits")

    jobs.patch("first", {"suspend": True})
    jobs.wait_for(lambda: jobs.pods("first") == [], 60, "first's pods to be deleted")
    jobs.wait_for(lambda: not admission(jobs, first).quota_reserved, 60, "first's Workload to give up its quota")
    assert suspension.is_active(workload_of(jobs, first) or {}) is False
    jobs.wait_pods("second", 2, timeout=60)
    wait_counts(jobs, kueue_queue, (1, 1, 0), "only second holds quota; first is inactive, not pending")
    assert admission(jobs, second).admitted
    assert suspended_reason(jobs, "first") == "Suspended"


def test_resuming_requeues_the_job_and_runs_it_once_quota_is_free(jobs: Any, kueue_queue: Any) -> None:
    first = submit(jobs, "first", worker=cpu_role(2, "3"))
    jobs.wait_pods("first", 2, timeout=60)
    jobs.patch("first", {"suspend": True})
    jobs.wait_for(lambda: jobs.pods("first") == [], 60, "first's pods to be deleted")
    wait_counts(jobs, kueue_queue, (0, 0, 0), "the suspended job holds nothing")
    submit(jobs, "second", worker=cpu_role(2, "3"))
    jobs.wait_pods("second", 2, timeout=60)

    jobs.patch("first", {"suspend": False})
    wait_job(jobs, first, lambda: suspended_reason(jobs, "first") == "WaitingForAdmission", "first to wait for quota")
    wait_counts(jobs, kueue_queue, (1, 1, 1), "first queued again behind second")
    assert jobs.pods("first") == []
    jobs.exit_pod("second-worker-0", 0)
    jobs.wait_condition("second", "Succeeded")
    jobs.wait_pods("first", 2, timeout=60)
    jobs.wait_condition("first", "Running")
    assert admission(jobs, first).admitted
    wait_counts(jobs, kueue_queue, (1, 1, 0), "first admitted again")


def test_a_job_created_suspended_is_never_admitted_while_suspended(jobs: Any, kueue_queue: Any) -> None:
    idle = submit(jobs, "idle", suspend=True, worker=cpu_role(1, "1"))
    jobs.wait_for(lambda: workload_of(jobs, idle), 30, "idle's Workload")
    assert suspension.is_active(workload_of(jobs, idle) or {}) is False
    submit(jobs, "later", worker=cpu_role(1, "1"))  # queued after idle, in a queue with room for both
    jobs.wait_pods("later", 1, timeout=60)
    wait_counts(jobs, kueue_queue, (1, 1, 0), "only the later job is admitted")
    assert not admission(jobs, idle).quota_reserved
    assert jobs.pods("idle") == [] and suspended_reason(jobs, "idle") == "Suspended"

    jobs.patch("idle", {"suspend": False})
    jobs.wait_pods("idle", 1, timeout=60)
    assert admission(jobs, idle).admitted
    wait_counts(jobs, kueue_queue, (2, 2, 0), "both admitted")
