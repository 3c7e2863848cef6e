"""Helpers for the tests that queue Kubeflow TFJobs through Kueue's own TFJob integration, or switch a
cluster between it and the operator's queueing (test_kueue_tfjob_framework.py,
test_kueue_switch_to_integration.py)."""

from __future__ import annotations

from typing import Any

from controller.kueue import protocol as kq
from kube import Kube, resource_path
from tests.support.jobs import DEVCLUSTER_IMAGE, container
from tests.support.kubeflow import devcluster_replica
from tests.support.polling import wait_for

TFJOB_FRAMEWORK = "kubeflow.org/tfjob"
WORKLOAD_FINALIZER = "kueue.x-k8s.io/resource-in-use"


def tfjob_workloads_held(api: Kube) -> list[str]:
    """Workloads of TFJobs that still carry Kueue's finalizer (only Kueue's TFJob controller removes it)."""
    items = api.list(resource_path(kq.GROUP, kq.VERSION, kq.WORKLOAD_PLURAL))["items"]
    return [f"{w['metadata']['namespace']}/{w['metadata']['name']}" for w in items
            if WORKLOAD_FINALIZER in (w["metadata"].get("finalizers") or [])
            and any(o.get("kind") == "TFJob" for o in w["metadata"].get("ownerReferences") or [])]


def cpu_workers(replicas: int, cpu: str, exit_after: str | None = None) -> dict[str, Any]:
    """A Worker replica spec whose pods request `cpu` CPUs and 1Gi each (what the quota counts); with
    `exit_after` they exit 0 that long after they start."""
    return devcluster_replica(replicas, policy="OnFailure",
                              containers=[container(DEVCLUSTER_IMAGE, requests={"cpu": cpu, "memory": "1Gi"})],
                              exit_code=0 if exit_after else None, exit_after=exit_after)


def workload_of(jobs: Any, job: dict[str, Any]) -> dict[str, Any] | None:
    """The Workload Kueue created for the TFJob (found by its job-uid label), None before it exists."""
    items = jobs.api.list(kq.workload_path(jobs.namespace), labelSelector=kq.job_uid_selector(job))["items"]
    assert len(items) <= 1, [w["metadata"]["name"] for w in items]
    return items[0] if items else None


def wait_workload(jobs: Any, job: dict[str, Any], check: Any, what: str, timeout: float = 60) -> dict[str, Any]:
    def ready() -> dict[str, Any] | None:
        workload = workload_of(jobs, job)
        return workload if workload is not None and check(kq.admission(workload)) else None
    try:
        return wait_for(ready, timeout, f"the Workload of {job['metadata']['name']} {what}")
    except AssertionError as error:
        workload = workload_of(jobs, job)
        raise AssertionError(f"{error}; status: {workload and workload.get('status')}") from None


def suspended(jobs: Any, name: str) -> bool:
    return bool(((jobs.get(name) or {}).get("spec", {}).get("runPolicy") or {}).get("suspend"))
