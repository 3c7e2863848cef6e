"""Pod names, DNS addresses, the cluster spec, each pod's TF_CONFIG and the spec's hash.

A pod is `<job>-<role>-<index>`; with `hostname` = its name and `subdomain` = the job (whose
headless Service has the same name) it resolves as `<pod>.<job>.<namespace>.svc[.<domain>]`.
The cluster domain is optional because `<...>.svc` resolves through the pod's DNS search path in
every cluster, while a wrong explicit domain breaks everything.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tfconfig.ports import role_port

# Every role in a stable order; the evaluator is a role but never a member of `cluster`.
ROLES = ("chief", "ps", "worker", "evaluator")
CLUSTER_ROLES = ("chief", "ps", "worker")


def role_replicas(spec: Mapping[str, Any], role: str) -> int:
    """Replicas of a role: 0 when the role is absent, 1 when it omits `replicas` (the CRD default)."""
    role_spec = spec.get(role)
    if not isinstance(role_spec, Mapping):
        return 0
    replicas = role_spec.get("replicas", 1)
    return replicas if isinstance(replicas, int) and replicas > 0 else 0


def pod_name(job_name: str, role: str, index: int) -> str:
    return f"{job_name}-{role}-{index}"


def pod_address(job_name: str, namespace: str, role: str, index: int, port: int, cluster_domain: str = "") -> str:
    host = f"{pod_name(job_name, role, index)}.{job_name}.{namespace}.svc"
    if cluster_domain:
        host = f"{host}.{cluster_domain.strip('.')}"
    return f"{host}:{port}"


def _job_identity(job: Mapping[str, Any]) -> tuple[str, str, Mapping[str, Any]]:
    metadata = job.get("metadata") or {}
    return metadata["name"], metadata.get("namespace") or "default", job.get("spec") or {}


def cluster_spec(job: Mapping[str, Any], cluster_domain: str = "") -> dict[str, list[str]]:
    """`{"chief": [...], "ps": [...], "worker": [...]}` with empty roles and the evaluator left out."""
    name, namespace, spec = _job_identity(job)
    cluster: dict[str, list[str]] = {}
    for role in CLUSTER_ROLES:
        replicas = role_replicas(spec, role)
        if replicas == 0:
            continue
        port = role_port(spec[role])
        cluster[role] = [pod_address(name, namespace, role, i, port, cluster_domain) for i in range(replicas)]
    return cluster


def tf_config(job: Mapping[str, Any], role: str, index: int, cluster_domain: str = "") -> dict[str, Any]:
    """The TF_CONFIG of one pod: the shared cluster plus this pod's own task."""
    return {
        "cluster": cluster_spec(job, cluster_domain),
        "task": {"type": role, "index": index},
        "environment": "cloud",
    }


def tf_config_json(job: Mapping[str, Any], role: str, index: int, cluster_domain: str = "") -> str:
    """TF_CONFIG serialised compactly with sorted keys, so equal configs are equal strings."""
    return SerializedCluster.of(job, cluster_domain).tf_config_json(role, index)


def cluster_spec_hash(cluster: Mapping[str, list[str]]) -> str:
    """A short stable digest of a cluster spec; it changes exactly when the topology does."""
    return _digest(_canonical(cluster))


@dataclass(frozen=True)
class SerializedCluster:
    """A job's cluster spec serialised once, with its hash: every pod's TF_CONFIG embeds the same
    bytes, so a job of N pods costs one serialisation, not N (each of N addresses: O(N²) for a
    1 000-worker job)."""

    json: str
    hash: str

    @classmethod
    def of(cls, job: Mapping[str, Any], cluster_domain: str = "") -> SerializedCluster:
        text = _canonical(cluster_spec(job, cluster_domain))
        return cls(text, _digest(text))

    def tf_config_json(self, role: str, index: int) -> str:
        """Exactly `_canonical(tf_config(...))`: the keys in sorted order around the shared cluster."""
        task = f'{{"index":{int(index)},"type":{json.dumps(role)}}}'
        return f'{{"cluster":{self.json},"environment":"cloud","task":{task}}}'


def _digest(canonical_json: str) -> str:
    return hashlib.sha256(canonical_json.encode()).hexdigest()[:16]


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))
