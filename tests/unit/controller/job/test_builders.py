"""The exact Service and Pods built for a job (docs/design.md §3)."""

from __future__ import annotations

import copy
import json
from typing import Any

from controller.job.builders import build_pod, build_pods, build_service, desired_pod_keys
from controller.job.kinds import TENSORFLOWJOB
from tests.support.jobs import tfjob
from tfjob_api.defaults import apply_defaults


def realistic_job() -> dict[str, Any]:
    tf = {
        "name": "tensorflow",
        "image": "tensorflow/tensorflow:2.21.0",
        "env": [{"name": "EPOCHS", "value": "3"}, {"name": "TF_CONFIG", "value": "user-set"}],
        "volumeMounts": [{"name": "data", "mountPath": "/data"}],
        "resources": {"limits": {"nvidia.com/gpu": 1, "cpu": "4"}},
        "readinessProbe": {"tcpSocket": {"port": 2222}},
    }
    template = {
        "metadata": {"labels": {"team": "vision"}, "annotations": {"note": "x"}},
        "spec": {
            "containers": [{"name": "sidecar", "image": "busybox"}, tf],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "mnist-data"}}],
            "nodeSelector": {"gpu": "a100"},
            "tolerations": [{"key": "gpu", "operator": "Exists"}],
        },
    }
    return apply_defaults(tfjob("mnist", {
        "chief": {"template": copy.deepcopy(template), "restartPolicy": "ExitCode"},
        "ps": {"replicas": 2, "template": copy.deepcopy(template)},
        "worker": {"replicas": 4, "template": copy.deepcopy(template), "restartPolicy": "Never"},
        "evaluator": {"template": copy.deepcopy(template)},
    }, namespace="team-a", uid="uid-1"))


def test_service_is_headless_publishes_not_ready_and_selects_the_job() -> None:
    service = build_service(realistic_job(), TENSORFLOWJOB)
    assert service == {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "mnist",
            "namespace": "team-a",
            "labels": {"tensorflowjob.kubeflow.org/job-name": "mnist"},
            "ownerReferences": [{
                "apiVersion": "kubeflow.org/v1", "kind": "TensorFlowJob", "name": "mnist", "uid": "uid-1",
                "controller": True, "blockOwnerDeletion": True,
            }],
        },
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": {"tensorflowjob.kubeflow.org/job-name": "mnist"},
            "ports": [{"name": "tfjob-port", "port": 2222, "targetPort": 2222, "protocol": "TCP"}],
        },
    }


def test_full_pod_output_for_a_realistic_worker() -> None:
    job = realistic_job()
    pod = build_pod(job, "worker", 3, "", None, (), TENSORFLOWJOB)
    tf_config = json.loads(pod["spec"]["containers"][1]["env"][-1]["value"])
    assert pod["metadata"] == {
        "name": "mnist-worker-3",
        "namespace": "team-a",
        "labels": {
            "team": "vision",
            "tensorflowjob.kubeflow.org/job-name": "mnist",
            "tensorflowjob.kubeflow.org/replica-type": "worker",
            "tensorflowjob.kubeflow.org/replica-index": "3",
        },
        "annotations": {"note": "x", "tensorflowjob.kubeflow.org/cluster-spec-hash": pod["metadata"]["annotations"][
            "tensorflowjob.kubeflow.org/cluster-spec-hash"]},
        "ownerReferences": [{
            "apiVersion": "kubeflow.org/v1", "kind": "TensorFlowJob", "name": "mnist", "uid": "uid-1",
            "controller": True, "blockOwnerDeletion": True,
        }],
    }
    spec = pod["spec"]
    assert spec["hostname"] == "mnist-worker-3"
    assert spec["subdomain"] == "mnist"
    assert spec["restartPolicy"] == "Never"
    assert spec["nodeSelector"] == {"gpu": "a100"}
    assert spec["tolerations"] == [{"key": "gpu", "operator": "Exists"}]
    assert spec["volumes"] == [{"name": "data", "persistentVolumeClaim": {"claimName": "mnist-data"}}]
    sidecar, tf = spec["containers"]
    assert sidecar == {"name": "sidecar", "image": "busybox"}
    assert tf["env"][0] == {"name": "EPOCHS", "value": "3"}
    assert [e["name"] for e in tf["env"]] == ["EPOCHS", "TF_CONFIG"]
    assert tf["ports"] == [{"name": "tfjob-port", "containerPort": 2222, "protocol": "TCP"}]
    assert tf["resources"] == {"limits": {"nvidia.com/gpu": 1, "cpu": "4"}}
    assert tf["readinessProbe"] == {"tcpSocket": {"port": 2222}}
    assert tf_config["task"] == {"type": "worker", "index": 3}
    assert sorted(tf_config["cluster"]) == ["chief", "ps", "worker"]


def test_restart_policy_mapping_exit_code_and_never_become_never() -> None:
    job = realistic_job()
    assert build_pod(job, "chief", 0, "", None, (), TENSORFLOWJOB)["spec"]["restartPolicy"] == "Never"  # ExitCode
    assert build_pod(job, "worker", 0, "", None, (), TENSORFLOWJOB)["spec"]["restartPolicy"] == "Never"
    assert build_pod(job, "ps", 0, "", None, (), TENSORFLOWJOB)["spec"]["restartPolicy"] == "OnFailure"  # the default


def test_existing_tfjob_port_is_not_duplicated() -> None:
    job = realistic_job()
    job["spec"]["ps"]["template"]["spec"]["containers"][1]["ports"] = [{"name": "tfjob-port", "containerPort": 3000}]
    pod = build_pod(job, "ps", 0, "", None, (), TENSORFLOWJOB)
    assert pod["spec"]["containers"][1]["ports"] == [{"name": "tfjob-port", "containerPort": 3000}]
    assert "mnist-ps-0.mnist.team-a.svc:3000" in pod["spec"]["containers"][1]["env"][-1]["value"]


def test_distinct_role_ports_give_one_named_service_port_each() -> None:
    job = realistic_job()
    job["spec"]["ps"]["template"]["spec"]["containers"][1]["ports"] = [{"name": "tfjob-port", "containerPort": 3000}]
    assert [p["name"] for p in build_service(job, TENSORFLOWJOB)["spec"]["ports"]] == ["tfjob-2222", "tfjob-3000"]


def test_builders_never_mutate_the_job() -> None:
    job = realistic_job()
    before = copy.deepcopy(job)
    build_pods(job, "", (), TENSORFLOWJOB)
    build_service(job, TENSORFLOWJOB)
    assert job == before


def test_one_pod_per_replica_in_role_order() -> None:
    names = [p["metadata"]["name"] for p in build_pods(realistic_job(), "", (), TENSORFLOWJOB)]
    assert names == [
        "mnist-chief-0", "mnist-ps-0", "mnist-ps-1",
        "mnist-worker-0", "mnist-worker-1", "mnist-worker-2", "mnist-worker-3", "mnist-evaluator-0",
    ]
    assert desired_pod_keys(realistic_job())[0] == ("chief", 0)


def test_first_container_gets_tf_config_when_none_is_named_tensorflow() -> None:
    two_containers = {"spec": {"containers": [{"name": "main", "image": "x"}, {"name": "b", "image": "y"}]}}
    job = apply_defaults(tfjob("j", {"worker": {"template": two_containers}}))
    pod = build_pod(job, "worker", 0, "", None, (), TENSORFLOWJOB)
    assert pod["spec"]["containers"][0]["env"][0]["name"] == "TF_CONFIG"
    assert "env" not in pod["spec"]["containers"][1]
    assert pod["metadata"]["namespace"] == "default"
    assert "ownerReferences" not in pod["metadata"]  # no uid yet: an offline render


def test_all_pods_of_a_job_carry_the_same_cluster_hash() -> None:
    hashes = {p["metadata"]["annotations"]["tensorflowjob.kubeflow.org/cluster-spec-hash"] for p in build_pods(realistic_job(), "", (), TENSORFLOWJOB)}
    assert len(hashes) == 1
