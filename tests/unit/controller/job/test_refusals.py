"""What the API server's refusals mean for a job, on plain dicts: the plan after `fold_refusals`."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from controller.job.builders import build_service
from controller.job.kinds import TENSORFLOWJOB
from controller.job.plan import Plan, PlanInputs, plan_job
from controller.job.refusals import Cause, Refusal, fold_refusals
from controller.job.validation import Problem
from tests.support.jobs import make_job, pods_for

NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)
LATER = datetime(2026, 11, 29, 12, 0, 1, tzinfo=UTC)


def condition(plan: Plan, kind: str) -> dict[str, Any] | None:
    return next((c for c in plan.status["conditions"] if c["type"] == kind), None)


def running_job_with_a_failed_worker(**spec: Any) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    """Three workers (OnFailure): worker 0 failed, 1 and 2 run."""
    job = make_job(worker=3, **spec)
    pods = pods_for(job)
    pods[0]["status"] = {"phase": "Failed"}
    return job, pods, build_service(job, TENSORFLOWJOB)


def planned_then_refused(job: dict[str, Any], pods: list[dict[str, Any]], service: dict[str, Any],
                         *refusals: Refusal, pending_deletes: frozenset[str] = frozenset()) -> tuple[Plan, Any]:
    plan = plan_job(PlanInputs(job, pods, service, now=NOW, kind=TENSORFLOWJOB))
    return plan, fold_refusals(plan, job, refusals, pods=pods, service=service, now=LATER,
                               pending_deletes=pending_deletes)


def invalid_pod(name: str = "j-worker-0") -> Refusal:
    return Refusal("Pod", name, Cause.INVALID, "spec.containers[0].image: Required value")


def test_a_rejected_pod_template_fails_the_job_for_good() -> None:
    job, pods, service = running_job_with_a_failed_worker()
    plan, folded = planned_then_refused(job, pods, service, invalid_pod())
    failed = condition(plan, "Failed")
    assert failed is not None and failed["status"] == "True" and failed["reason"] == "InvalidPodTemplate"
    assert "Pod j-worker-0 was rejected by the API server: spec.containers[0].image" in failed["message"]
    assert plan.status["state"] == "Failed"
    assert plan.status["completionTime"] == "2026-11-29T12:00:01Z"
    assert [(e.type, e.reason) for e in plan.events][-1] == ("Warning", "InvalidPodTemplate")
    assert folded.problems == []  # permanent: nothing to retry


def test_a_rejected_network_policy_fails_the_job_with_its_own_reason() -> None:
    job, pods, service = running_job_with_a_failed_worker()
    refusal = Refusal("NetworkPolicy", "j-tfjob", Cause.INVALID, "bad peer", invalid_reason="InvalidNetworkPolicy")
    plan, _ = planned_then_refused(job, pods, service, refusal)
    failed = condition(plan, "Failed")
    assert failed is not None and failed["reason"] == "InvalidNetworkPolicy"


@pytest.mark.parametrize("clean_pod_policy", ["Running", "All", "None"])
def test_a_job_failed_by_a_rejection_is_cleaned_up_and_requeued_for_its_ttl_as_the_planner_does(
        clean_pod_policy: str) -> None:
    spec = {"ttlSecondsAfterFinished": 60, "cleanPodPolicy": clean_pod_policy}
    job, pods, service = running_job_with_a_failed_worker(**spec)
    by_planner = plan_job(PlanInputs(job, pods, service, now=NOW, problems=[Problem("spec", "made up")], kind=TENSORFLOWJOB))
    assert condition(by_planner, "Failed") is not None

    job, pods, service = running_job_with_a_failed_worker(**spec)
    by_refusal, folded = planned_then_refused(job, pods, service, invalid_pod())

    def deleted(plan: Plan) -> list[str]:
        return sorted(d.pod["metadata"]["name"] for d in plan.delete_pods)

    # The same pods go, plus the failed worker the plan deleted to recreate it before its create was refused.
    assert deleted(by_refusal) == sorted({*deleted(by_planner), "j-worker-0"})
    assert (by_refusal.delete_service is None) == (by_planner.delete_service is None)
    assert by_refusal.requeue_after == by_planner.requeue_after == 60.0
    # The failed worker was deleted by the plan already; the cleanup adds the running ones.
    assert sorted(d.pod["metadata"]["name"] for d in folded.delete_pods) == ["j-worker-1", "j-worker-2"]
    assert {d.reason for d in folded.delete_pods} == {"JobFinished"}
    assert (folded.delete_service is not None) == (clean_pod_policy == "All")


def test_the_cleanup_after_a_rejection_takes_the_deleted_pods_out_of_the_counts() -> None:
    job, pods, service = running_job_with_a_failed_worker()
    plan, _ = planned_then_refused(job, pods, service, invalid_pod())
    assert plan.status["replicaStatuses"]["worker"]["active"] == 0


def test_the_cleanup_after_a_rejection_skips_pods_whose_deletion_is_pending() -> None:
    job, pods, service = running_job_with_a_failed_worker()
    _, folded = planned_then_refused(job, pods, service, invalid_pod(),
                                     pending_deletes=frozenset({pods[1]["metadata"]["uid"]}))
    assert [d.pod["metadata"]["name"] for d in folded.delete_pods] == ["j-worker-2"]


def test_a_rejection_turns_pending_false_with_its_reason() -> None:
    job, pods, service = running_job_with_a_failed_worker()
    plan = plan_job(PlanInputs(job, pods, service, now=NOW, kind=TENSORFLOWJOB))
    plan.status["conditions"].append({"type": "Pending", "status": "True", "reason": "Unschedulable",
                                      "message": "", "lastTransitionTime": "x", "lastUpdateTime": "x"})
    fold_refusals(plan, job, [invalid_pod()], pods=pods, service=service, now=LATER)
    pending = condition(plan, "Pending")
    assert pending is not None and pending["status"] == "False" and pending["reason"] == "InvalidPodTemplate"


def test_a_name_held_by_a_foreign_object_is_a_conflict_reported_once_and_retried() -> None:
    job, pods, service = running_job_with_a_failed_worker()
    plan, folded = planned_then_refused(job, pods, service, Refusal("Pod", "j-worker-0", Cause.NAME_TAKEN),
                                        Refusal("Service", "j", Cause.NAME_TAKEN))
    running = condition(plan, "Running")
    assert running is not None and running["status"] == "False" and running["reason"] == "NameConflict"
    assert "Service j already exists and is not owned by this TensorFlowJob" in running["message"]
    assert [e.reason for e in plan.events].count("NameConflict") == 2  # one per new message
    assert folded.problems == ["Pod j-worker-0: name held by an object this job does not own",
                               "Service j: name held by an object this job does not own"]
    assert folded.delete_pods == [] and condition(plan, "Failed") is None

    again, _ = planned_then_refused(job, pods, service, Refusal("Pod", "j-worker-0", Cause.NAME_TAKEN),
                                    Refusal("Pod", "j-worker-0", Cause.NAME_TAKEN))
    assert [e.reason for e in again.events].count("NameConflict") == 1  # unchanged: no second event


def test_a_quota_refusal_is_reported_and_retried() -> None:
    job, pods, service = running_job_with_a_failed_worker()
    refusal = Refusal("Pod", "j-worker-0", Cause.QUOTA, "exceeded quota: q")
    plan, folded = planned_then_refused(job, pods, service, refusal)
    running = condition(plan, "Running")
    assert running is not None and running["reason"] == "QuotaExceeded"
    assert running["message"] == "Cannot create Pod j-worker-0: exceeded quota: q; retrying with back-off."
    assert plan.events[-1].reason == "QuotaExceeded"
    assert folded.problems == ["create Pod j-worker-0: quota exceeded"]
    assert condition(plan, "Failed") is None


def test_a_refusal_because_the_namespace_goes_away_changes_nothing() -> None:
    job, pods, service = running_job_with_a_failed_worker()
    plan = plan_job(PlanInputs(job, pods, service, now=NOW, kind=TENSORFLOWJOB))
    before = (list(plan.events), [dict(c) for c in plan.status["conditions"]])
    folded = fold_refusals(plan, job, [Refusal("Pod", "j-worker-0", Cause.GOING_AWAY)], pods=pods, service=service,
                           now=LATER)
    assert folded.problems == [] and folded.delete_pods == []
    assert (plan.events, plan.status["conditions"]) == before


def test_any_other_refusal_is_a_warning_and_a_retry() -> None:
    job, pods, service = running_job_with_a_failed_worker()
    plan, folded = planned_then_refused(job, pods, service, Refusal("Service", "j", Cause.OTHER, "(500) boom"))
    assert plan.events[-1].reason == "FailedCreateService"
    assert folded.problems == ["Cannot create Service j: (500) boom"]
