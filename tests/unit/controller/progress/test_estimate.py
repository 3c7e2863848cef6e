"""Percent done and time left from the recent rate, on plain samples."""

from __future__ import annotations

import pytest

from controller.progress.estimate import Sample, add_sample, fraction_done, percent, remaining_seconds


@pytest.mark.parametrize(("report", "fraction"), [
    ({"step": 25, "totalSteps": 100, "epoch": 9, "totalEpochs": 10}, 0.25),  # steps are finer
    ({"epoch": 3, "totalEpochs": 10}, 0.3),
    ({"step": 120, "totalSteps": 100}, 1.0),  # past the total is done, not more
    ({"step": 25}, None),
    ({}, None),
])
def test_the_fraction_done_comes_from_steps_else_epochs(report: dict[str, int], fraction: float | None) -> None:
    assert fraction_done(report) == fraction


def test_percent_rounds_down_so_100_means_done() -> None:
    assert [percent(f) for f in (0.0, 0.299999, 0.3, 0.999, 1.0)] == [0, 29, 30, 99, 100]


def test_the_rate_is_measured_over_the_samples_kept() -> None:
    samples = (Sample(0.0, 0.1), Sample(60.0, 0.2))
    assert remaining_seconds(samples) == pytest.approx(480.0)


def test_time_left_is_unknown_from_one_sample_or_without_gain() -> None:
    assert remaining_seconds((Sample(0.0, 0.1),)) is None
    assert remaining_seconds((Sample(0.0, 0.1), Sample(60.0, 0.1))) is None


def test_nothing_is_left_once_done() -> None:
    assert remaining_seconds((Sample(0.0, 1.0),)) == 0.0


def test_old_samples_leave_the_window_so_a_slow_start_does_not_skew_the_rate() -> None:
    samples: tuple[Sample, ...] = ()
    for sample in (Sample(0.0, 0.0), Sample(600.0, 0.01), Sample(900.0, 0.11), Sample(1200.0, 0.21)):
        samples = add_sample(samples, sample, window=600.0)
    assert samples == (Sample(600.0, 0.01), Sample(900.0, 0.11), Sample(1200.0, 0.21))
    assert remaining_seconds(samples) == pytest.approx(0.79 / (0.2 / 600))


def test_the_sample_before_the_newest_stays_however_old() -> None:
    assert add_sample((Sample(0.0, 0.1),), Sample(5000.0, 0.2), window=600.0) == (Sample(0.0, 0.1), Sample(5000.0, 0.2))


def test_a_fraction_that_went_back_starts_the_history_over() -> None:
    samples = (Sample(0.0, 0.2), Sample(60.0, 0.5))
    assert add_sample(samples, Sample(120.0, 0.3)) == (Sample(120.0, 0.3),)
