"""`spec.managedBy` of a TensorFlowJob: which controller runs the job, and its schema.

Kueue's MultiKueue keys its generic adapter for custom kinds on `spec.managedBy`
(pkg/controller/admissionchecks/multikueue/externalframeworks/adapter.go): a job naming
`kueue.x-k8s.io/multikueue` on the manager cluster is copied to a worker cluster (without the field)
and only its status comes back. The operator on the manager must then leave the job alone, and the
API server must refuse anything else than the two controllers that can run a TensorFlowJob, so a typo
never leaves a job that nobody runs. Immutable, like Kubernetes Job's own `spec.managedBy`: a
controller that let go of a job cannot know what the other one left behind.

Kept apart from `tfjob_api.schema` because the controller compares against the same values the CRD's
enum is built from.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tfjob_api.kubeflow import MANAGED_BY_MULTIKUEUE, MANAGED_BY_THIS_OPERATOR

FIELD = "spec.managedBy"
VALUES = (MANAGED_BY_THIS_OPERATOR, MANAGED_BY_MULTIKUEUE)
"""The controllers that may run a TensorFlowJob: this operator (also when the field is unset) or
MultiKueue (the job is dispatched to a worker cluster)."""


def managed_by(job: Mapping[str, Any]) -> str:
    """The job's `spec.managedBy` ("" when unset)."""
    return str((job.get("spec") or {}).get("managedBy") or "")


def is_ours(job: Mapping[str, Any]) -> bool:
    """Whether this operator runs the job's pods (the field unset or naming this operator)."""
    return managed_by(job) in ("", MANAGED_BY_THIS_OPERATOR)


def is_dispatched(job: Mapping[str, Any]) -> bool:
    """Whether MultiKueue runs the job on a worker cluster (this cluster is its manager)."""
    return managed_by(job) == MANAGED_BY_MULTIKUEUE


def schema() -> dict[str, Any]:
    """The property's OpenAPI schema (its immutability is `immutable_rule`, on `spec`)."""
    return {
        "type": "string", "enum": list(VALUES),
        "description": f"The controller that runs the job: {MANAGED_BY_THIS_OPERATOR} (the default, also when "
        f"unset) or {MANAGED_BY_MULTIKUEUE} (Kueue's MultiKueue runs it on a worker cluster and copies its "
        "status back; the operator here creates its Workload and nothing else). Immutable.",
    }


def immutable_rule() -> dict[str, Any]:
    """The CEL transition rule on `spec` that keeps `managedBy` as it was created (set or unset)."""
    value = "(has({0}.managedBy) ? {0}.managedBy : '')"
    return {"rule": f"{value.format('self')} == {value.format('oldSelf')}", "message": f"{FIELD} is immutable"}
