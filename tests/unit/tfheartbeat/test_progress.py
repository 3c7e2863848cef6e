"""tfheartbeat's progress reports without TensorFlow: the rules a report follows (on the trainer's side
and, with the same function, on the operator's), the report a process keeps, and `/progress` on the
endpoint, alone or beside the heartbeat on one port."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

import tfheartbeat
from tfheartbeat import server, settings
from tfheartbeat.heart import Heartbeat
from tfheartbeat.progress import MAX_METRICS, ProgressError, ProgressReport, checked


def get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# ---- the rules of a report -------------------------------------------------------------------------------


def test_a_full_report_is_kept_as_it_is() -> None:
    report = {"step": 4500, "totalSteps": 10000, "epoch": 3, "totalEpochs": 10, "metrics": {"loss": 0.25},
              "startStep": 4000}
    assert checked(report) == report


def test_unknown_fields_such_as_conditions_are_left_out() -> None:
    forged = {"step": 7, "conditions": [{"type": "Succeeded", "status": "True"}], "state": "Succeeded"}
    assert checked(forged) == {"step": 7}


def test_a_metric_that_is_not_finite_becomes_null() -> None:
    assert checked({"metrics": {"loss": float("nan"), "grad": float("inf"), "acc": None}}) == {
        "metrics": {"loss": None, "grad": None, "acc": None}}


@pytest.mark.parametrize(("report", "message"), [
    ([1, 2], "a progress report is a JSON object, not list"),
    ({"step": -1}, "step must be between 0 and"),
    ({"startStep": -1}, "startStep must be between 0 and"),
    ({"totalSteps": 0}, "totalSteps must be between 1 and"),
    ({"epoch": 10**16}, "epoch must be between 0 and"),
    ({"step": 1.5}, "step must be an integer, not float"),
    ({"step": True}, "step must be an integer, not bool"),
    ({"metrics": [1]}, "metrics must be an object"),
    ({"metrics": {"bad name": 1}}, "metric name 'bad name' must match"),
    ({"metrics": {"x" * 64: 1}}, "must match"),
    ({"metrics": {"loss": "low"}}, "metrics.loss must be a number or null, not str"),
    ({"metrics": {f"m{i}": i for i in range(MAX_METRICS + 1)}}, f"at most {MAX_METRICS} metrics"),
])
def test_a_bad_report_is_refused_naming_the_field(report: object, message: str) -> None:
    with pytest.raises(ProgressError, match=message.replace("(", r"\(")):
        checked(report)


def test_a_report_keeps_the_fields_an_update_leaves_out() -> None:
    report = ProgressReport()
    report.update(total_steps=100, metrics={"loss": 1.0})
    report.update(step=5)
    assert report.document() == {"totalSteps": 100, "step": 5, "metrics": {"loss": 1.0}}


def test_an_update_takes_integer_types_other_than_int_and_float_like_metrics() -> None:
    class Index:
        def __index__(self) -> int:
            return 12

    class Tensor:
        def __float__(self) -> float:
            return 0.5

    report = ProgressReport()
    report.update(step=Index(), metrics={"loss": Tensor()})  # type: ignore[arg-type, dict-item]
    assert report.document() == {"step": 12, "metrics": {"loss": 0.5}}


def test_a_bad_update_raises_and_changes_nothing() -> None:
    report = ProgressReport()
    report.update(step=3)
    with pytest.raises(ValueError, match="totalSteps must be between 1"):
        report.update(step=4, total_steps=0)
    assert report.document() == {"step": 3}


def test_a_metric_that_is_no_number_is_refused_at_the_update() -> None:
    with pytest.raises(ProgressError, match=r"metrics\.loss must be a number, not str"):
        ProgressReport().update(metrics={"loss": "low"})


# ---- the endpoint ------------------------------------------------------------------------------------------


@pytest.fixture
def progress_endpoint() -> Iterator[tuple[ProgressReport, int]]:
    report = ProgressReport()
    http = server.serve(None, 0, host="127.0.0.1", progress=report)
    yield report, http.server_address[1]
    http.shutdown()
    http.server_close()


def test_the_endpoint_answers_an_empty_report_before_the_first(progress_endpoint: tuple[ProgressReport, int]) -> None:
    _, port = progress_endpoint
    assert get(port, "/progress") == (200, "{}\n")


def test_the_endpoint_answers_the_latest_report_as_json(progress_endpoint: tuple[ProgressReport, int]) -> None:
    report, port = progress_endpoint
    report.update(step=10, total_steps=20, metrics={"loss": float("nan")})
    code, body = get(port, "/progress")
    assert (code, json.loads(body)) == (200, {"step": 10, "totalSteps": 20, "metrics": {"loss": None}})


def test_a_progress_only_endpoint_serves_no_heartbeat(progress_endpoint: tuple[ProgressReport, int]) -> None:
    _, port = progress_endpoint
    assert get(port, "/healthz")[0] == 404


def test_one_port_serves_the_heartbeat_and_the_progress() -> None:
    report = ProgressReport()
    http = server.serve(Heartbeat(None), 0, "/healthz", host="127.0.0.1", progress=report)
    port = http.server_address[1]
    try:
        report.update(epoch=2)
        assert get(port, "/healthz")[0] == 503  # no beat yet
        assert get(port, "/progress") == (200, '{"epoch": 2}\n')
    finally:
        http.shutdown()
        http.server_close()


# ---- the process's report, from the operator's environment ---------------------------------------------------


@pytest.fixture
def fresh_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tfheartbeat, "_default", None)
    monkeypatch.setattr(tfheartbeat, "_progress", None)
    monkeypatch.delenv(settings.HEARTBEAT_PORT_ENV, raising=False)
    monkeypatch.delenv(settings.PROGRESS_PORT_ENV, raising=False)


def test_report_serves_progress_on_the_port_the_operator_names(
        fresh_defaults: None, monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    port = free_port()
    monkeypatch.setenv(settings.HEARTBEAT_FILE_ENV, f"{tmp_path}/beat")
    monkeypatch.setenv(settings.PROGRESS_PORT_ENV, str(port))
    tfheartbeat.report(step=1, total_steps=4, metrics={"loss": 2.0})
    assert json.loads(get(port, "/progress")[1]) == {"step": 1, "totalSteps": 4, "metrics": {"loss": 2.0}}


def test_report_is_a_beat(fresh_defaults: None, monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    monkeypatch.setenv(settings.HEARTBEAT_FILE_ENV, f"{tmp_path}/beat")
    tfheartbeat.report(step=1)
    assert tfheartbeat.default_heartbeat().age() is not None


def test_the_heartbeat_port_serves_the_progress_when_the_operator_names_the_same_port(
        fresh_defaults: None, monkeypatch: pytest.MonkeyPatch) -> None:
    port = free_port()
    monkeypatch.setenv(settings.HEARTBEAT_PORT_ENV, str(port))
    monkeypatch.setenv(settings.PROGRESS_PORT_ENV, str(port))
    tfheartbeat.report(epoch=1)
    assert get(port, "/healthz")[0] == 200
    assert get(port, "/progress") == (200, '{"epoch": 1}\n')


def test_a_taken_progress_port_does_not_stop_the_training(
        fresh_defaults: None, monkeypatch: pytest.MonkeyPatch, tmp_path: object,
        capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("", 0))
        taken.listen()
        monkeypatch.setenv(settings.HEARTBEAT_FILE_ENV, f"{tmp_path}/beat")
        monkeypatch.setenv(settings.PROGRESS_PORT_ENV, str(taken.getsockname()[1]))
        tfheartbeat.report(step=1)
    assert "cannot serve progress on port" in capsys.readouterr().err
    assert tfheartbeat.default_progress().document() == {"step": 1}


def test_without_a_progress_port_nothing_is_served(fresh_defaults: None, monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path: object) -> None:
    monkeypatch.setenv(settings.HEARTBEAT_FILE_ENV, f"{tmp_path}/beat")
    assert settings.Settings.from_env().progress_port is None
    tfheartbeat.report(step=1)
    assert tfheartbeat.default_progress().document() == {"step": 1}
