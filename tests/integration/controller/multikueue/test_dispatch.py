"""Jobs submitted on a MultiKueue manager run on its worker, for both kinds: no pod ever on the
manager (a watch on the manager's pods, from before the job is submitted to the end of the test), the manager's job shows the worker's status (Running, then Succeeded with its replica
statuses), `kubectl tfjob` on the manager says where it runs and reads its logs on the worker, and
deleting it on the manager deletes the worker's copy and its pods."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pytest

from controller.kueue import protocol as kq
from controller.kueue.multikueue import CONTROLLER_NAME, PREBUILT_WORKLOAD_LABEL
from kube import resource_path
from tests.integration.controller.chaos.watching import PodWatch
from tests.support.jobs import DEVCLUSTER_IMAGE, container, devcluster_role, tfjob
from tests.support.kubeflow import devcluster_replica, tfjob_manifest
from tests.support.polling import wait_for
from tfjobs.cli import Console, main

REQUESTS = {"cpu": "1", "memory": "1Gi"}
LOG_ANNOTATION = "sim.tensorflowjob.kubeflow.org/log"  # what the simulated container writes


@pytest.fixture
def manager_pods(mk: Any) -> Iterator[PodWatch]:
    """Every pod of the test's namespace on the manager, as it appears (there must never be one)."""
    watch = PodWatch(mk.manager.api, mk.namespace).start()
    yield watch
    watch.stop()


def no_pod_ever(watch: PodWatch) -> None:
    watch.assert_healthy()
    assert [story.name for story in watch.pods()] == [], "a pod appeared on the manager"


def tensorflowjob_path(namespace: str, name: str | None = None) -> str:
    return resource_path("kubeflow.org", "v1", "tensorflowjobs", namespace, name)


def tfjob_path(namespace: str, name: str | None = None) -> str:
    return resource_path("kubeflow.org", "v1", "tfjobs", namespace, name)


def submit_tensorflowjob(mk: Any, name: str, exit_after: str | None, log: str | None = None) -> str:
    role = devcluster_role(1, containers=[container(DEVCLUSTER_IMAGE, requests=REQUESTS)],
                           exit_code=0 if exit_after else None, exit_after=exit_after,
                           annotations={LOG_ANNOTATION: log} if log else None)
    body = tfjob(name, {"worker": role, "managedBy": CONTROLLER_NAME}, namespace=mk.namespace,
                 labels={kq.QUEUE_LABEL: "lq"})
    mk.manager.api.create(tensorflowjob_path(mk.namespace), body)
    return tensorflowjob_path(mk.namespace, name)


def submit_tfjob(mk: Any, name: str, exit_after: str | None) -> str:
    """A TFJob as Kueue's webhook would have left it: suspended, with the queue-name label."""
    replica = devcluster_replica(1, policy="OnFailure", containers=[container(DEVCLUSTER_IMAGE, requests=REQUESTS)],
                                 exit_code=0 if exit_after else None, exit_after=exit_after)
    body = tfjob_manifest(name, {"Worker": replica}, metadata={"namespace": mk.namespace,
                                                                "labels": {kq.QUEUE_LABEL: "lq"}},
                          suspend=True, managedBy=CONTROLLER_NAME)
    mk.manager.api.create(tfjob_path(mk.namespace), body)
    return tfjob_path(mk.namespace, name)


def condition(job: dict[str, Any] | None, kind: str) -> bool:
    conditions = ((job or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == kind and c.get("status") == "True" for c in conditions)


def replica_statuses(job: dict[str, Any] | None) -> dict[str, Any]:
    return dict(((job or {}).get("status") or {}).get("replicaStatuses") or {})


def plugin(mk: Any, side: Any, *argv: str) -> tuple[int, str, str]:
    """`kubectl tfjob ARGV` against one cluster of the pair: (status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    status = main([*argv, "--kubeconfig", str(side.cluster.kubeconfig), "-n", mk.namespace],
                  Console(out=out, err=err, tty=False))
    return status, out.getvalue(), err.getvalue()


def describe_on_manager(mk: Any, name: str, kind: str) -> str:
    status, out, _ = plugin(mk, mk.manager, "describe", name, "--kind", kind)
    assert status == 0
    return out


def run_to_success(mk: Any, path: str, role: str, manager_pods: PodWatch) -> None:
    wait_for(lambda: condition(mk.manager.get(path), "Running"), 120, "the manager's job to show Running")
    worker_copy = mk.worker.get(path)
    assert worker_copy is not None and worker_copy["metadata"]["labels"].get(PREBUILT_WORKLOAD_LABEL)
    assert replica_statuses(mk.manager.get(path))[role]["active"] == 1
    name, kind = path.rsplit("/", 1)[1], "TFJob" if "/tfjobs/" in path else "TensorFlowJob"
    assert "Runs on:      worker cluster worker (dispatched by MultiKueue" in describe_on_manager(mk, name, kind)
    wait_for(lambda: condition(mk.manager.get(path), "Succeeded"), 120, "the manager's job to show Succeeded")
    final = mk.manager.get(path) or {}
    assert replica_statuses(final)[role].get("succeeded") == 1, final.get("status")
    assert final["status"].get("startTime") and final["status"].get("completionTime"), final["status"]
    assert mk.manager.pods(mk.namespace) == []
    no_pod_ever(manager_pods)


def test_a_tensorflowjob_runs_on_the_worker_under_its_prebuilt_workload(mk: Any, manager_pods: PodWatch) -> None:
    path = submit_tensorflowjob(mk, "dispatched", exit_after="8s")
    wait_for(lambda: mk.worker.pods(mk.namespace), 120, "the job's pod on the worker")
    worker_copy = mk.worker.get(path) or {}
    [workload] = mk.worker.api.list(kq.workload_path(mk.namespace))["items"]
    assert workload["metadata"]["name"] == worker_copy["metadata"]["labels"][PREBUILT_WORKLOAD_LABEL]
    [owner] = workload["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"], owner["controller"]) == ("TensorFlowJob", worker_copy["metadata"]["uid"], True)
    assert "managedBy" not in worker_copy["spec"]
    run_to_success(mk, path, "worker", manager_pods)


def test_a_tfjob_runs_on_the_worker(mk: Any, manager_pods: PodWatch) -> None:
    path = submit_tfjob(mk, "dispatched", exit_after="8s")
    run_to_success(mk, path, "Worker", manager_pods)


def test_logs_are_read_on_the_worker_and_the_manager_says_where(mk: Any) -> None:
    submit_tensorflowjob(mk, "logged", exit_after=None, log="epoch 1")
    wait_for(lambda: "[worker-0] epoch 1" in plugin(mk, mk.worker, "logs", "logged")[1].splitlines(), 120,
             "the worker's pod log through the plugin with the worker's kubeconfig")
    status, out, err = plugin(mk, mk.manager, "logs", "logged")
    assert status == 1 and out == ""
    assert "dispatched by MultiKueue to worker cluster worker" in err, err


def test_deleting_the_managers_job_deletes_the_workers_copy_and_its_pods(mk: Any, manager_pods: PodWatch) -> None:
    path = submit_tensorflowjob(mk, "deleted", exit_after=None)
    wait_for(lambda: condition(mk.manager.get(path), "Running"), 120, "the manager's job to show Running")
    assert mk.worker.pods(mk.namespace) and mk.manager.pods(mk.namespace) == []
    mk.manager.api.delete(path, propagation="Background")
    wait_for(lambda: mk.worker.get(path) is None, 60, "the worker's copy to be deleted")
    wait_for(lambda: mk.worker.pods(mk.namespace) == [], 60, "the worker's pods to be deleted")
    no_pod_ever(manager_pods)
