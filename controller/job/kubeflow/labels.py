"""The Kubeflow labels on a TFJob's pods and Service, beside this operator's own.

A TFJob's pods carry the operator's labels (`tensorflowjob.kubeflow.org/*`: its informers, slots and
Service selector work the same for both kinds) and, on top, the ones Kubeflow's operator wrote, so
Kubeflow's tools keep finding them: its SDK's `get_job_pod_names` selects by job name, replica type,
replica index and `job-role: master`, and Kueue's topology-aware scheduling by the replica index.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tfconfig import role_replicas
from tfjob_api.kubeflow import (
    JOB_NAME_LABEL,
    JOB_ROLE_LABEL,
    JOB_ROLE_MASTER,
    OPERATOR_NAME,
    OPERATOR_NAME_LABEL,
    REPLICA_INDEX_LABEL,
    REPLICA_TYPE_LABEL,
    TYPE_OF_ROLE,
)


def replica_type(job: Mapping[str, Any], role: str) -> str:
    """The replica type of a role as the TFJob spells it (Chief or Master for the chief)."""
    return (job.get("kubeflow") or {}).get("replicaTypes", {}).get(role) or TYPE_OF_ROLE[role]


def is_master_role(job: Mapping[str, Any], role: str, index: int) -> bool:
    """Kubeflow's rule: the chief (or master) when the job has one, else worker 0."""
    if role == "chief":
        return True
    return role == "worker" and index == 0 and role_replicas(job["spec"], "chief") == 0


def pod_labels(job: Mapping[str, Any], role: str, index: int) -> dict[str, str]:
    labels = {
        OPERATOR_NAME_LABEL: OPERATOR_NAME,
        JOB_NAME_LABEL: job["metadata"]["name"],
        REPLICA_TYPE_LABEL: replica_type(job, role).lower(),
        REPLICA_INDEX_LABEL: str(index),
    }
    if is_master_role(job, role, index):
        labels[JOB_ROLE_LABEL] = JOB_ROLE_MASTER
    return labels


def service_labels(job: Mapping[str, Any]) -> dict[str, str]:
    return {OPERATOR_NAME_LABEL: OPERATOR_NAME, JOB_NAME_LABEL: job["metadata"]["name"]}
