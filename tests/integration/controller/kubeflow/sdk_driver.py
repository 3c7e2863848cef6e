"""Drive TFJobs with Kubeflow's own Python SDK (`kubeflow-training` 1.9), unchanged SDK calls.

Run by tests/integration/controller/kubeflow/test_kubeflow_sdk.py with the Python of a separate venv
(the SDK pins `kubernetes<36`; the operator pins 36.0.3, so the SDK is never one of its dependencies):

    python sdk_driver.py KUBECONFIG NAMESPACE ACTION NAME [ARGUMENT]

prints the answer as one JSON document. Actions: create (a TFJob of ARGUMENT workers, built with the
SDK's models as its users write them; its workers exit 0 after ARGUMENT seconds when given as
"workers:seconds"), get, list, wait (until condition ARGUMENT), succeeded, failed, pod-names (of
replica type and index ARGUMENT "Worker:1", or the master role "master"), scale (workers to ARGUMENT),
delete.
"""

from __future__ import annotations

import json
import sys

from kubeflow.training import (
    KubeflowOrgV1ReplicaSpec,
    KubeflowOrgV1RunPolicy,
    KubeflowOrgV1TFJob,
    KubeflowOrgV1TFJobSpec,
    TrainingClient,
)
from kubernetes import client as k8s

SIM_EXIT_CODE = "sim.tensorflowjob.kubeflow.org/exit-code"
SIM_EXIT_AFTER = "sim.tensorflowjob.kubeflow.org/exit-after"


def tfjob(name: str, namespace: str, argument: str) -> KubeflowOrgV1TFJob:
    workers, _, seconds = argument.partition(":")
    annotations = {SIM_EXIT_CODE: "0", SIM_EXIT_AFTER: f"{seconds}s"} if seconds else None
    container = k8s.V1Container(name="tensorflow", image="tensorflow/tensorflow:2.21.0",
                                command=["python", "/opt/model.py"])
    template = k8s.V1PodTemplateSpec(metadata=k8s.V1ObjectMeta(annotations=annotations),
                                     spec=k8s.V1PodSpec(containers=[container]))
    return KubeflowOrgV1TFJob(
        api_version="kubeflow.org/v1", kind="TFJob",
        metadata=k8s.V1ObjectMeta(name=name, namespace=namespace),
        spec=KubeflowOrgV1TFJobSpec(
            run_policy=KubeflowOrgV1RunPolicy(clean_pod_policy="None"),
            tf_replica_specs={"Worker": KubeflowOrgV1ReplicaSpec(replicas=int(workers), restart_policy="OnFailure",
                                                                 template=template)}))


def main(kubeconfig: str, namespace: str, action: str, name: str, argument: str = "") -> object:
    training = TrainingClient(config_file=kubeconfig, namespace=namespace, job_kind="TFJob")
    if action == "create":
        training.create_job(job=tfjob(name, namespace, argument))
        return "created"
    if action == "get":
        job = training.get_job(name)
        return {"name": job.metadata.name, "conditions": [c.type for c in job.status.conditions or []],
                "workers": job.spec.tf_replica_specs["Worker"].replicas}
    if action == "list":
        return sorted(job.metadata.name for job in training.list_jobs())
    if action == "wait":
        job = training.wait_for_job_conditions(name, expected_conditions={argument}, timeout=90, polling_interval=1)
        return [c.type for c in job.status.conditions if c.status == "True"]
    if action == "succeeded":
        return training.is_job_succeeded(name)
    if action == "failed":
        return training.is_job_failed(name)
    if action == "pod-names":
        if argument == "master":
            return training.get_job_pod_names(name, is_master=True)
        replica_type, _, index = argument.partition(":")
        return training.get_job_pod_names(name, replica_type=replica_type.lower(),
                                          replica_index=int(index) if index else None)
    if action == "scale":
        job = training.get_job(name)
        job.spec.tf_replica_specs["Worker"].replicas = int(argument)
        training.update_job(job, name)
        return "updated"
    if action == "delete":
        training.delete_job(name)
        return "deleted"
    raise SystemExit(f"unknown action {action}")


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:])))
