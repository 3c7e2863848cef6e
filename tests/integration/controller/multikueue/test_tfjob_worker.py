"""A TFJob dispatched by MultiKueue to a worker whose Kueue has its TFJob integration off: the worker's
operator queues TFJobs itself there, so it is the operator that adopts the prebuilt Workload (a
controller owner reference to the worker's copy; no second Workload) and runs the job under it, and
the manager's TFJob shows the worker's status to the end (the manager's Kueue keeps its TFJob
integration, where Kueue's MultiKueue adapter for TFJobs lives)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from controller.kueue import protocol as kq
from controller.kueue.multikueue import CONTROLLER_NAME, PREBUILT_WORKLOAD_LABEL
from tests.integration.controller.chaos.watching import PodWatch
from tests.integration.controller.multikueue.test_dispatch import (
    REQUESTS,
    condition,
    no_pod_ever,
    replica_statuses,
    tfjob_path,
)
from tests.support.jobs import DEVCLUSTER_IMAGE, container
from tests.support.kubeflow import devcluster_replica, tfjob_manifest
from tests.support.polling import wait_for


@pytest.fixture
def manager_pods_off(mk_off: Any) -> Iterator[PodWatch]:
    """Every pod of the test's namespace on the manager, as it appears (there must never be one)."""
    watch = PodWatch(mk_off.manager.api, mk_off.namespace).start()
    yield watch
    watch.stop()


def submit_master_and_worker(mk: Any, name: str) -> str:
    """A TFJob with a Master and a Worker (podSets `master` and `worker` in the manager's Workload, while
    the operator's job model calls the Master `chief`), both exiting 0, as Kueue's webhook leaves it."""
    replica = devcluster_replica(1, policy="OnFailure", containers=[container(DEVCLUSTER_IMAGE, requests=REQUESTS)],
                                 exit_code=0, exit_after="8s")
    body = tfjob_manifest(name, {"Master": replica, "Worker": replica},
                          metadata={"namespace": mk.namespace, "labels": {kq.QUEUE_LABEL: "lq"}},
                          suspend=True, managedBy=CONTROLLER_NAME)
    mk.manager.api.create(tfjob_path(mk.namespace), body)
    return tfjob_path(mk.namespace, name)


def worker_workloads(mk: Any) -> list[dict[str, Any]]:
    return list(mk.worker.api.list(kq.workload_path(mk.namespace))["items"])


def test_the_workers_operator_runs_a_tfjob_under_its_prebuilt_workload(mk_off: Any,
                                                                      manager_pods_off: PodWatch) -> None:
    path = submit_master_and_worker(mk_off, "adopted")
    wait_for(lambda: len(mk_off.worker.pods(mk_off.namespace)) == 2, 120, "the job's two pods on the worker")
    worker_copy = mk_off.worker.get(path) or {}
    [workload] = worker_workloads(mk_off)  # the prebuilt one, and no other
    assert workload["metadata"]["name"] == worker_copy["metadata"]["labels"][PREBUILT_WORKLOAD_LABEL]
    [owner] = [ref for ref in workload["metadata"].get("ownerReferences") or [] if ref.get("controller")]
    assert (owner["kind"], owner["uid"]) == ("TFJob", worker_copy["metadata"]["uid"])
    wait_for(lambda: condition(mk_off.manager.get(path), "Succeeded"), 120, "the manager's TFJob to show Succeeded")
    final = mk_off.manager.get(path) or {}
    assert {role: replica_statuses(final)[role].get("succeeded") for role in ("Master", "Worker")} == {
        "Master": 1, "Worker": 1}, final.get("status")
    assert final["status"].get("startTime") and final["status"].get("completionTime"), final["status"]
    no_pod_ever(manager_pods_off)
