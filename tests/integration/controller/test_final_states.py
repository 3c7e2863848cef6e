"""Final states stay final, on a real API server with KWOK nodes: a Succeeded or Failed job never
creates a pod again -- not when its pods and Service are deleted by hand, not when its spec is
scaled, not after cleanPodPolicy or its TTL removed things, and not across an operator restart.

Absence is proven, not waited for: a thread records every pod of the job the API server ever
shows, and a spec change the finished job ignores, once its observedGeneration shows it, proves the
operator has reconciled the job after the deletions."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kube import ApiError, resource_path


@contextmanager
def every_pod_seen(tfjobs: Any, name: str) -> Iterator[set[str]]:
    """The UIDs of every pod of the job seen while the block runs (polled every 0.1 s)."""
    seen: set[str] = set()
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            seen.update(p["metadata"]["uid"] for p in tfjobs.pods(name))
            stop.wait(0.1)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield seen
    finally:
        stop.set()
        watcher.join(5)


def reconciled_after_a_spec_change(tfjobs: Any, name: str, spec: dict[str, Any]) -> None:
    generation = tfjobs.patch(name, spec)["metadata"]["generation"]
    tfjobs.wait_for(lambda: tfjobs.status(name).get("observedGeneration") == generation, 30,
                    f"{name} reconciled after a spec change")


def delete_every_pod(tfjobs: Any, name: str) -> None:
    """Delete every pod of the job at once; one the operator's own clean-up deleted in the meantime (a
    Failed job's running pods go with cleanPodPolicy Running) is gone already, as wanted."""
    for pod in tfjobs.pods(name):
        try:
            tfjobs.api.delete(resource_path("", "v1", "pods", tfjobs.namespace, pod["metadata"]["name"]),
                              grace_seconds=0)
        except ApiError as error:
            if not error.not_found:
                raise
    tfjobs.wait_for(lambda: tfjobs.pods(name) == [], 30, f"every pod of {name} gone")


def succeeded_job(tfjobs: Any, name: str, **spec: Any) -> set[str]:
    """A job whose chief succeeded; the UIDs of the pods it had."""
    tfjobs.create(name, chief=tfjobs.role(1), worker=tfjobs.role(2), **spec)
    pods = tfjobs.wait_pods(name, 3)
    tfjobs.exit_pod(f"{name}-chief-0", 0)
    tfjobs.wait_condition(name, "Succeeded")
    return {p["metadata"]["uid"] for p in pods}


def test_a_succeeded_job_whose_pods_and_service_are_deleted_creates_none(tfjobs: Any) -> None:
    first = succeeded_job(tfjobs, "sd", cleanPodPolicy="None")
    with every_pod_seen(tfjobs, "sd") as seen:
        delete_every_pod(tfjobs, "sd")
        tfjobs.api.delete(resource_path("", "v1", "services", tfjobs.namespace, "sd"))
        reconciled_after_a_spec_change(tfjobs, "sd", {"activeDeadlineSeconds": 86400})
    assert seen <= first
    assert tfjobs.pods("sd") == [] and tfjobs.service("sd") is None
    assert tfjobs.has_condition("sd", "Succeeded")


def test_a_failed_job_scaled_up_after_its_pods_are_gone_creates_none(tfjobs: Any) -> None:
    tfjobs.create("fs", worker=tfjobs.role(2, policy="Never"))
    first = {p["metadata"]["uid"] for p in tfjobs.wait_pods("fs", 2)}
    tfjobs.exit_pod("fs-worker-1", 1)
    tfjobs.wait_condition("fs", "Failed", "ReplicaFailed")
    with every_pod_seen(tfjobs, "fs") as seen:
        delete_every_pod(tfjobs, "fs")
        reconciled_after_a_spec_change(tfjobs, "fs", {"worker": {"replicas": 4}, "suspend": False})
    assert seen <= first and tfjobs.pods("fs") == []
    assert tfjobs.has_condition("fs", "Failed", "ReplicaFailed")


def test_clean_pod_policy_all_leaves_a_succeeded_job_without_pods_for_good(tfjobs: Any) -> None:
    with every_pod_seen(tfjobs, "ca") as seen:
        first = succeeded_job(tfjobs, "ca", cleanPodPolicy="All")
        tfjobs.wait_for(lambda: tfjobs.pods("ca") == [] and tfjobs.service("ca") is None, 30, "everything deleted")
        reconciled_after_a_spec_change(tfjobs, "ca", {"activeDeadlineSeconds": 86400})
    assert seen == first and tfjobs.pods("ca") == []


def test_a_failed_job_deleted_by_its_ttl_never_creates_a_pod_on_the_way(tfjobs: Any) -> None:
    rule = {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [3]}}
    tfjobs.create("tt", worker=tfjobs.role(2), ttlSecondsAfterFinished=2, cleanPodPolicy="None",
                  failurePolicy={"rules": [rule]})
    first = {p["metadata"]["uid"] for p in tfjobs.wait_pods("tt", 2)}
    with every_pod_seen(tfjobs, "tt") as seen:
        tfjobs.exit_pod("tt-worker-0", 3)
        tfjobs.wait_condition("tt", "Failed", "PodFailurePolicy")
        tfjobs.wait_for(lambda: tfjobs.get("tt") is None, 30, "the job deleted by its TTL")
        tfjobs.wait_for(lambda: tfjobs.pods("tt") == [], 60, "garbage collection of the pods")
    assert seen == first


def test_a_finished_job_stays_finished_across_an_operator_restart_with_its_pods_gone(
        tfjobs_no_operator: Any, no_session_operator: None, start_operator: Any) -> None:
    tfjobs = tfjobs_no_operator
    operator = start_operator()
    first = succeeded_job(tfjobs, "or", cleanPodPolicy="None")
    operator.stop()
    with every_pod_seen(tfjobs, "or") as seen:
        delete_every_pod(tfjobs, "or")
        start_operator()
        reconciled_after_a_spec_change(tfjobs, "or", {"activeDeadlineSeconds": 86400})
    assert seen <= first and tfjobs.pods("or") == []
    assert tfjobs.has_condition("or", "Succeeded")
