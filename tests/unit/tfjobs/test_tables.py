"""Unit tests of `tfjobs.tables` and `tfjobs.durations`: kubectl-style columns, ages and durations."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tfjobs.durations import age, elapsed, parse_duration
from tfjobs.tables import job_rows, table


def test_columns_are_padded_by_three_spaces_and_the_last_is_not() -> None:
    assert table(["NAME", "STATE"], [["a", "Running"], ["longer", "x"]]).splitlines() == [
        "NAME     STATE", "a        Running", "longer   x"]


def test_job_rows_have_the_crds_printer_columns() -> None:
    job = {"metadata": {"name": "mnist", "namespace": "team", "creationTimestamp": "2030-01-01T00:00:00Z"},
           "spec": {"worker": {}, "ps": {}},
           "status": {"state": "Running", "restartCount": 1, "startTime": "2030-01-01T00:00:01Z",
                      "replicaStatuses": {"worker": {"active": 4}, "ps": {"active": 2}}}}
    now = datetime(2030, 1, 1, 0, 5, tzinfo=UTC)

    headers, rows = job_rows([job], wide=True, all_namespaces=True, now=now)

    assert headers == ["NAMESPACE", "NAME", "STATE", "WORKERS", "PS", "RESTARTS", "PROGRESS", "ETA", "AGE", "STARTED",
                       "COMPLETED", "METRICS"]
    assert rows == [["team", "mnist", "Running", "4", "2", "1", "<none>", "<none>", "5m", "2030-01-01T00:00:01Z", "<none>",
                     "<none>"]]


def test_a_reporting_jobs_row_shows_its_progress_the_time_left_now_and_its_metrics() -> None:
    job = {"metadata": {"name": "mnist", "creationTimestamp": "2030-01-01T00:00:00Z"}, "spec": {"worker": {}},
           "status": {"state": "Running", "progress": {"summary": "45%", "remaining": "12m",
                                                       "estimatedCompletionTime": "2030-01-01T00:17:00Z",
                                                       "metricsSummary": "loss=0.23"}}}
    now = datetime(2030, 1, 1, 0, 5, tzinfo=UTC)

    _, rows = job_rows([job], wide=True, now=now)

    assert rows[0][5:8] == ["45%", "12m", "5m"] and rows[0][-1] == "loss=0.23"


@pytest.mark.parametrize(("text", "seconds"), [
    ("90", 90.0), ("90s", 90.0), ("5m", 300.0), ("1h30m", 5400.0), ("1.5h", 5400.0), ("250ms", 0.25)])
def test_durations_use_gos_units(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "5 minutes", "m5", "5d", "-3s"])
def test_other_durations_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)


@pytest.mark.parametrize(("seconds", "text"), [
    (45, "45s"), (200, "3m20s"), (720, "12m"), (5 * 3600 + 600, "5h10m"), (20 * 3600, "20h"), (3 * 86400, "3d")])
def test_ages_get_coarser_as_they_grow(seconds: float, text: str) -> None:
    assert age(seconds) == text


def test_elapsed_time_reads_like_a_clock() -> None:
    assert [elapsed(s) for s in (7, 245, 7384)] == ["7s", "4m05s", "2h03m04s"]
