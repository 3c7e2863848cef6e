"""`tfjob-operator convert`: a TFJob rewritten as the equivalent TensorFlowJob, and what does not
carry over.

Kubeflow's defaults for the TFJob kind are written out (a replica's `restartPolicy: Never`,
`cleanPodPolicy: None`, no backoff limit as the largest allowed `backoffLimit`), so the TensorFlowJob
behaves as the TFJob did under this operator; the run policy moves to the top of the spec, replica
types become roles (Master becomes the chief). The notes say, field by field, what has no
TensorFlowJob equivalent or behaves differently.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from api.defaults import TFJOB_CLEAN_POD_POLICY, TFJOB_RESTART_POLICY
from api.kubeflow import MASTER, ROLE_OF_TYPE
from api.names import API_VERSION, KIND
from controller.job.kubeflow.model import ignored_fields, replica_specs

NO_LIMIT = 2**31 - 1  # the largest int32: Kubeflow's "unset" backoffLimit, which means no limit
KEPT_METADATA = ("name", "namespace", "labels", "annotations")
ROLE_ORDER = ("chief", "ps", "worker", "evaluator")


@dataclass
class Conversion:
    job: dict[str, Any]
    notes: list[str] = field(default_factory=list)


def convert(tfjob: Mapping[str, Any]) -> Conversion:
    """The TensorFlowJob for a (valid) TFJob, and the notes on what does not carry over."""
    metadata = tfjob.get("metadata") or {}
    spec = tfjob.get("spec") or {}
    run_policy = spec.get("runPolicy") or {}
    notes: list[str] = []
    roles: dict[str, Any] = {}
    for replica_type, replica in replica_specs(tfjob).items():
        role = ROLE_OF_TYPE[replica_type]
        roles[role] = {"replicas": replica.get("replicas", 1),
                       "restartPolicy": replica.get("restartPolicy") or TFJOB_RESTART_POLICY,
                       "template": copy.deepcopy(dict(replica.get("template") or {}))}
        if replica_type == MASTER:
            notes.append("spec.tfReplicaSpecs.Master becomes spec.chief: its pod is <name>-chief-0 and its "
                         "TF_CONFIG task type is chief")
    out: dict[str, Any] = {role: roles[role] for role in ROLE_ORDER if role in roles}
    out["cleanPodPolicy"] = run_policy.get("cleanPodPolicy") or TFJOB_CLEAN_POD_POLICY
    for name in ("ttlSecondsAfterFinished", "activeDeadlineSeconds"):
        if run_policy.get(name) is not None:
            out[name] = run_policy[name]
    if run_policy.get("backoffLimit") is not None:
        out["backoffLimit"] = run_policy["backoffLimit"]
    else:
        out["backoffLimit"] = NO_LIMIT
        notes.append(f"spec.runPolicy.backoffLimit is unset (no limit for a TFJob): backoffLimit is {NO_LIMIT}, "
                     "the largest allowed (a TensorFlowJob's default is 6)")
    if spec.get("successPolicy"):
        out["successPolicy"] = spec["successPolicy"]
    if run_policy.get("suspend"):
        out["suspend"] = True
    if run_policy.get("managedBy"):
        notes.append(f"spec.runPolicy.managedBy ({run_policy['managedBy']}) does not carry over: this operator "
                     "runs every TensorFlowJob")
    notes += ignored_fields(tfjob)
    if "evaluator" in roles:
        notes.append("the evaluator is not listed in TF_CONFIG's cluster (Kubeflow's operator listed it); its own "
                     "TF_CONFIG says task type evaluator")
    kept = {k: copy.deepcopy(metadata[k]) for k in KEPT_METADATA if metadata.get(k)}
    return Conversion({"apiVersion": API_VERSION, "kind": KIND, "metadata": kept, "spec": out}, notes)
