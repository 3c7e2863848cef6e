"""Builders of Kubeflow TFJob dicts for tests, and the TFJob that means the same as a TensorFlowJob.

`tfjob_manifest(name, {"PS": replica(2), "Worker": replica(4)}, cleanPodPolicy="Running")` is a TFJob
written the way Kubeflow's examples are (replica types as keys, the run policy under
`spec.runPolicy`); `replica` is one replica spec. `as_tfjob(name, spec)` turns a TensorFlowJob
description (the keywords `tests.support.jobs.tfjob` takes: roles, cleanPodPolicy, backoffLimit, ...)
into the TFJob that behaves the same, TensorFlowJob's defaults written out where Kubeflow's differ, so
one lifecycle scenario runs for both kinds; `as_tfjob_patch` does the same for a spec patch.
"""

from __future__ import annotations

import copy
from typing import Any

from tests.support.jobs import DEVCLUSTER_IMAGE, PLACEHOLDER_IMAGE, role

API_VERSION = "kubeflow.org/v1"
KIND = "TFJob"
TYPE_OF_ROLE = {"chief": "Chief", "ps": "PS", "worker": "Worker", "evaluator": "Evaluator"}
RUN_POLICY = ("cleanPodPolicy", "ttlSecondsAfterFinished", "activeDeadlineSeconds", "backoffLimit", "suspend",
              "managedBy", "schedulingPolicy")
# TensorFlowJob's defaults where Kubeflow's differ (a role's restartPolicy is set by `as_tfjob`).
TENSORFLOWJOB_RUN_POLICY = {"cleanPodPolicy": "Running", "backoffLimit": 6}


def replica(replicas: int | None = 1, *, policy: str | None = None, image: str = PLACEHOLDER_IMAGE,
            **keywords: Any) -> dict[str, Any]:
    """A replica spec of one container named tensorflow (`role`'s other keywords apply); `replicas`
    None leaves the field out, as `policy` None leaves out restartPolicy."""
    spec = role(replicas if replicas is not None else 1, policy=policy, image=image, **keywords)
    if replicas is None:
        del spec["replicas"]
    return spec


def devcluster_replica(replicas: int = 1, **keywords: Any) -> dict[str, Any]:
    return replica(replicas, image=DEVCLUSTER_IMAGE, **keywords)


def tfjob_manifest(name: str, replica_specs: dict[str, Any], *, success_policy: str | None = None,
                   metadata: dict[str, Any] | None = None, **run_policy: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"tfReplicaSpecs": copy.deepcopy(replica_specs)}
    if run_policy:
        spec["runPolicy"] = dict(run_policy)
    if success_policy is not None:
        spec["successPolicy"] = success_policy
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": name, **(metadata or {})}, "spec": spec}


def as_tfjob(name: str, spec: dict[str, Any], **metadata: Any) -> dict[str, Any]:
    """The TFJob that behaves as the TensorFlowJob `tfjob(name, spec, **metadata)` does."""
    unknown = set(spec) - set(TYPE_OF_ROLE) - set(RUN_POLICY) - {"successPolicy"}
    if unknown:
        raise ValueError(f"a TFJob has no equivalent of {sorted(unknown)}")
    replicas = {}
    for role_name, replica_type in TYPE_OF_ROLE.items():
        if role_name in spec:
            replicas[replica_type] = {"restartPolicy": "OnFailure", **copy.deepcopy(spec[role_name])}
    run_policy = {**TENSORFLOWJOB_RUN_POLICY, **{k: spec[k] for k in RUN_POLICY if k in spec}}
    return tfjob_manifest(name, replicas, success_policy=spec.get("successPolicy"), metadata=metadata,
                          **run_policy)


def as_tfjob_patch(patch: dict[str, Any]) -> dict[str, Any]:
    """A TensorFlowJob spec patch ({"worker": {"replicas": 4}}, {"suspend": false}) for a TFJob."""
    out: dict[str, Any] = {}
    for key, value in patch.items():
        if key in TYPE_OF_ROLE:
            out.setdefault("tfReplicaSpecs", {})[TYPE_OF_ROLE[key]] = value
        elif key in RUN_POLICY:
            out.setdefault("runPolicy", {})[key] = value
        elif key == "successPolicy":
            out[key] = value
        else:
            raise ValueError(f"a TFJob has no equivalent of {key!r}")
    return out
