"""Switching a live cluster from the operator's queueing of TFJobs to Kueue's own TFJob integration.

The other direction is tested at the end of test_kueue_tfjob_framework.py. Here an operator of the
test's own first queues TFJobs itself (`--kueue-tfjob=auto`, the session's Kueue has no TFJob
integration); then it is restarted with `--kueue-tfjob=kueue` and a Kueue with `kubeflow.org/tfjob`
replaces the session's (docs/kubeflow.md, "Switching over"). Kueue's TFJob reconciler finds each
TFJob's Workload by its owner and keeps it. At the end the session's Kueue is started again, once
Kueue has released the Workloads' finalizers.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from controller.kueue import protocol as kq
from devcluster.cluster import Cluster
from devcluster.kueue import DEFAULT_FRAMEWORKS, Kueue
from tests.support.kubeflow import tfjob_manifest
from tests.support.polling import wait_for

from .kubeflow_queueing import (
    TFJOB_FRAMEWORK,
    cpu_workers,
    suspended,
    tfjob_workloads_held,
    wait_workload,
    workload_of,
)


@pytest.fixture
def switch(cluster: Cluster, kueue: Kueue, kubeflow_tfjobs: Any, kueue_queue: Any, no_session_operator: None,
           start_operator: Any) -> Iterator[dict[str, Any]]:
    """What the test switches; afterwards the TFJob-integration Kueue is stopped and the session's started."""
    state: dict[str, Any] = {"operator": start_operator()}
    yield state
    manager = state.get("kueue")
    if manager is not None:
        for job in kubeflow_tfjobs.api.list(kubeflow_tfjobs.path())["items"]:
            kubeflow_tfjobs.api.delete(kubeflow_tfjobs.path(job["metadata"]["name"]))
        wait_for(lambda: not tfjob_workloads_held(kubeflow_tfjobs.api), 60,
                 "Kueue to release the TFJobs' Workloads")
        manager.stop()
        kueue.start()


def submit(jobs: Any, name: str, workers: dict[str, Any]) -> dict[str, Any]:
    """A TFJob as a user submits it with the operator queueing: the queue-name label, not suspended."""
    body = tfjob_manifest(name, {"Worker": workers}, metadata={"namespace": jobs.namespace,
                                                               "labels": {kq.QUEUE_LABEL: "lq"}})
    return jobs.api.create(jobs.path(), body)


def test_switching_to_kueues_integration_keeps_each_tfjob_and_its_workload(
        cluster: Cluster, kueue: Kueue, kubeflow_tfjobs: Any, switch: dict[str, Any], start_operator: Any) -> None:
    jobs = kubeflow_tfjobs
    running = submit(jobs, "running", cpu_workers(2, "3"))  # 6 of the 8 CPUs
    before = {p["metadata"]["name"]: p["metadata"]["uid"] for p in jobs.wait_pods("running", 2, timeout=60)}
    waiting = submit(jobs, "waiting", cpu_workers(2, "3"))
    wait_workload(jobs, waiting, lambda a: a.pending_reason == kq.REASON_PENDING, "to wait for quota")
    names = {job["metadata"]["name"]: (workload_of(jobs, job) or {})["metadata"]["name"] for job in (running, waiting)}
    assert names["running"].startswith("tfjob-running-")  # the operator's, named as Kueue names it

    switch["operator"].stop()
    switch["operator"] = start_operator(["--kueue-tfjob=kueue"])
    kueue.stop()
    switch["kueue"] = Kueue(cluster, frameworks=(*DEFAULT_FRAMEWORKS, TFJOB_FRAMEWORK))
    switch["kueue"].start()

    jobs.wait_for(lambda: suspended(jobs, "waiting"), 120, "Kueue to suspend the waiting TFJob")
    assert {job["metadata"]["name"]: (workload_of(jobs, job) or {})["metadata"]["name"]
            for job in (running, waiting)} == names
    assert kq.admission(workload_of(jobs, running) or {}).admitted
    assert {p["metadata"]["name"]: p["metadata"]["uid"] for p in jobs.wait_pods("running", 2)} == before
    assert not suspended(jobs, "running")
    jobs.exit_pod("running-worker-0", 0)  # worker 0 succeeding ends the job (no chief)
    jobs.wait_condition("running", "Succeeded")
    wait_workload(jobs, waiting, lambda a: a.admitted, "to be admitted", timeout=90)
    jobs.wait_pods("waiting", 2, timeout=60)
    assert not suspended(jobs, "waiting")
    assert (workload_of(jobs, waiting) or {})["metadata"]["name"] == names["waiting"]
