"""Why a job is not running, on the job itself: the real scheduler's and a kubelet's reasons become the
job's `Pending` condition (state Pending, the pods named, a Warning event), cleared when they resolve."""

from __future__ import annotations

import contextlib
import pathlib
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from kube import ApiError, resource_path

ROOT = pathlib.Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "manifests" / "examples"


def pending(tfjobs: Any, name: str, reason: str) -> dict[str, Any]:
    return tfjobs.wait_condition(name, "Pending", reason, timeout=90)


def resolved(tfjobs: Any, name: str) -> bool:
    found = tfjobs.condition(name, "Pending") or {}
    return found.get("status") == "False" and found.get("reason") == "Resolved"


def yaml_objects(path: pathlib.Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def warning_events(tfjobs: Any, name: str, reason: str) -> list[dict[str, Any]]:
    return [e for e in tfjobs.events(name) if e["reason"] == reason and e["type"] == "Warning"]


@pytest.fixture
def local_volume(tfjobs: Any) -> Iterator[str]:
    """A hostPath PersistentVolume reserved for this test's `mnist-data` claim (the example's
    mnist-data-local-pv.yaml, with a claimRef so parallel namespaces cannot take it)."""
    name = f"{tfjobs.namespace}-mnist-data"
    yield name
    with contextlib.suppress(ApiError):
        tfjobs.api.delete(resource_path("", "v1", "persistentvolumes", None, name))


def test_the_parameter_server_example_says_it_waits_for_its_volume_until_the_volume_exists(
        tfjobs: Any, local_volume: str) -> None:
    applied = tfjobs.apply_yaml((EXAMPLES / "parameter-server.yaml").read_text())
    assert applied.returncode == 0, applied.stderr
    waiting = pending(tfjobs, "mnist-ps", "Unschedulable")
    assert waiting["message"].startswith("1 pod(s) cannot be scheduled (Unschedulable): mnist-ps-chief-0: ")
    assert 'persistentvolumeclaim "mnist-data" not found' in waiting["message"]
    assert tfjobs.status("mnist-ps")["state"] == "Pending"
    table = tfjobs.cluster.kubectl("get", "tfjob", "mnist-ps", "-n", tfjobs.namespace, "--no-headers").stdout
    assert table.split()[1] == "Pending"
    tfjobs.wait_for(lambda: warning_events(tfjobs, "mnist-ps", "Unschedulable"), 30, "an Unschedulable event")

    volume = yaml_objects(EXAMPLES / "storage" / "mnist-data-local-pv.yaml")[0]
    volume["metadata"]["name"] = local_volume
    volume["spec"]["claimRef"] = {"namespace": tfjobs.namespace, "name": "mnist-data"}
    tfjobs.api.create(resource_path("", "v1", "persistentvolumes"), volume)
    claim = tfjobs.apply_yaml((EXAMPLES / "storage" / "mnist-data-pvc.yaml").read_text())
    assert claim.returncode == 0, claim.stderr

    tfjobs.wait_for(lambda: resolved(tfjobs, "mnist-ps"), 120, "the Pending condition to clear")
    tfjobs.wait_for(lambda: tfjobs.status("mnist-ps")["state"] in ("Running", "Succeeded"), 60, "the job to run")


@pytest.fixture
def unmanaged_node(tfjobs: Any) -> Iterator[str]:
    """A Node no KWOK controller manages: its pods' status is written by the test, as a kubelet would."""
    name = f"{tfjobs.namespace}-node"
    tfjobs.api.create(resource_path("", "v1", "nodes"), {"apiVersion": "v1", "kind": "Node",
                                                          "metadata": {"name": name}})
    yield name
    with contextlib.suppress(ApiError):
        tfjobs.delete("kubelet")
    for pod in tfjobs.pods("kubelet"):
        with contextlib.suppress(ApiError):
            tfjobs.api.delete(resource_path("", "v1", "pods", tfjobs.namespace, pod["metadata"]["name"]),
                              grace_seconds=0)
    with contextlib.suppress(ApiError):
        tfjobs.api.delete(resource_path("", "v1", "nodes", None, name))


def kubelet_reports(tfjobs: Any, pod: str, phase: str, state: dict[str, Any]) -> None:
    tfjobs.api.patch(resource_path("", "v1", "pods", tfjobs.namespace, pod, "status"), {"status": {
        "phase": phase,
        "conditions": [{"type": "PodScheduled", "status": "True"}],
        "containerStatuses": [{"name": "tensorflow", "image": "tensorflow/tensorflow:2.21.0", "imageID": "",
                               "ready": phase == "Running", "restartCount": 0, "state": state}]}})


def test_a_container_the_kubelet_cannot_create_makes_the_job_pending_until_it_runs(
        tfjobs: Any, unmanaged_node: str) -> None:
    worker = tfjobs.role(1)
    worker["template"]["spec"]["nodeName"] = unmanaged_node
    tfjobs.create("kubelet", worker=worker)
    tfjobs.wait_pods("kubelet", 1, phase="Pending")
    message = 'configmap "tf-settings" not found'
    kubelet_reports(tfjobs, "kubelet-worker-0", "Pending",
                    {"waiting": {"reason": "CreateContainerConfigError", "message": message}})
    waiting = pending(tfjobs, "kubelet", "CreateContainerConfigError")
    assert waiting["message"] == ("1 pod(s) cannot start (CreateContainerConfigError): kubelet-worker-0: "
                                  f"container tensorflow: {message}")
    tfjobs.wait_for(lambda: warning_events(tfjobs, "kubelet", "CreateContainerConfigError"), 30, "a Warning event")

    kubelet_reports(tfjobs, "kubelet-worker-0", "Running", {"running": {"startedAt": "2026-01-01T00:00:00Z"}})
    tfjobs.wait_condition("kubelet", "Running", "JobRunning")
    assert resolved(tfjobs, "kubelet")
