"""The names of Kubeflow's TFJob API as Kubeflow's training operator v1.9 defined them.

API coordinates, the replica types (map keys of `spec.tfReplicaSpecs`) and the roles of the job model
they become, the `training.kubeflow.org/*` labels that Kubeflow's tools (its Python SDK, Kueue)
select pods by, and the `runPolicy.managedBy` values. Kept in one place for the same reason as
`tfjob_api.names`: the translation writes them and the controller reads them back. Part of `tfjob_api`
because the CRD's schema (`runPolicy.managedBy`'s enum) is built from the same values the
controller compares against.
"""

from __future__ import annotations

GROUP = "kubeflow.org"
VERSION = "v1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "TFJob"
PLURAL = "tfjobs"
CRD_NAME = f"{PLURAL}.{GROUP}"

# The discovery category this project's TFJob CRD carries (Kubeflow's own CRD has none): it tells
# `--kubeflow-tfjob=auto` that the served TFJob CRD is this project's, not Kubeflow's.
OPERATOR_CATEGORY = "tfjob-operator"

# Replica types in Kubeflow's spelling, and the role of the job model each one becomes. Master is
# Kubeflow's legacy name of the chief ("kept just for backwards compatibility"), served as the chief.
CHIEF, MASTER, PS, WORKER, EVALUATOR = "Chief", "Master", "PS", "Worker", "Evaluator"
REPLICA_TYPES = (CHIEF, MASTER, PS, WORKER, EVALUATOR)
ROLE_OF_TYPE = {CHIEF: "chief", MASTER: "chief", PS: "ps", WORKER: "worker", EVALUATOR: "evaluator"}
TYPE_OF_ROLE = {"chief": CHIEF, "ps": PS, "worker": WORKER, "evaluator": EVALUATOR}


def canonical_type(key: str) -> str | None:
    """The replica type a `tfReplicaSpecs` key names, compared case-insensitively as Kubeflow's
    defaulting does (`WORKER` and `worker` are Worker, `Ps` is PS); None for an unknown key."""
    return next((known for known in REPLICA_TYPES if known.lower() == key.lower()), None)


# Labels Kubeflow's operator puts on a TFJob's pods (and that its SDK selects pods by).
PREFIX = "training.kubeflow.org"
JOB_NAME_LABEL = f"{PREFIX}/job-name"
REPLICA_TYPE_LABEL = f"{PREFIX}/replica-type"  # the replica type in lower case
REPLICA_INDEX_LABEL = f"{PREFIX}/replica-index"
JOB_ROLE_LABEL = f"{PREFIX}/job-role"  # "master" on the chief (or master), else on worker 0
OPERATOR_NAME_LABEL = f"{PREFIX}/operator-name"
JOB_ROLE_MASTER = "master"
OPERATOR_NAME = "tfjob-operator"  # Kubeflow's operator writes "tfjob-controller": tells who made the pod

# runPolicy.managedBy: which controller runs a TFJob (immutable once set).
MANAGED_BY_KUBEFLOW = "kubeflow.org/training-operator"
MANAGED_BY_MULTIKUEUE = "kueue.x-k8s.io/multikueue"
MANAGED_BY_THIS_OPERATOR = "tensorflowjob.kubeflow.org/tfjob-operator"
MANAGED_BY_VALUES = (MANAGED_BY_KUBEFLOW, MANAGED_BY_MULTIKUEUE, MANAGED_BY_THIS_OPERATOR)


def role_selector(job_name: str, replica_type_name: str) -> str:
    """The label selector (string form) of one replica type's pods, in Kubeflow's labels."""
    return f"{JOB_NAME_LABEL}={job_name},{REPLICA_TYPE_LABEL}={replica_type_name.lower()}"
