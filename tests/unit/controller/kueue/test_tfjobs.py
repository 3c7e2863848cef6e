"""Who queues Kubeflow TFJobs, and the identity of the Workload the operator makes for one."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from controller.kueue import protocol as kueue
from controller.kueue import tfjobs
from tests.support.kubeflow import tfjob_manifest
from tfjob_api.kubeflow_model import to_model


def config_map(frameworks: list[str] | None) -> dict[str, Any]:
    config: dict[str, Any] = {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration"}
    if frameworks is not None:
        config["integrations"] = {"frameworks": frameworks}
    return {"data": {tfjobs.CONFIG_KEY: yaml.safe_dump(config)}}


def model(replica_specs: dict[str, Any], suspend: bool = False) -> dict[str, Any]:
    stored = tfjob_manifest("train", replica_specs, metadata={"namespace": "ns", "uid": "u-1",
                                                                "labels": {kueue.QUEUE_LABEL: "lq"}}, suspend=suspend)
    return to_model(stored)


def worker(replicas: int) -> dict[str, Any]:
    return {"replicas": replicas, "template": {"spec": {"containers": [{"name": "tensorflow", "image": "tf"}]}}}


def test_auto_queues_tfjobs_in_the_operator_when_kueues_configuration_leaves_them_out() -> None:
    queues, why = tfjobs.queues_tfjobs("auto", config_map(["batch/job", "kubeflow.org/pytorchjob"]))
    assert queues and "does not enable kubeflow.org/tfjob" in why


def test_auto_leaves_tfjobs_to_kueue_when_its_tfjob_integration_is_on() -> None:
    queues, why = tfjobs.queues_tfjobs("auto", config_map(["batch/job", "kubeflow.org/tfjob"]))
    assert not queues and "Kueue queues TFJobs" in why


def test_a_configuration_without_frameworks_means_kueues_default_batch_job_only() -> None:
    assert tfjobs.queues_tfjobs("auto", config_map(None))[0]


def test_an_unreadable_configuration_leaves_tfjobs_to_kueue_and_says_which_flag_to_set() -> None:
    queues, why = tfjobs.queues_tfjobs("auto", None)
    assert not queues and "--kueue-tfjob=operator" in why
    queues, why = tfjobs.queues_tfjobs("auto", {"data": {tfjobs.CONFIG_KEY: ": not: yaml: ["}})
    assert not queues and "not YAML" in why


@pytest.mark.parametrize(("mode", "expected"), [("operator", True), ("kueue", False)])
def test_the_flag_overrides_the_configuration(mode: tfjobs.Mode, expected: bool) -> None:
    assert tfjobs.queues_tfjobs(mode, config_map(["kubeflow.org/tfjob"] if expected else []))[0] is expected


def test_a_tfjobs_workload_has_the_name_owner_and_podsets_kueues_integration_gives_it() -> None:
    job = model({"Master": worker(1), "Worker": worker(2)})
    body = tfjobs.for_tfjob(kueue.build_workload(job), job, "kubeflow.org/v1")
    # Kueue's GetWorkloadNameForOwnerWithGVK for TFJob ns/train with uid u-1
    assert body["metadata"]["name"] == tfjobs.workload_name(job)
    assert body["metadata"]["name"].startswith("tfjob-train-") and len(body["metadata"]["name"]) == 17
    owner = body["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["apiVersion"], owner["uid"]) == ("TFJob", "kubeflow.org/v1", "u-1")
    assert [p["name"] for p in body["spec"]["podSets"]] == ["master", "worker"]


def test_a_workload_named_by_replica_types_reads_as_roles() -> None:
    job = model({"Master": worker(1), "Worker": worker(2)})
    workload = tfjobs.for_tfjob(kueue.build_workload(job), job, "kubeflow.org/v1")
    workload["status"] = {"admission": {"clusterQueue": "cq", "podSetAssignments": [
        {"name": "master", "flavors": {"cpu": "a"}}, {"name": "worker", "flavors": {"cpu": "a"}}]},
        "admissionChecks": [{"name": "prov", "podSetUpdates": [{"name": "master", "labels": {"x": "1"}}]}]}
    view = tfjobs.as_roles(workload, job)
    assert [p["name"] for p in view["spec"]["podSets"]] == ["chief", "worker"]
    assert [a["name"] for a in view["status"]["admission"]["podSetAssignments"]] == ["chief", "worker"]
    assert view["status"]["admissionChecks"][0]["podSetUpdates"][0]["name"] == "chief"
    assert kueue.workload_matches(job, view)
    assert workload["spec"]["podSets"][0]["name"] == "master"  # the input is untouched


def test_a_queued_tfjobs_suspend_flag_is_left_to_admission() -> None:
    job = model({"Worker": worker(1)}, suspend=True)
    assert job["spec"]["suspend"] is True
    assert tfjobs.run_by_admission(job)["spec"]["suspend"] is False


def test_kueues_finalizer_is_dropped_from_an_adopted_workload_and_others_kept() -> None:
    workload = {"metadata": {"resourceVersion": "7", "finalizers": ["other/keep", tfjobs.RESOURCE_IN_USE]}}
    assert tfjobs.finalizer_patch(workload) == {"metadata": {"resourceVersion": "7", "finalizers": ["other/keep"]}}
    assert tfjobs.finalizer_patch({"metadata": {"resourceVersion": "7"}}) is None


def test_a_master_template_labelled_by_kueues_integration_runs_under_the_operator_without_conflict() -> None:
    master = worker(1)
    master["template"]["metadata"] = {"labels": {kueue.PODSET_LABEL: "master"}}
    job = tfjobs.run_by_admission(model({"Master": master, "Worker": worker(1)}))
    workload = tfjobs.for_tfjob(kueue.build_workload(job), job, "kubeflow.org/v1")
    workload["status"] = {"conditions": [], "admission": {"clusterQueue": "cq", "podSetAssignments": [
        {"name": "master", "flavors": {"cpu": "a"}}, {"name": "worker", "flavors": {"cpu": "a"}}]}}
    view = tfjobs.as_roles(workload, job)
    flavored = kueue.apply_flavors(job, view, {"chief": [], "worker": []})
    tfjobs.podset_label_fix(flavored, job)
    assert flavored["spec"]["chief"]["template"]["metadata"]["labels"][kueue.PODSET_LABEL] == "master"
    assert flavored["spec"]["worker"]["template"]["metadata"]["labels"][kueue.PODSET_LABEL] == "worker"
