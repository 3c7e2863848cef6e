"""Unit tests of `tfjobs.training`: a job's training progress as its status says, the time left now,
and the text `describe` and `wait` show, from plain dicts and a fixed time."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from tests.support.jobs import make_job, pods_for
from tfjobs.describe import describe
from tfjobs.progress import progress, render
from tfjobs.training import Training, render_training, training

NOW = datetime(2026, 12, 2, 14, 1, 0, tzinfo=UTC)
PROGRESS = {"step": 4500, "totalSteps": 10000, "epoch": 3, "totalEpochs": 10, "percent": 45,
            "metrics": {"loss": "0.2314", "accuracy": "0.912"}, "summary": "45%", "remaining": "12m",
            "estimatedCompletionTime": "2026-12-02T14:12:00Z", "lastUpdateTime": "2026-12-02T14:00:00Z",
            "reportedBy": "j-chief-0"}


def reporting_job(shown: dict[str, Any] | None = None) -> dict[str, Any]:
    job = make_job(chief=1, worker=2)
    job["status"] = {"state": "Running", "restartCount": 0, "progress": PROGRESS if shown is None else shown}
    return job


def test_the_status_progress_is_read_with_the_time_left_now() -> None:
    assert training(reporting_job(), NOW) == Training(
        percent=45, step=4500, total_steps=10000, epoch=3, total_epochs=10,
        metrics={"loss": "0.2314", "accuracy": "0.912"}, remaining=660.0, last_update="2026-12-02T14:00:00Z",
        reported_by="j-chief-0")


def test_an_eta_in_the_past_leaves_nothing_rather_than_a_negative_time() -> None:
    later = datetime(2026, 12, 2, 15, 0, 0, tzinfo=UTC)
    t = training(reporting_job(), later)
    assert t is not None and t.remaining == 0.0


def test_a_job_without_progress_has_none() -> None:
    job = make_job(worker=1)
    job["status"] = {"state": "Running"}
    assert training(job, NOW) is None


def test_the_text_says_how_far_when_it_ends_the_metrics_and_how_fresh() -> None:
    t = training(reporting_job(), NOW)
    assert t is not None
    assert render_training(t, NOW) == (
        "45% (step 4500/10000, epoch 3/10)  ETA 11m  loss=0.2314 accuracy=0.912  (reported 60s ago)")


def test_counts_without_totals_are_shown_as_they_are() -> None:
    t = training(reporting_job({"step": 120, "epoch": 2, "lastUpdateTime": "2026-12-02T14:00:00Z"}), NOW)
    assert t is not None and render_training(t, NOW, brief=True) == "step 120, epoch 2"


def test_a_refused_report_is_shown() -> None:
    t = training(reporting_job({"step": 1, "problem": "refused the report of j-chief-0: step must be ..."}), NOW)
    assert t is not None and render_training(t, NOW).endswith("[refused the report of j-chief-0: step must be ...]")


def test_describe_shows_the_training_under_the_restarts() -> None:
    lines = describe(reporting_job(), [], [], NOW).splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("Restarts:"))
    assert lines[at + 1] == ("Training:     45% (step 4500/10000, epoch 3/10)  ETA 11m  loss=0.2314 accuracy=0.912"
                             "  (reported 60s ago)")


def test_the_wait_line_ends_with_the_percent_and_the_eta() -> None:
    job = reporting_job()
    line = render(progress(job, pods_for(job), 65.0, NOW))
    assert line == "j  Running  chief 1/1  worker 2/2 running  restarts 0  1m05s  45% (step 4500/10000, epoch 3/10)  ETA 11m"


def test_a_new_report_is_a_change_for_the_wait_line_but_the_time_left_alone_is_not() -> None:
    job = reporting_job()
    before = progress(job, pods_for(job), 1.0, NOW)
    a_second_later = progress(job, pods_for(job), 2.0, datetime(2026, 12, 2, 14, 1, 1, tzinfo=UTC))
    newer = reporting_job({**PROGRESS, "step": 4600, "lastUpdateTime": "2026-12-02T14:00:30Z"})
    assert a_second_later.same_as(before)
    assert not progress(newer, pods_for(newer), 2.0, NOW).same_as(before)
