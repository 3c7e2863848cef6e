"""The kubectl experience, with the real kubectl against the local control plane:
`get` columns, `describe` events, `wait --for=condition`, `explain`, `scale`, and the install
manifests accepted by the API server (`apply --dry-run=server -k`).

Output is checked as a user reads it: column headers and cells, not just exit codes.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.polling import wait_for

MANIFESTS = pathlib.Path(__file__).resolve().parents[3] / "manifests"


def kubectl(tfjobs: Any, *args: str) -> subprocess.CompletedProcess[str]:
    return tfjobs.cluster.kubectl(*args, "-n", tfjobs.namespace)


def table(text: str) -> list[list[str]]:
    return [line.split() for line in text.strip().splitlines()]


def test_get_tfjob_answers_is_it_working_at_a_glance(tfjobs: Any) -> None:
    tfjobs.create("glance", ps=tfjobs.role(1), worker=tfjobs.role(2))
    tfjobs.wait_pods("glance", 3)
    tfjobs.wait_condition("glance", "Running")
    tfjobs.wait_for(lambda: (tfjobs.status("glance").get("replicaStatuses") or {}).get("worker", {}).get("active") == 2,
                    30, "2 active workers in the status")

    rows = table(kubectl(tfjobs, "get", "tfjob").stdout)
    assert rows[0] == ["NAME", "STATE", "WORKERS", "PS", "RESTARTS", "PROGRESS", "ETA", "AGE"]
    assert rows[1][:5] == ["glance", "Running", "2", "1", "0"]

    wide = table(kubectl(tfjobs, "get", "tfjob", "glance", "-o", "wide").stdout)
    assert wide[0] == ["NAME", "STATE", "WORKERS", "PS", "RESTARTS", "PROGRESS", "ETA", "AGE", "STARTED", "COMPLETED",
                       "METRICS"]
    assert len(wide[1]) == len(wide[0]) - 4  # started; no progress reported (3 cells), and not completed

    for name in ("tfjob", "tensorflowjob", "tensorflowjobs.kubeflow.org", "kubeflow"):
        listed = kubectl(tfjobs, "get", name, "-o", "name").stdout.split()
        assert "tensorflowjob.kubeflow.org/glance" in listed, name
    # Not in the `all` category, so `kubectl delete all --all` leaves training jobs alone.
    everything = kubectl(tfjobs, "get", "all", "-o", "name").stdout.split()
    assert "pod/glance-worker-0" in everything and "tensorflowjob.kubeflow.org/glance" not in everything


def test_describe_tfjob_tells_the_start_in_conditions_and_the_end_in_events(tfjobs: Any) -> None:
    tfjobs.create("story", worker=tfjobs.role(1, exit_code=0, exit_after="2s"))
    tfjobs.wait_condition("story", "Succeeded")
    tfjobs.wait_for(lambda: "JobSucceeded" in {e["reason"] for e in tfjobs.events("story")}, 30,
                    "the JobSucceeded event")

    text = kubectl(tfjobs, "describe", "tfjob", "story").stdout

    status, events = text[:text.index("Events:")], text[text.index("Events:"):]
    assert "JobSucceeded" in events
    assert "tfjob-operator" in events  # the reporting component
    # The start is in the conditions, with their times: no event per routine step of a healthy job.
    assert "JobCreated" in status and "Running" in status and "Succeeded" in status
    assert "SuccessfulCreate" not in events and "JobRunning" not in events


def test_kubectl_wait_for_succeeded_returns_when_the_example_job_finishes(tfjobs: Any) -> None:
    applied = kubectl(tfjobs, "apply", "-f", str(MANIFESTS / "examples" / "allreduce.yaml"))
    assert applied.stdout.splitlines() == ["configmap/mnist-allreduce-code created",  # the training program
                                           "tensorflowjob.kubeflow.org/mnist-allreduce created"]

    waited = kubectl(tfjobs, "wait", "--for=condition=Succeeded", "tfjob/mnist-allreduce", "--timeout=90s")

    assert waited.stdout.strip() == "tensorflowjob.kubeflow.org/mnist-allreduce condition met"
    assert tfjobs.status("mnist-allreduce")["state"] == "Succeeded"


def test_kubectl_explain_documents_the_worker_role(cluster: Any, crd: None) -> None:
    text = cluster.kubectl("explain", "tensorflowjob.spec.worker").stdout

    assert "KIND:" in text and "TensorFlowJob" in text
    assert "FIELD: worker" in text
    for field in ("replicas", "restartPolicy", "template"):
        assert f"\n  {field}\t" in text, field

    deep = cluster.kubectl("explain", "tensorflowjob.spec.worker.template.spec.containers.resources.limits").stdout
    assert "FIELD: limits" in deep


def cluster_size(tfjobs: Any, job: str) -> list[int]:
    """For each live worker pod that is Running: how many workers its TF_CONFIG lists."""
    sizes = []
    for pod in tfjobs.pods(job, "worker", include_terminating=False):
        if (pod.get("status") or {}).get("phase") != "Running":
            continue
        container = next(c for c in pod["spec"]["containers"] if c["name"] == "tensorflow")
        config = json.loads(next(e["value"] for e in container["env"] if e["name"] == "TF_CONFIG"))
        sizes.append(len(config["cluster"]["worker"]))
    return sorted(sizes)


def test_kubectl_scale_changes_the_worker_count_and_pods_follow(tfjobs: Any) -> None:
    tfjobs.create("elastic", worker=tfjobs.role(2))
    tfjobs.wait_pods("elastic", 2, role="worker")

    scaled = kubectl(tfjobs, "scale", "tfjob/elastic", "--replicas=4")
    assert scaled.stdout.strip() == "tensorflowjob.kubeflow.org/elastic scaled"
    assert tfjobs.get("elastic")["spec"]["worker"]["replicas"] == 4
    # Pods are replaced with a TF_CONFIG naming the new cluster, so wait for 4 pods that agree on 4.
    tfjobs.wait_for(lambda: cluster_size(tfjobs, "elastic") == [4, 4, 4, 4], 60, "4 running workers in a 4-worker cluster")
    tfjobs.wait_for(lambda: kubectl(tfjobs, "get", "tfjob", "elastic", "--subresource=scale", "-o",
                                    "jsonpath={.status.replicas}").stdout == "4", 30, "the scale status to say 4")

    kubectl(tfjobs, "scale", "tfjob/elastic", "--replicas=1")
    tfjobs.wait_for(lambda: cluster_size(tfjobs, "elastic") == [1] and tfjobs.pod_names("elastic", "worker")
                    == ["elastic-worker-0"], 60, "1 running worker in a 1-worker cluster")


# ---- the install manifests against a real API server -------------------------------------------


@pytest.fixture(scope="module")
def install_namespaces(cluster: Any) -> Iterator[None]:
    """Server-side dry runs do not create namespaces, so objects in a new one would fail: make the
    installs' namespaces exist for this module (and remove those it created afterwards)."""
    created: list[str] = []

    def active(name: str) -> bool:
        found = cluster.kubectl("get", "namespace", name, "-o", "jsonpath={.status.phase}", check=False)
        if found.returncode == 0:
            return found.stdout == "Active"  # else an earlier run's deletion is still finishing
        if cluster.kubectl("create", "namespace", name, check=False).returncode == 0:
            created.append(name)
        return False  # look again: created now, or created by someone else meanwhile

    for name in ("tfjob-system", "team-a"):
        wait_for(lambda name=name: active(name), 60, f"namespace {name} to be active")
    yield
    for name in created:
        cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)


def dry_run_objects(output: str) -> list[str]:
    lines = output.strip().splitlines()
    assert lines and all(line.endswith("(server dry run)") for line in lines), output
    return sorted(line.split()[0] for line in lines)


@pytest.mark.parametrize("mode", [[], ["--server-side"]], ids=["client-side", "server-side"])
@pytest.mark.usefixtures("crd", "install_namespaces")
def test_the_install_manifests_pass_a_server_side_dry_run(cluster: Any, mode: list[str]) -> None:
    result = cluster.kubectl("apply", *mode, "--dry-run=server", "-k", str(MANIFESTS))

    assert dry_run_objects(result.stdout) == sorted([
        "namespace/tfjob-system",
        "customresourcedefinition.apiextensions.k8s.io/tensorflowjobs.kubeflow.org",
        "serviceaccount/tfjob-operator",
        "role.rbac.authorization.k8s.io/tfjob-operator-leader-election",
        "rolebinding.rbac.authorization.k8s.io/tfjob-operator-leader-election",
        "clusterrole.rbac.authorization.k8s.io/tfjob-operator",
        "clusterrolebinding.rbac.authorization.k8s.io/tfjob-operator",
        "service/tfjob-operator-metrics",
        "deployment.apps/tfjob-operator",
        "poddisruptionbudget.policy/tfjob-operator",
    ])


@pytest.mark.usefixtures("crd", "install_namespaces")
def test_the_namespaced_install_passes_a_server_side_dry_run(cluster: Any) -> None:
    result = cluster.kubectl("apply", "--server-side", "--dry-run=server", "-k", str(MANIFESTS / "namespaced"))

    objects = dry_run_objects(result.stdout)
    assert "role.rbac.authorization.k8s.io/tfjob-operator" in objects
    assert "deployment.apps/tfjob-operator" in objects
    assert not any(o.startswith("clusterrole") for o in objects)
    kueue_read = cluster.kubectl("apply", "--server-side", "--dry-run=server", "-f",
                                 str(MANIFESTS / "namespaced" / "kueue-read.yaml"))
    assert dry_run_objects(kueue_read.stdout) == [
        "clusterrole.rbac.authorization.k8s.io/tfjob-operator-team-a-kueue-read",
        "clusterrolebinding.rbac.authorization.k8s.io/tfjob-operator-team-a-kueue-read",
    ]
