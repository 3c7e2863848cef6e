"""TF_CONFIG: the cluster description every TensorFlow process of a job reads.

Pure functions over plain job dicts. The rules (docs/design.md §3): addresses are the pods' stable DNS
names behind the job's headless Service; roles with zero replicas are left out; the evaluator is
never part of `cluster` (it only runs side-car evaluation and is not a server); keys are sorted so
that every pod of a job sees the byte-identical cluster, and its hash tells stale pods apart.
"""

from tfconfig.cluster import (
    CLUSTER_ROLES,
    ROLES,
    SerializedCluster,
    cluster_spec,
    cluster_spec_hash,
    pod_address,
    pod_name,
    role_replicas,
    tf_config,
    tf_config_json,
)
from tfconfig.ports import DEFAULT_PORT, PORT_NAME, TF_CONTAINER, role_port, tf_container_index

__all__ = [
    "CLUSTER_ROLES",
    "DEFAULT_PORT",
    "PORT_NAME",
    "ROLES",
    "TF_CONTAINER",
    "SerializedCluster",
    "cluster_spec",
    "cluster_spec_hash",
    "pod_address",
    "pod_name",
    "role_port",
    "role_replicas",
    "tf_config",
    "tf_config_json",
    "tf_container_index",
]
