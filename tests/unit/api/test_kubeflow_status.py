"""A TFJob's status as Kubeflow writes it, from the planner's status and back."""

from __future__ import annotations

from typing import Any

from tfjob_api.kubeflow_status import to_model_status, to_tfjob_status

NOW = "2026-12-01T10:00:00Z"
LATER = "2026-12-01T10:05:00Z"


def condition(kind: str, status: bool, reason: str, message: str = "m") -> dict[str, Any]:
    return {"type": kind, "status": "True" if status else "False", "reason": reason, "message": message,
            "lastTransitionTime": NOW, "lastUpdateTime": NOW}


def model_status(*conditions: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"conditions": list(conditions), "replicaStatuses": {
        "worker": {"active": 2, "succeeded": 0, "failed": 0, "selector": "x"}}, "restartCount": 0, **fields}


def out(status: dict[str, Any], previous: dict[str, Any] | None = None, now: str = NOW,
        types: dict[str, str] | None = None) -> dict[str, Any]:
    return to_tfjob_status(status, types or {"worker": "Worker"}, "j", previous or {}, now)


def test_conditions_carry_kubeflows_reasons() -> None:
    status = out(model_status(condition("Created", True, "JobCreated"), condition("Running", True, "JobRunning")))
    assert [(c["type"], c["reason"]) for c in status["conditions"]] == [
        ("Created", "TFJobCreated"), ("Running", "TFJobRunning")]


def test_the_current_states_condition_comes_last() -> None:
    status = out(model_status(condition("Created", True, "JobCreated"), condition("Succeeded", True, "JobSucceeded"),
                              condition("Running", False, "JobSucceeded"), state="Succeeded"))
    assert [c["type"] for c in status["conditions"]] == ["Created", "Running", "Succeeded"]


def test_a_failure_reason_kubeflow_has_no_word_for_is_kept_beside_its_condition() -> None:
    status = out(model_status(condition("Failed", True, "BackoffLimitExceeded"), state="Failed"))
    assert status["conditions"][-1]["reason"] == "TFJobFailed"
    assert status["conditionReasons"] == {"Failed": "BackoffLimitExceeded"}


def test_reasons_kubeflow_says_as_well_are_not_repeated() -> None:
    status = out(model_status(condition("Created", True, "JobCreated"), condition("Suspended", False, "Resumed")))
    assert "conditionReasons" not in status


def test_replica_statuses_are_keyed_by_replica_type_with_kubeflow_selectors() -> None:
    status = out(model_status(), types={"worker": "Worker", "chief": "Master"})
    assert status["replicaStatuses"]["Worker"] == {
        "active": 2, "succeeded": 0, "failed": 0,
        "selector": "training.kubeflow.org/job-name=j,training.kubeflow.org/replica-type=worker",
        "labelSelector": {"matchLabels": {"training.kubeflow.org/job-name": "j",
                                          "training.kubeflow.org/replica-type": "worker"}}}


def test_last_reconcile_time_moves_only_when_something_else_changed() -> None:
    first = out(model_status(condition("Created", True, "JobCreated")))
    assert first["lastReconcileTime"] == NOW
    assert out(model_status(condition("Created", True, "JobCreated")), first, LATER) == first
    changed = out(model_status(condition("Created", True, "JobCreated"), restartCount=1), first, LATER)
    assert changed["lastReconcileTime"] == LATER


def test_a_status_written_and_read_back_translates_to_the_same_status() -> None:
    planner = model_status(condition("Created", True, "JobCreated"), condition("Restarting", True, "Rescaled"),
                           condition("Running", False, "Rescaled"), condition("Pending", True, "Unschedulable"),
                           state="Restarting", retriedFailures=1, countedFailedPods=["p1"], observedGeneration=3)
    stored = out(planner)
    assert out(to_model_status(stored), stored, LATER) == stored


def test_read_back_gives_the_planners_reasons_and_state() -> None:
    stored = out(model_status(condition("Failed", True, "DeadlineExceeded"), condition("Running", False, "Stalled"),
                              state="Failed"))
    back = to_model_status(stored)
    assert {c["type"]: c["reason"] for c in back["conditions"]} == {"Failed": "DeadlineExceeded",
                                                                    "Running": "Stalled"}
    assert back["state"] == "Failed"


def test_a_status_kubeflows_operator_wrote_reads_as_the_nearest_planner_reasons() -> None:
    written_by_kubeflow = {"conditions": [condition("Created", True, "TFJobCreated"),
                                          condition("Running", True, "TFJobRunning")],
                           "replicaStatuses": {"Worker": {"active": 1}, "Master": {"active": 1}}}
    back = to_model_status(written_by_kubeflow)
    assert [c["reason"] for c in back["conditions"]] == ["JobCreated", "JobRunning"]
    assert back["replicaStatuses"] == {"worker": {"active": 1, "succeeded": 0, "failed": 0},
                                       "chief": {"active": 1, "succeeded": 0, "failed": 0}}
