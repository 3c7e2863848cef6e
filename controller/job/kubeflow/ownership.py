"""Which TFJobs this operator runs: `spec.runPolicy.managedBy`, honoured so that two controllers
never fight over one job.

A TFJob that names this operator (`tensorflowjob.kubeflow.org/tfjob-operator`) is served; one that
names another controller (Kubeflow's `kubeflow.org/training-operator`, MultiKueue's
`kueue.x-k8s.io/multikueue`) never is, not even to write its status. A TFJob that names none belongs
to the cluster's default TFJob controller: this operator unless it runs with
`--kubeflow-tfjob-without-managed-by=leave`, as it does while Kubeflow's operator still runs beside
it during a hand-over (docs/kubeflow.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tfjob_api.kubeflow import MANAGED_BY_THIS_OPERATOR


def managed_by(tfjob: Mapping[str, Any]) -> str:
    """The TFJob's `spec.runPolicy.managedBy` ("" when unset)."""
    run_policy = (tfjob.get("spec") or {}).get("runPolicy") or {}
    return str(run_policy.get("managedBy") or "")


def serves(tfjob: Mapping[str, Any], serve_unmanaged: bool) -> bool:
    """Whether this operator runs the TFJob; `serve_unmanaged` decides for TFJobs that name no controller."""
    controller = managed_by(tfjob)
    return serve_unmanaged if not controller else controller == MANAGED_BY_THIS_OPERATOR
