"""The TensorFlowJob kind's names: its API coordinates, and the labels and annotations the operator
stamps on what it creates.

Kept in one place because the builders write them, the informers select on them, the reconciler
reads them back and `kubectl tfjob` selects a job's pods by them; a typo in any one of those would
silently orphan pods. Part of `tfjob_api` because the client must agree with the operator on every one.
"""

from __future__ import annotations

GROUP = "kubeflow.org"
VERSION = "v1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "TensorFlowJob"
PLURAL = "tensorflowjobs"

PREFIX = "tensorflowjob.kubeflow.org"
JOB_NAME_LABEL = f"{PREFIX}/job-name"
REPLICA_TYPE_LABEL = f"{PREFIX}/replica-type"
REPLICA_INDEX_LABEL = f"{PREFIX}/replica-index"
CLUSTER_HASH_ANNOTATION = f"{PREFIX}/cluster-spec-hash"

FIELD_MANAGER = "tfjob-operator"


def role_selector(job_name: str, role: str) -> str:
    """Label selector (string form) for the pods of one role of one job."""
    return f"{JOB_NAME_LABEL}={job_name},{REPLICA_TYPE_LABEL}={role}"
