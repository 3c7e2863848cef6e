"""Operator bugs the chaos suite found, each pinned by a minimal deterministic test.

These tests fail until the bug they name is fixed (the fixes belong in controller/ or informers/,
which this suite does not touch); each docstring gives the evidence from the chaos run and the
proposed fix. They need no cluster.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from controller.builders import build_pods, build_service
from controller.defaults import apply_defaults
from controller.plan import FORCE_DELETE_AFTER, plan_job
from controller.timeutil import format_time

NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)


def job_with_workers(workers: int) -> dict[str, Any]:
    return apply_defaults({
        "apiVersion": "kubeflow.org/v1", "kind": "TensorFlowJob",
        "metadata": {"name": "j", "namespace": "ns", "uid": "job-uid", "generation": 1},
        "spec": {"worker": {"replicas": workers, "restartPolicy": "OnFailure",
                            "template": {"spec": {"containers": [{"name": "tensorflow", "image": "tf"}]}}}},
    })


def pods_stuck_on_a_dead_node(job: dict[str, Any]) -> list[dict[str, Any]]:
    """Every pod Running on node `dead`, evicted long enough ago to be force-deleted now."""
    evicted = format_time(NOW - timedelta(seconds=FORCE_DELETE_AFTER + 5))
    pods = build_pods(job)
    for number, pod in enumerate(pods):
        pod["metadata"].update(uid=f"pod-uid-{number}", deletionTimestamp=evicted)
        pod["spec"]["nodeName"] = "dead"
        pod["status"] = {"phase": "Running"}
    return pods


def test_a_pod_already_force_deleted_is_not_force_deleted_again_while_the_cache_lags() -> None:
    """Fault 4 (node lost) evidence: two pods of job n1 stuck on the lost node were force-deleted in
    one reconcile; the DELETED event of the first re-queued the job before the second's arrived, and
    the next reconcile force-deleted the second again ("deleted": 2, then "deleted": 1 in the
    operator log; `tfjob_pods_deleted_total{reason="NodeNotReady"}` rose by 4 for 3 lost pods).
    The UID precondition turns the repeat into a harmless 404, but it is a wasted API call, and the
    reconciler counts the 404 as a deletion in its log line and metric.

    Cause: `controller/plan.py`, `_Planner._delete` ignores `pending_deletes` when `force=True`.
    Proposed fix: skip every UID in `pending_deletes`, forced or not
    (`if pod_uid in self.deleting or pod_uid in self.pending_deletes: return`): the informer's update
    handler lowers a graceful delete's expectation as soon as the pod shows its deletionTimestamp,
    so a terminating pod's UID is only still pending when it was already force-deleted. And in
    `controller/reconciler.py`, `_delete_pods`, count a deletion (log and metric) only when the API
    call deleted something, not on 404/409."""
    job = job_with_workers(2)
    pods = pods_stuck_on_a_dead_node(job)
    plan = plan_job(job, pods, build_service(job), now=NOW, node_ready=lambda _node: False,
                    pending_deletes=frozenset({"pod-uid-0"}))

    deleted = [d.pod["metadata"]["uid"] for d in plan.delete_pods]
    assert deleted == ["pod-uid-1"], f"force-deleted again: {deleted}"
