"""The planner on a TFJob's model: the same rules, Kubeflow's defaults, the TFJob named in messages."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from controller.job.builders import build_pods, build_service
from controller.job.kinds import TFJOB
from controller.job.plan import PlanInputs, plan_job
from controller.job.validation import Problem
from tests.support.kubeflow import replica, tfjob_manifest
from tfjob_api.kubeflow_model import to_model

NOW = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)


def model(**run_policy: Any) -> dict[str, Any]:
    job = tfjob_manifest("j", {"Worker": replica(2, policy="OnFailure")}, metadata={"namespace": "ns", "uid": "u"},
                         **run_policy)
    return to_model(job)


def with_failed_worker(job: dict[str, Any], restarts_so_far: int) -> list[dict[str, Any]]:
    pods = build_pods(job, "", (), TFJOB)
    for index, pod in enumerate(pods):
        pod["metadata"]["uid"] = f"p{index}"
        pod["status"] = {"phase": "Running"}
    pods[1]["status"] = {"phase": "Failed"}
    job["status"] = {"retriedFailures": restarts_so_far, "restartCount": restarts_so_far}
    return pods


def test_without_a_backoff_limit_failures_are_retried_however_many() -> None:
    job = model()
    plan = plan_job(PlanInputs(job, with_failed_worker(job, 1000), build_service(job, TFJOB), now=NOW, problems=[], kind=TFJOB))
    assert [d.reason for d in plan.delete_pods] == ["PodFailed"]
    assert plan.status["restartCount"] == 1001
    assert not any(c["type"] == "Failed" for c in plan.status["conditions"])


def test_with_a_backoff_limit_the_tfjob_fails_past_it() -> None:
    job = model(backoffLimit=2)
    plan = plan_job(PlanInputs(job, with_failed_worker(job, 2), build_service(job, TFJOB), now=NOW, problems=[], kind=TFJOB))
    failed = next(c for c in plan.status["conditions"] if c["type"] == "Failed")
    assert failed["reason"] == "BackoffLimitExceeded"
    assert failed["message"].startswith("TFJob j has failed 3 times")


def test_the_tfjobs_own_problems_fail_it_as_an_invalid_spec() -> None:
    job = model()
    plan = plan_job(PlanInputs(job, [], None, now=NOW, problems=[Problem("spec.tfReplicaSpecs.Worker", "broken")], kind=TFJOB))
    failed = next(c for c in plan.status["conditions"] if c["type"] == "Failed")
    assert (failed["reason"], failed["message"]) == ("InvalidSpec", "spec.tfReplicaSpecs.Worker: broken")
    assert plan.create_pods == []


def test_a_new_tfjob_is_created_in_its_own_words() -> None:
    plan = plan_job(PlanInputs(model(), [], None, now=NOW, problems=[], kind=TFJOB))
    created = next(c for c in plan.status["conditions"] if c["type"] == "Created")
    assert created["message"] == "TFJob j is created."
