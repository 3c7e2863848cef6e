"""`status.progress` built from a checked report, the printer columns' strings, and its merge into the
status the reconciler writes."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from controller.progress.status import merge_progress, progress_status, short_duration

SEEN = datetime(2026, 12, 2, 14, 0, 0, tzinfo=UTC)


def test_a_full_report_shows_numbers_columns_and_eta() -> None:
    report = {"step": 4500, "totalSteps": 10000, "epoch": 3, "totalEpochs": 10,
              "metrics": {"loss": 0.231449, "accuracy": 0.912}}
    assert progress_status(report, reported_by="mnist-chief-0", updated=SEEN, remaining=750.0) == {
        "step": 4500, "totalSteps": 10000, "epoch": 3, "totalEpochs": 10, "percent": 45,
        "metrics": {"loss": "0.2314", "accuracy": "0.912"}, "metricsSummary": "loss=0.2314 accuracy=0.912",
        "summary": "45%", "remaining": "12m", "estimatedCompletionTime": "2026-12-02T14:12:30Z",
        "lastUpdateTime": "2026-12-02T14:00:00Z", "reportedBy": "mnist-chief-0",
    }


@pytest.mark.parametrize(("report", "summary"), [
    ({"step": 4500}, "step 4500"),
    ({"epoch": 3}, "epoch 3"),
    ({"epoch": 3, "totalEpochs": 4}, "75%"),
])
def test_the_progress_column_says_what_is_known(report: dict[str, int], summary: str) -> None:
    shown = progress_status(report, reported_by="p", updated=SEEN, remaining=None)
    assert shown is not None and shown["summary"] == summary


def test_without_a_known_rate_there_is_no_eta() -> None:
    shown = progress_status({"step": 1, "totalSteps": 10}, reported_by="p", updated=SEEN, remaining=None)
    assert shown is not None and not {"remaining", "estimatedCompletionTime"} & set(shown)


def test_a_metric_that_is_not_finite_shows_nan() -> None:
    shown = progress_status({"metrics": {"loss": None}}, reported_by="p", updated=SEEN, remaining=None)
    assert shown is not None and shown["metrics"] == {"loss": "nan"} and shown["metricsSummary"] == "loss=nan"


def test_an_empty_report_shows_nothing() -> None:
    assert progress_status({}, reported_by="p", updated=SEEN, remaining=None) is None


def test_a_refused_report_shows_why_beside_the_last_valid_one() -> None:
    shown = progress_status({"step": 3}, reported_by="p", updated=SEEN, remaining=None, problem="refused: bad")
    assert shown is not None and shown["problem"] == "refused: bad" and shown["step"] == 3


@pytest.mark.parametrize(("seconds", "text"), [
    (0, "0s"), (45.9, "45s"), (125, "2m5s"), (600, "10m"), (750, "12m"), (3600, "1h"), (4320, "1h12m"),
    (86400 * 2 + 3 * 3600 + 59, "2d3h"), (-5, "0s"),
])
def test_the_eta_column_is_short(seconds: float, text: str) -> None:
    assert short_duration(seconds) == text


def test_the_progress_is_merged_beside_the_rest_of_the_status() -> None:
    status = {"state": "Running", "conditions": [{"type": "Running", "status": "True"}]}
    merged = merge_progress(status, {"percent": 5, "remaining": "1h"}, over=False)
    assert merged == {**status, "progress": {"percent": 5, "remaining": "1h"}}
    assert "progress" not in status


def test_no_known_progress_leaves_the_stored_one() -> None:
    status: dict[str, Any] = {"state": "Running", "progress": {"percent": 5}}
    assert merge_progress(status, None, over=False) == status


def test_a_finished_job_keeps_its_last_progress_without_an_eta() -> None:
    status = {"state": "Succeeded", "progress": {"percent": 97, "remaining": "1m",
                                                 "estimatedCompletionTime": "2026-12-02T14:01:00Z"}}
    assert merge_progress(status, None, over=True) == {"state": "Succeeded", "progress": {"percent": 97}}
