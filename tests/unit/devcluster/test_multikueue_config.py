"""Unit tests of what devcluster/multikueue.py sets up for MultiKueue: the manager's Kueue
Configuration and the objects connecting it to its workers. Kueue runs them in
tests/integration/controller/multikueue/."""

from __future__ import annotations

import base64
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import yaml

from controller.kueue import tfjobs
from devcluster import multikueue
from devcluster.kueue import Kueue

PORTS = {"webhook": 19443, "health": 18081}


def test_the_manager_names_tensorflowjob_for_the_generic_adapter_under_the_capital_k_key(tmp_path: Path) -> None:
    cluster: Any = SimpleNamespace(dir=tmp_path)
    config = multikueue.ManagerKueue(cluster, bin_dir=tmp_path, frameworks=multikueue.FRAMEWORKS).configuration(PORTS)
    assert "multikueue" not in config  # the spelling Kueue 0.17's strict decoder refuses
    assert config["multiKueue"]["externalFrameworks"] == [{"name": "TensorFlowJob.v1.kubeflow.org"}]
    assert config["featureGates"] == {"VisibilityOnDemand": False, "MultiKueueAdaptersForCustomJobs": True}
    assert "kubeflow.org/tfjob" in config["integrations"]["frameworks"]  # the built-in adapter for TFJobs


def test_a_worker_runs_a_plain_kueue(tmp_path: Path) -> None:
    cluster: Any = SimpleNamespace(dir=tmp_path)
    assert "multiKueue" not in Kueue(cluster, bin_dir=tmp_path).configuration(PORTS)


def test_each_worker_gets_a_kubeconfig_secret_and_a_cluster_and_the_check_names_the_config() -> None:
    objects = multikueue.manager_objects({"w1": "kubeconfig-1", "w2": "kubeconfig-2"}, "mk")
    kinds = [(o["kind"], o["metadata"]["name"]) for o in objects]
    assert kinds == [("Secret", "multikueue-w1"), ("MultiKueueCluster", "w1"), ("Secret", "multikueue-w2"),
                     ("MultiKueueCluster", "w2"), ("MultiKueueConfig", "mk"), ("AdmissionCheck", "mk")]
    secret, cluster, _, _, config, check = objects
    assert secret["metadata"]["namespace"] == "kueue-system"
    assert base64.b64decode(secret["data"]["kubeconfig"]).decode() == "kubeconfig-1"
    assert cluster["spec"]["clusterSource"]["kubeConfig"] == {"locationType": "Secret", "location": "multikueue-w1"}
    assert config["spec"]["clusters"] == ["w1", "w2"]
    assert check["spec"] == {"controllerName": "kueue.x-k8s.io/multikueue",
                             "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "mk"}}


def test_only_the_managers_cluster_queue_carries_the_admission_check() -> None:
    manager = multikueue.queue_objects("cq", "ns", "lq", "4", "8Gi", "mk")[1]
    worker = multikueue.queue_objects("cq", "ns", "lq", "4", "8Gi")[1]
    assert manager["spec"]["admissionChecksStrategy"] == {"admissionChecks": [{"name": "mk"}]}
    assert "admissionChecksStrategy" not in worker["spec"]


def test_the_managers_workload_concurrency_is_set_only_when_asked() -> None:
    assert "controller" not in multikueue.manager_configuration({})
    config = multikueue.manager_configuration({}, workload_concurrency=8)
    assert config["controller"] == {"groupKindConcurrency": {"Workload.kueue.x-k8s.io": 8}}


def test_a_worker_started_without_kueues_tfjob_integration_leaves_tfjobs_to_the_operator(tmp_path: Path) -> None:
    cluster: Any = SimpleNamespace(dir=tmp_path)
    config = Kueue(cluster, bin_dir=tmp_path, frameworks=multikueue.WORKER_FRAMEWORKS_TFJOB_OFF).configuration(PORTS)
    published = {"data": {tfjobs.CONFIG_KEY: yaml.safe_dump(config)}}  # as the operator's `auto` reads it
    assert tfjobs.queues_tfjobs("auto", published)[0]
