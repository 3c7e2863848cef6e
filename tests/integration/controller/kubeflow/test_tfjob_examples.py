"""Kubeflow TFJobs written the way Kubeflow's examples are, `kubectl apply`-ed unchanged, run to
Succeeded by this operator: parameter servers and workers, workers only (MultiWorkerMirroredStrategy),
a chief with an evaluator. Their pods get TF_CONFIG by the same rules as a TensorFlowJob's (the
evaluator outside `cluster`) and Kubeflow's labels; the TFJob's status is the one Kubeflow writes.
(The `sim.tensorflowjob.kubeflow.org/*` annotations make the devcluster's simulated containers exit.)"""

from __future__ import annotations

import json
from typing import Any

from tests.support.polling import wait_for

PARAMETER_SERVERS = """
apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: dist-mnist
spec:
  tfReplicaSpecs:
    PS:
      replicas: 2
      restartPolicy: Never
      template:
        spec:
          containers:
          - name: tensorflow
            image: kubeflow/tf-dist-mnist-test:latest
    Worker:
      replicas: 4
      restartPolicy: Never
      template:
        metadata:
          annotations:
            sim.tensorflowjob.kubeflow.org/exit-code: "0"
            sim.tensorflowjob.kubeflow.org/exit-after: "6s"
        spec:
          containers:
          - name: tensorflow
            image: kubeflow/tf-dist-mnist-test:latest
"""

MULTI_WORKER_MIRRORED = """
apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: multi-worker
spec:
  runPolicy:
    cleanPodPolicy: None
  tfReplicaSpecs:
    Worker:
      replicas: 3
      restartPolicy: OnFailure
      template:
        metadata:
          annotations:
            sim.tensorflowjob.kubeflow.org/exit-code: "0"
            sim.tensorflowjob.kubeflow.org/exit-after: "6s"
        spec:
          containers:
          - name: tensorflow
            image: kubeflow/multi-worker-strategy:v1.0
            command: ["python", "/keras_multi_worker_mirrored_strategy.py"]
"""

CHIEF_AND_EVALUATOR = """
apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: estimator
spec:
  tfReplicaSpecs:
    Chief:
      replicas: 1
      restartPolicy: ExitCode
      template:
        metadata:
          annotations:
            sim.tensorflowjob.kubeflow.org/exit-code: "0"
            sim.tensorflowjob.kubeflow.org/exit-after: "6s"
        spec:
          containers:
          - name: tensorflow
            image: tensorflow/tensorflow:2.21.0
    Worker:
      replicas: 2
      restartPolicy: OnFailure
      template:
        spec:
          containers:
          - name: tensorflow
            image: tensorflow/tensorflow:2.21.0
    Evaluator:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          containers:
          - name: tensorflow
            image: tensorflow/tensorflow:2.21.0
"""


def tf_config(pod: dict[str, Any]) -> dict[str, Any]:
    container = next(c for c in pod["spec"]["containers"] if c["name"] == "tensorflow")
    return json.loads(next(e["value"] for e in container["env"] if e["name"] == "TF_CONFIG"))


def run_until_running(tfjobs: Any, manifest: str, name: str, pods: int) -> list[dict[str, Any]]:
    applied = tfjobs.apply_yaml(manifest)
    assert applied.returncode == 0, applied.stderr
    tfjobs.wait_condition(name, "Running", timeout=60)
    return tfjobs.wait_pods(name, pods, phase=None)


def clusters(pods: list[dict[str, Any]]) -> set[str]:
    return {json.dumps(tf_config(p)["cluster"], sort_keys=True) for p in pods}


def test_parameter_servers_and_workers_run_to_succeeded(kubeflow_tfjobs: Any) -> None:
    pods = run_until_running(kubeflow_tfjobs, PARAMETER_SERVERS, "dist-mnist", 6)
    [cluster] = clusters(pods)
    ns = kubeflow_tfjobs.namespace
    assert json.loads(cluster) == {
        "ps": [f"dist-mnist-ps-{i}.dist-mnist.{ns}.svc:2222" for i in range(2)],
        "worker": [f"dist-mnist-worker-{i}.dist-mnist.{ns}.svc:2222" for i in range(4)]}
    kubeflow_tfjobs.wait_condition("dist-mnist", "Succeeded", timeout=60)
    status = kubeflow_tfjobs.stored_status("dist-mnist")
    last = status["conditions"][-1]
    assert (last["type"], last["status"], last["reason"]) == ("Succeeded", "True", "TFJobSucceeded")
    assert status["startTime"] and status["completionTime"]
    # Worker 0 decides; the other workers exit at about the same time, counted as their exits arrive.
    wait_for(lambda: kubeflow_tfjobs.stored_status("dist-mnist")["replicaStatuses"]["Worker"].get("succeeded") == 4,
             30, "all four workers counted as succeeded")


def test_workers_only_multi_worker_mirrored_runs_to_succeeded(kubeflow_tfjobs: Any) -> None:
    pods = run_until_running(kubeflow_tfjobs, MULTI_WORKER_MIRRORED, "multi-worker", 3)
    assert [json.loads(c) for c in clusters(pods)] == [
        {"worker": [f"multi-worker-worker-{i}.multi-worker.{kubeflow_tfjobs.namespace}.svc:2222" for i in range(3)]}]
    assert sorted((tf_config(p)["task"]["type"], tf_config(p)["task"]["index"]) for p in pods) == [
        ("worker", 0), ("worker", 1), ("worker", 2)]
    kubeflow_tfjobs.wait_condition("multi-worker", "Succeeded", timeout=60)


def test_chief_with_an_evaluator_keeps_the_evaluator_out_of_the_cluster(kubeflow_tfjobs: Any) -> None:
    pods = run_until_running(kubeflow_tfjobs, CHIEF_AND_EVALUATOR, "estimator", 4)
    [cluster] = clusters(pods)
    assert sorted(json.loads(cluster)) == ["chief", "worker"]
    evaluator = next(p for p in pods if p["metadata"]["name"] == "estimator-evaluator-0")
    assert tf_config(evaluator)["task"] == {"type": "evaluator", "index": 0}
    kubeflow_tfjobs.wait_condition("estimator", "Succeeded", timeout=60)


def test_a_tfjobs_pods_carry_kubeflows_labels_and_belong_to_the_tfjob(kubeflow_tfjobs: Any) -> None:
    pods = run_until_running(kubeflow_tfjobs, CHIEF_AND_EVALUATOR, "estimator", 4)
    tfjob = kubeflow_tfjobs.get("estimator")
    roles = {}
    for pod in pods:
        labels = pod["metadata"]["labels"]
        owner = pod["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["uid"]) == ("TFJob", tfjob["metadata"]["uid"])
        assert labels["training.kubeflow.org/job-name"] == "estimator"
        roles[pod["metadata"]["name"]] = (labels["training.kubeflow.org/replica-type"],
                                          labels["training.kubeflow.org/replica-index"],
                                          labels.get("training.kubeflow.org/job-role"))
    assert roles == {"estimator-chief-0": ("chief", "0", "master"), "estimator-worker-0": ("worker", "0", None),
                     "estimator-worker-1": ("worker", "1", None), "estimator-evaluator-0": ("evaluator", "0", None)}


def test_kubectl_get_tfjob_shows_kubeflows_state_column(kubeflow_tfjobs: Any) -> None:
    run_until_running(kubeflow_tfjobs, MULTI_WORKER_MIRRORED, "multi-worker", 3)
    table = kubeflow_tfjobs.cluster.kubectl("get", "tfjob", "multi-worker", "-n", kubeflow_tfjobs.namespace).stdout
    header, row = table.splitlines()[:2]
    assert header.split() == ["NAME", "STATE", "AGE"]
    assert row.split()[:2] == ["multi-worker", "Running"]
