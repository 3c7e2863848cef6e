"""An admission check's pod-set updates (what a ProvisioningRequest check gives, say) on a queued job's pods.

The ClusterQueue of each test requires an AdmissionCheck whose controller is the test itself: it marks
the check Active, and, once Kueue has reserved quota for the job's Workload, sets the check's state
to Ready with `podSetUpdates` for the worker pod set -- a label, an annotation, a node selector and a
toleration -- as a real check controller would. Kueue then admits the Workload and the operator
builds the pods with the updates. They are never written into the job, so its deactivation (the
pods deleted) leaves nothing behind in its spec.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from controller.kueue import protocol as kq
from kube import ApiError, Kube
from tests.integration.controller.conftest import KubeflowTfJobs, TfJobs
from tests.support.jobs import DEVCLUSTER_IMAGE, container, devcluster_role, tfjob
from tests.support.kinds import both_kinds
from tests.support.kubeflow import as_tfjob
from tests.support.polling import wait_for
from tfjob_api.timeutil import format_time, utcnow

from .conftest import Flavors, Workloads, _active, _create_or_keep, kueue_path

CONTROLLER = "tfjob-test.kubeflow.org/manual-check"
UPDATE = {"name": "worker", "labels": {"tfjob-test/provisioned": "yes"},
          "annotations": {"tfjob-test/provisioned-by": "the-test"},
          "nodeSelector": {"kubernetes.io/os": "linux"},
          "tolerations": [{"key": "tfjob-test/provisioned", "operator": "Exists", "effect": "NoSchedule"}]}


@pytest.fixture
def check(kueue: Any, kueue_api: Kube, kueue_flavors: Flavors, namespace: str, workloads: Workloads) -> Iterator[str]:
    """An Active AdmissionCheck, a ClusterQueue requiring it (8 CPUs of `pool-a`) and the LocalQueue `lq`."""
    name = f"check-{namespace}"[:63].rstrip("-")
    _create_or_keep(kueue_api, kueue_path("admissionchecks"), {
        "apiVersion": kq.API_VERSION, "kind": "AdmissionCheck", "metadata": {"name": name},
        "spec": {"controllerName": CONTROLLER}})
    kueue_api.patch(kueue_path("admissionchecks", name=name, sub="status"), {"status": {"conditions": [
        {"type": "Active", "status": "True", "reason": "Active", "message": "the test answers",
         "lastTransitionTime": format_time(utcnow())}]}})
    _create_or_keep(kueue_api, kueue_path("clusterqueues"), {
        "apiVersion": kq.API_VERSION, "kind": "ClusterQueue", "metadata": {"name": name},
        "spec": {"namespaceSelector": {}, "admissionChecksStrategy": {"admissionChecks": [{"name": name}]},
                 "resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [
                     {"name": kueue_flavors.labelled, "resources": [{"name": "cpu", "nominalQuota": "8"},
                                                                    {"name": "memory", "nominalQuota": "64Gi"}]}]}]}})
    _create_or_keep(kueue_api, kueue_path("localqueues", namespace), {
        "apiVersion": kq.API_VERSION, "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": namespace},
        "spec": {"clusterQueue": name}})
    wait_for(lambda: _active(kueue_api, kueue_path("clusterqueues", name=name)), 30, "the ClusterQueue to be Active")
    wait_for(lambda: _active(kueue_api, kueue_path("localqueues", namespace, "lq")), 30, "lq to be Active")
    yield name
    workloads.release_all()
    for path in (kueue_path("localqueues", namespace, "lq"), kueue_path("clusterqueues", name=name),
                 kueue_path("admissionchecks", name=name)):
        with contextlib.suppress(ApiError):
            kueue_api.delete(path)


@pytest.fixture
def jobs(kind_jobs: TfJobs, check: str, kueue_operator: Any) -> TfJobs:
    return kind_jobs


def ready_with_updates(check: str, updates: list[dict[str, Any]]) -> Any:
    """The status patch a check controller sends: the check Ready, with these pod-set updates."""
    def patch(workload: dict[str, Any]) -> dict[str, Any] | None:
        states = (workload.get("status") or {}).get("admissionChecks") or []
        if not any(s.get("name") == check for s in states):
            return None
        state = {"name": check, "state": "Ready", "message": "provisioned", "podSetUpdates": updates,
                 "lastTransitionTime": format_time(utcnow())}
        return {"metadata": {"resourceVersion": workload["metadata"]["resourceVersion"]},
                "status": {"admissionChecks": [state if s.get("name") == check else s for s in states]}}
    return patch


@both_kinds
def test_an_admission_checks_pod_set_updates_reach_the_pods_and_never_the_job(
        jobs: TfJobs, check: str, workloads: Workloads) -> None:
    worker = devcluster_role(2, containers=[container(DEVCLUSTER_IMAGE, requests={"cpu": "1", "memory": "1Gi"})])
    make = as_tfjob if isinstance(jobs, KubeflowTfJobs) else tfjob
    job = jobs.api.create(jobs.path(), make("checked", {"worker": worker}, namespace=jobs.namespace,
                                            labels={kq.QUEUE_LABEL: "lq"}))
    def reserved() -> str | None:
        found = jobs.api.list(kq.workload_path(jobs.namespace), labelSelector=kq.job_uid_selector(job))["items"]
        return found[0]["metadata"]["name"] if found and kq.admission(found[0]).quota_reserved else None
    name = wait_for(reserved, 60, "quota reserved for the Workload")
    jobs.wait_for(lambda: "admission checks" in str((jobs.condition("checked", "Suspended") or {}).get("message")),
                  30, "the job to wait for the admission check")
    assert jobs.pods("checked") == []

    assert workloads.patch_status(name, ready_with_updates(check, [UPDATE]))
    pods = jobs.wait_pods("checked", 2, timeout=60)
    for pod in pods:
        assert pod["metadata"]["labels"]["tfjob-test/provisioned"] == "yes"
        assert pod["metadata"]["annotations"]["tfjob-test/provisioned-by"] == "the-test"
        assert pod["spec"]["nodeSelector"]["kubernetes.io/os"] == "linux"
        assert UPDATE["tolerations"][0] in pod["spec"]["tolerations"]

    jobs.api.patch(kq.workload_path(jobs.namespace, name), {"spec": {"active": False}})  # deactivated: evicted
    jobs.wait_for(lambda: jobs.pods("checked") == [], 60, "the pods to be deleted")
    stored = str(jobs.get("checked"))
    assert "tfjob-test/provisioned" not in stored and "kubernetes.io/os" not in stored
