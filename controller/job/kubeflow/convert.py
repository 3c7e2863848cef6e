"""`tfjob-operator convert`: a TFJob rewritten as the equivalent TensorFlowJob, and what does not
carry over.

Kubeflow's defaults for the TFJob kind are written out (a replica's `restartPolicy: Never`,
`cleanPodPolicy: None`, no backoff limit as the largest allowed `backoffLimit`), so the TensorFlowJob
behaves as the TFJob did under this operator; the run policy moves to the top of the spec, replica
types become roles (Master becomes the chief). The notes say, field by field, what has no
TensorFlowJob equivalent or behaves differently.

It is the job model (`model.to_model`, the translation the operator plans a TFJob by) written out as
a TensorFlowJob: what the model leaves implicit (no backoff limit, no success policy) is spelled
the way a TensorFlowJob says it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tfconfig import ROLES
from tfjob_api.kubeflow import MASTER
from tfjob_api.kubeflow_model import RUN_POLICY_FIELDS, ignored_fields, to_model
from tfjob_api.names import API_VERSION, KIND

NO_LIMIT = 2**31 - 1  # the largest int32: Kubeflow's "unset" backoffLimit, which means no limit
KEPT_METADATA = ("name", "namespace", "labels", "annotations")


@dataclass
class Conversion:
    job: dict[str, Any]
    notes: list[str] = field(default_factory=list)


def convert(tfjob: Mapping[str, Any]) -> Conversion:
    """The TensorFlowJob for a (valid) TFJob, and the notes on what does not carry over."""
    model = to_model(tfjob)
    spec = model["spec"]
    notes: list[str] = []
    if model["kubeflow"]["replicaTypes"].get("chief") == MASTER:
        notes.append("spec.tfReplicaSpecs.Master becomes spec.chief: its pod is <name>-chief-0 and its "
                     "TF_CONFIG task type is chief")
    out: dict[str, Any] = {role: spec[role] for role in ROLES if role in spec}
    out["cleanPodPolicy"] = spec["cleanPodPolicy"]
    out.update({name: spec[name] for name in RUN_POLICY_FIELDS if name in spec})
    if spec["backoffLimit"] is not None:
        out["backoffLimit"] = spec["backoffLimit"]
    else:
        out["backoffLimit"] = NO_LIMIT
        notes.append(f"spec.runPolicy.backoffLimit is unset (no limit for a TFJob): backoffLimit is {NO_LIMIT}, "
                     "the largest allowed (a TensorFlowJob's default is 6)")
    if spec["successPolicy"]:
        out["successPolicy"] = spec["successPolicy"]
    if spec["suspend"]:
        out["suspend"] = True
    if "schedulingPolicy" in spec:
        out["schedulingPolicy"] = spec["schedulingPolicy"]
    managed_by = ((tfjob.get("spec") or {}).get("runPolicy") or {}).get("managedBy")
    if managed_by:
        notes.append(f"spec.runPolicy.managedBy ({managed_by}) does not carry over: this operator "
                     "runs every TensorFlowJob")
    notes += ignored_fields(tfjob, gang_scheduling=True)  # schedulingPolicy carries over
    if "evaluator" in out:
        notes.append("the evaluator is not listed in TF_CONFIG's cluster (Kubeflow's operator listed it); its own "
                     "TF_CONFIG says task type evaluator")
    metadata = model["metadata"]
    kept = {k: metadata[k] for k in KEPT_METADATA if metadata.get(k)}
    return Conversion({"apiVersion": API_VERSION, "kind": KIND, "metadata": kept, "spec": out}, notes)
