"""Pure builders: the exact headless Service and Pods the controller creates for a job.

Both `tfjob-operator render` and the reconciler call these, so what a user previews is what runs.
Input is a defaulted job dict (see `tfjob_api.defaults`); output is fresh dicts that share nothing
with the input (the user's template — often an informer-cache object — is never mutated). The
TensorFlow container also gets its role's stall probes (`stall`), the progress port in the pod that
reports progress (`spec.progress`) and the operator's start-up profiles (`profiles`), each only where
the template says nothing. The job's kind
(`controller.job.kinds`, a TensorFlowJob unless told) gives the owner reference and any labels of its
own: a TFJob's model gets the same objects, owned by the TFJob and with Kubeflow's labels too.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from controller.job.kinds import JobKind
from controller.job.profiles import Profile, apply_profiles, profiles_for
from controller.job.progress import with_progress_env
from controller.job.stall import with_stall_probes
from tfconfig import (
    DEFAULT_PORT,
    PORT_NAME,
    ROLES,
    SerializedCluster,
    pod_name,
    role_port,
    role_replicas,
    tf_container_index,
)
from tfjob_api.defaults import RESTART_POLICY
from tfjob_api.names import CLUSTER_HASH_ANNOTATION, JOB_NAME_LABEL, REPLICA_INDEX_LABEL, REPLICA_TYPE_LABEL

# Role restart policy → pod restartPolicy. Never/ExitCode leave the decision to the controller, and so
# does OnFailure in a job with failure rules (`controller.job.failurepolicy`: in-place restarts would hide
# the failures from them). Always keeps its in-place restarts, which the rules never see.
POD_RESTART_POLICY = {"OnFailure": "OnFailure", "Always": "Always", "Never": "Never", "ExitCode": "Never"}


def owned_metadata(job: Mapping[str, Any], name: str, labels: dict[str, str], annotations: dict[str, str],
                   kind: JobKind) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": job["metadata"].get("namespace") or "default",
        "labels": labels,
    }
    if annotations:
        metadata["annotations"] = annotations
    # Without a uid (an offline `render`) there is nothing to own yet; the controller always has one.
    if job["metadata"].get("uid"):
        metadata["ownerReferences"] = [kind.owner_reference(job)]
    return metadata


def service_ports(job: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One port per distinct TF port among the roles present (usually just 2222)."""
    spec = job["spec"]
    ports = sorted({role_port(spec[role]) for role in ROLES if role_replicas(spec, role) > 0}) or [DEFAULT_PORT]
    if len(ports) == 1:
        return [{"name": PORT_NAME, "port": ports[0], "targetPort": ports[0], "protocol": "TCP"}]
    return [{"name": f"tfjob-{port}", "port": port, "targetPort": port, "protocol": "TCP"} for port in ports]


def build_service(job: Mapping[str, Any], kind: JobKind) -> dict[str, Any]:
    """The job's single headless Service; pods resolve each other through it as `<pod>.<job>`."""
    name = job["metadata"]["name"]
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": owned_metadata(job, name, {JOB_NAME_LABEL: name, **kind.service_labels(job)}, {}, kind),
        "spec": {
            "clusterIP": "None",
            # Peers must resolve before they are ready: TF servers wait for each other at start.
            "publishNotReadyAddresses": True,
            "selector": {JOB_NAME_LABEL: name},
            "ports": service_ports(job),
        },
    }


def build_pod(job: Mapping[str, Any], role: str, index: int, cluster_domain: str,
              cluster: SerializedCluster | None, profiles: Sequence[Profile], kind: JobKind) -> dict[str, Any]:
    """One pod of one role, with its TF_CONFIG, identity labels (and its kind's), owner and DNS identity.
    `cluster` is `SerializedCluster.of(job, cluster_domain)`, when the caller builds many pods (None:
    serialised here); `profiles` are the operator's start-up profiles (the job's opt-out is honoured
    here). Every argument is required: a pod built without its kind would be owned by the wrong one."""
    job_name = job["metadata"]["name"]
    role_spec = job["spec"][role]
    template = copy.deepcopy(role_spec["template"])
    template_meta = template.get("metadata") or {}
    name = pod_name(job_name, role, index)

    labels = {
        **(template_meta.get("labels") or {}),
        JOB_NAME_LABEL: job_name,
        REPLICA_TYPE_LABEL: role,
        REPLICA_INDEX_LABEL: str(index),
        **kind.pod_labels(job, role, index),
    }
    cluster = cluster or SerializedCluster.of(job, cluster_domain)
    annotations = {**(template_meta.get("annotations") or {}), CLUSTER_HASH_ANNOTATION: cluster.hash}

    pod_spec = template["spec"]
    pod_spec["hostname"] = name
    pod_spec["subdomain"] = job_name
    pod_spec["restartPolicy"] = POD_RESTART_POLICY[role_spec.get("restartPolicy", RESTART_POLICY)]
    if pod_spec["restartPolicy"] == "OnFailure" and (job["spec"].get("failurePolicy") or {}).get("rules"):
        pod_spec["restartPolicy"] = "Never"  # every failure reaches the controller, so the rules see it
    containers = pod_spec["containers"]
    tf_index = tf_container_index(pod_spec)
    tf_container = _with_tf_settings(containers[tf_index], cluster.tf_config_json(role, index))
    tf_container = with_stall_probes(tf_container, role_spec.get("stall"))
    tf_container = with_progress_env(tf_container, job, role, index)
    containers[tf_index] = apply_profiles(tf_container, role, profiles_for(job, profiles))
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": owned_metadata(job, name, labels, annotations, kind),
        "spec": pod_spec,
    }


def _with_tf_settings(container: dict[str, Any], tf_config: str) -> dict[str, Any]:
    """Add the TF port when the container declares none, and set TF_CONFIG (ours wins)."""
    ports = list(container.get("ports") or [])
    if not any(p.get("name") == PORT_NAME or p.get("containerPort") == DEFAULT_PORT for p in ports):
        ports.append({"name": PORT_NAME, "containerPort": DEFAULT_PORT, "protocol": "TCP"})
    env = [e for e in container.get("env") or [] if e.get("name") != "TF_CONFIG"]
    env.append({"name": "TF_CONFIG", "value": tf_config})
    return {**container, "ports": ports, "env": env}


def desired_pod_keys(job: Mapping[str, Any]) -> list[tuple[str, int]]:
    """(role, index) of every pod the job should have, in a stable order."""
    spec = job["spec"]
    return [(role, index) for role in ROLES for index in range(role_replicas(spec, role))]


def build_pods(job: Mapping[str, Any], cluster_domain: str, profiles: Sequence[Profile],
               kind: JobKind) -> list[dict[str, Any]]:
    cluster = SerializedCluster.of(job, cluster_domain)
    return [build_pod(job, role, index, cluster_domain, cluster, profiles, kind)
            for role, index in desired_pod_keys(job)]
