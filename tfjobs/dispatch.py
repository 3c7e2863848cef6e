"""Where a job MultiKueue dispatched runs: read on the manager cluster, for `kubectl tfjob describe`.

On a MultiKueue manager a job naming `kueue.x-k8s.io/multikueue` as its controller
(`spec.managedBy` of a TensorFlowJob, `spec.runPolicy.managedBy` of a TFJob) has no pods: Kueue runs
a copy on a worker cluster and copies its status back. Without saying so, `describe` would list
every slot as missing. The worker is named by the job's Workload on the manager
(`status.clusterName`, set once a worker reserved quota), which Kueue labels with the job's UID
(`kueue.x-k8s.io/job-uid`). Pure, but for the one read `TfJobClient.placement` makes with
`workload_selector`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

MULTIKUEUE = "kueue.x-k8s.io/multikueue"
WORKLOADS = ("kueue.x-k8s.io", "v1beta2", "workloads")  # group, version, plural
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"


def dispatched(job: Mapping[str, Any]) -> bool:
    """Whether MultiKueue runs the (stored) job on a worker cluster, by the job's managedBy."""
    spec = job.get("spec") or {}
    managed_by = spec.get("managedBy") or (spec.get("runPolicy") or {}).get("managedBy")
    return managed_by == MULTIKUEUE


def workload_selector(job: Mapping[str, Any]) -> str:
    """The label selector of the job's Workloads."""
    return f"{JOB_UID_LABEL}={(job.get('metadata') or {}).get('uid', '')}"


def placement(workloads: Iterable[Mapping[str, Any]]) -> str:
    """The worker cluster named by the job's Workloads ('' while none is placed)."""
    for workload in workloads:
        cluster = ((workload.get("status") or {}).get("clusterName")) or ""
        if cluster:
            return str(cluster)
    return ""


def runs_on_line(cluster: str) -> str:
    """What `describe` says of a dispatched job."""
    where = f"worker cluster {cluster}" if cluster else "<no worker cluster yet>"
    return f"Runs on:      {where} (dispatched by MultiKueue: its pods are there)"
