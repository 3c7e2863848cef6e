"""A TFJob as the job model the planner reads, with Kubeflow's defaults for the TFJob kind.

`to_model(tfjob)` returns a dict shaped like a defaulted TensorFlowJob (roles `chief`, `ps`,
`worker`, `evaluator`; `cleanPodPolicy`, `backoffLimit`, ... at the top of the spec) that keeps the
TFJob's identity (`apiVersion`, `kind: TFJob`, its metadata), so owner references and events name
the TFJob, plus one entry of its own: `kubeflow.replicaTypes`, the replica type in the user's
spelling for each role (Chief or Master), which the pod labels and the status are keyed by.

Kubeflow's defaults, applied here rather than by the API server (as Kubeflow's operator does on every
reconcile), where they differ from TensorFlowJob's:
* a replica's `restartPolicy` is `Never` (TensorFlowJob: OnFailure);
* `runPolicy.cleanPodPolicy` is `None` (TensorFlowJob: Running);
* `runPolicy.backoffLimit` unset means no limit (TensorFlowJob: 6); the model says `None`;
* replica types are matched case-insensitively (`WORKER`, `worker` are Worker), and Master is the
  chief.
`runPolicy.schedulingPolicy` becomes the model's `spec.schedulingPolicy` (gang scheduling,
`controller.job.gang`). The rest is the same: `replicas` 1, `successPolicy` "", `suspend` false,
and `restartScope` is Pod (TFJob has no such field). Unknown replica types are left out here; validation names them.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from tfjob_api.defaults import TFJOB_CLEAN_POD_POLICY, TFJOB_RESTART_POLICY
from tfjob_api.kubeflow import ROLE_OF_TYPE, canonical_type
from tfjob_api.kubeflow_status import to_model_status

RUN_POLICY_FIELDS = ("ttlSecondsAfterFinished", "activeDeadlineSeconds")
NO_GANG_SCHEDULER = ("it configures gang scheduling (a Volcano or scheduler-plugins PodGroup), and the operator "
                     "runs without --gang-scheduler; queue jobs with Kueue, or run it with a gang scheduler")


def replica_specs(tfjob: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """`spec.tfReplicaSpecs` with canonical replica types as keys (unknown keys left out)."""
    specs = ((tfjob.get("spec") or {}).get("tfReplicaSpecs") or {})
    found: dict[str, Mapping[str, Any]] = {}
    for key, value in specs.items() if isinstance(specs, Mapping) else ():
        replica_type = canonical_type(str(key))
        if replica_type is not None and isinstance(value, Mapping):
            found[replica_type] = value
    return found


def replica_types(tfjob: Mapping[str, Any]) -> dict[str, str]:
    """The replica type (Kubeflow's spelling) of each role the job has: {"chief": "Master", ...}."""
    return {ROLE_OF_TYPE[replica_type]: replica_type for replica_type in replica_specs(tfjob)}


def to_model(tfjob: Mapping[str, Any]) -> dict[str, Any]:
    """The job model of a TFJob (a new dict; the TFJob, often an informer-cache object, is untouched)."""
    spec = tfjob.get("spec") or {}
    run_policy = spec.get("runPolicy") or {}
    model_spec: dict[str, Any] = {}
    for replica_type, replica in replica_specs(tfjob).items():
        model_spec[ROLE_OF_TYPE[replica_type]] = {
            "replicas": replica.get("replicas", 1),
            "restartPolicy": replica.get("restartPolicy") or TFJOB_RESTART_POLICY,
            "template": copy.deepcopy(dict(replica.get("template") or {})),
        }
    model_spec["cleanPodPolicy"] = run_policy.get("cleanPodPolicy") or TFJOB_CLEAN_POD_POLICY
    for field in RUN_POLICY_FIELDS:
        if run_policy.get(field) is not None:
            model_spec[field] = run_policy[field]
    model_spec["backoffLimit"] = run_policy.get("backoffLimit")  # None: no limit
    model_spec["successPolicy"] = spec.get("successPolicy") or ""
    model_spec["restartScope"] = "Pod"
    model_spec["suspend"] = bool(run_policy.get("suspend", False))
    if run_policy.get("schedulingPolicy"):
        model_spec["schedulingPolicy"] = copy.deepcopy(dict(run_policy["schedulingPolicy"]))
    return {
        "apiVersion": tfjob.get("apiVersion"),
        "kind": tfjob.get("kind"),
        "metadata": copy.deepcopy(dict(tfjob.get("metadata") or {})),
        "spec": model_spec,
        "status": to_model_status(tfjob.get("status") or {}),
        "kubeflow": {"replicaTypes": replica_types(tfjob)},
    }


def ignored_fields(tfjob: Mapping[str, Any], gang_scheduling: bool = False) -> list[str]:
    """The TFJob's fields that are accepted but not used by this operator, each with why
    (`gang_scheduling`: whether the operator runs with a gang scheduler, which uses schedulingPolicy)."""
    spec = tfjob.get("spec") or {}
    ignored = []
    if (spec.get("runPolicy") or {}).get("schedulingPolicy") and not gang_scheduling:
        ignored.append(f"spec.runPolicy.schedulingPolicy is not used: {NO_GANG_SCHEDULER}")
    if spec.get("enableDynamicWorker"):
        ignored.append("spec.enableDynamicWorker is not used: every pod always gets the complete TF_CONFIG, "
                       "rewritten when replicas change, and worker failures follow their restartPolicy")
    return ignored
