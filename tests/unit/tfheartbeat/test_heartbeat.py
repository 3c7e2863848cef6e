"""tfheartbeat without TensorFlow: the beat, its file, the operator's environment, the HTTP endpoint and
announced pauses. Time is a fake monotonic clock; file ages are checked with the operator's own probe."""

from __future__ import annotations

import subprocess
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import tfheartbeat
from controller.job import stall
from kube.clock import FakeClock
from tfheartbeat import pause, server, settings
from tfheartbeat.heart import Heartbeat


def probe_passes(path: Path, limit: int = 60) -> bool:
    command = stall.heartbeat_check_command(str(path), limit)
    return subprocess.run(command, capture_output=True, timeout=10, check=False).returncode == 0


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def test_a_beat_creates_the_file_and_its_directory_and_the_probe_accepts_it(tmp_path: Path, clock: FakeClock) -> None:
    path = tmp_path / "run" / "heartbeat"
    assert Heartbeat(str(path), clock=clock.now).beat()
    assert probe_passes(path)


def test_beats_within_the_minimum_interval_do_not_touch_the_file_again(tmp_path: Path, clock: FakeClock) -> None:
    heartbeat = Heartbeat(str(tmp_path / "hb"), min_interval=1.0, clock=clock.now)
    assert heartbeat.beat()
    clock.step(0.5)
    assert not heartbeat.beat()
    clock.step(0.5)
    assert heartbeat.beat()


def test_the_file_carries_the_wall_time_of_the_beat(tmp_path: Path, clock: FakeClock) -> None:
    path = tmp_path / "hb"
    Heartbeat(str(path), clock=clock.now, wall=lambda: 1_000_000.0).beat()
    assert path.stat().st_mtime == 1_000_000.0
    assert not probe_passes(path)  # 1970: stale


def test_an_unwritable_heartbeat_file_raises(tmp_path: Path, clock: FakeClock) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(OSError):
        Heartbeat(str(blocker / "heartbeat"), clock=clock.now).beat()


def test_age_counts_from_the_last_beat(clock: FakeClock) -> None:
    heartbeat = Heartbeat(None, clock=clock.now)
    assert heartbeat.age() is None
    heartbeat.beat()
    clock.step(42)
    assert heartbeat.age() == 42


# ---- the operator's environment -----------------------------------------------------------------------


def test_file_mode_follows_the_injected_environment() -> None:
    injected = {e["name"]: e["value"] for e in stall.heartbeat_env({"path": "/beat/here", "timeoutSeconds": 90})}
    assert settings.Settings.from_env(injected) == settings.Settings(file="/beat/here", port=None,
                                                                     http_path="/healthz", timeout=90.0)


def test_http_mode_follows_the_injected_environment() -> None:
    injected = {e["name"]: e["value"] for e in stall.heartbeat_env(
        {"heartbeat": "http", "port": 8090, "path": "/alive", "timeoutSeconds": 300})}
    assert settings.Settings.from_env(injected) == settings.Settings(file=None, port=8090, http_path="/alive",
                                                                     timeout=300.0)


def test_without_a_stall_rule_the_default_file_is_used() -> None:
    assert settings.Settings.from_env({}).file == "/tmp/tfjob-heartbeat"


def test_the_module_level_beat_uses_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "beat"
    monkeypatch.setenv(settings.HEARTBEAT_FILE_ENV, str(path))
    monkeypatch.delenv(settings.HEARTBEAT_PORT_ENV, raising=False)
    monkeypatch.setattr(tfheartbeat, "_default", None)
    assert tfheartbeat.beat()
    assert probe_passes(path)


# ---- the HTTP endpoint ---------------------------------------------------------------------------------


@pytest.fixture
def endpoint(clock: FakeClock) -> Iterator[tuple[Heartbeat, Callable[[str], tuple[int, str]]]]:
    heartbeat = Heartbeat(None, clock=clock.now)
    http = server.serve(heartbeat, 0, "/healthz", timeout=60, host="127.0.0.1")
    port = http.server_address[1]

    def get(path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    yield heartbeat, get
    http.shutdown()
    http.server_close()


def test_the_endpoint_answers_503_before_the_first_beat(endpoint: tuple[Heartbeat, Callable[..., tuple[int, str]]]) -> None:
    _, get = endpoint
    assert get("/healthz") == (503, "no heartbeat yet\n")


def test_the_endpoint_answers_200_while_beats_are_fresh(endpoint: tuple[Heartbeat, Callable[..., tuple[int, str]]],
                                                        clock: FakeClock) -> None:
    heartbeat, get = endpoint
    heartbeat.beat()
    clock.step(59)
    assert get("/healthz")[0] == 200


def test_the_endpoint_answers_503_once_the_training_stalls(endpoint: tuple[Heartbeat, Callable[..., tuple[int, str]]],
                                                           clock: FakeClock) -> None:
    heartbeat, get = endpoint
    heartbeat.beat()
    clock.step(61)
    assert get("/healthz") == (503, "stalled: last heartbeat 61s ago (limit 60s)\n")


def test_the_endpoint_serves_only_its_path(endpoint: tuple[Heartbeat, Callable[..., tuple[int, str]]]) -> None:
    _, get = endpoint
    assert get("/metrics")[0] == 404


# ---- announced pauses ----------------------------------------------------------------------------------


def test_a_pause_beats_from_the_background_while_the_block_runs(clock: FakeClock,
                                                               eventually: Callable[..., bool]) -> None:
    heartbeat = Heartbeat(None, clock=clock.now)
    with pause.pausing(heartbeat, 900, clock=clock.now):
        assert eventually(lambda: heartbeat.age() == 0)


def test_the_end_of_a_pause_is_a_beat(tmp_path: Path, clock: FakeClock) -> None:
    path = tmp_path / "hb"
    heartbeat = Heartbeat(str(path), clock=clock.now)
    clock.step(1000)
    with pause.pausing(heartbeat, 0, clock=clock.now):
        assert not path.exists()
    assert probe_passes(path)


def test_a_pause_longer_than_announced_stops_beating(clock: FakeClock, eventually: Callable[..., bool]) -> None:
    heartbeat = Heartbeat(None, clock=clock.now)
    with pause.pausing(heartbeat, 30, interval=0.01, clock=clock.now):
        assert eventually(lambda: heartbeat.age() == 0)
        clock.step(31)  # the announced 30 s are over: the background thread must give up
        assert eventually(lambda: not any(t.name == "tfheartbeat-pause" and t.is_alive()
                                          for t in threading.enumerate()))
        assert heartbeat.age() == 31
