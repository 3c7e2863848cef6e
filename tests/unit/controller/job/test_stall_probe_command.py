"""The exact probe command the operator injects, run in a subprocess against real files.

Ages are made with `os.utime` (a file last touched N seconds ago), never by waiting. The kubelet's
side -- a startup probe gating the liveness probe, failure thresholds -- is replayed by `Kubelet`
below, which runs the injected command at every probe period of a simulated timeline, so the
grace, the timeout and the restart are checked against the real command, end to end.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from controller.job import stall

Beat = Callable[[float], float | None]
"""When the heartbeat was last touched, at simulated second t of the container's life (None: never)."""


def run_check(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=10, check=False)


def touched(path: Path, seconds_ago: float) -> None:
    path.touch()
    stamp = time.time() - seconds_ago
    os.utime(path, (stamp, stamp))


class Kubelet:
    """The kubelet's probe loop for one container: the startup probe every period until it passes
    (restart after failureThreshold failures), then the liveness probe (restart after
    failureThreshold consecutive failures). Each probe runs the real exec command, with the file set
    to the age the timeline gives."""

    def __init__(self, container: dict[str, Any], path: Path) -> None:
        self.startup = container.get("startupProbe")
        self.liveness = container["livenessProbe"]
        self.path = path

    def _probe(self, probe: dict[str, Any], beat: float | None, now: float) -> bool:
        if beat is None:
            self.path.unlink(missing_ok=True)
        else:
            touched(self.path, now - beat)
        return run_check(probe["exec"]["command"]).returncode == 0

    def restart_time(self, last_beat: Beat, horizon: float) -> float | None:
        """Simulated second at which the container is restarted, or None within `horizon`."""
        now, failures = 0.0, 0
        probe = self.startup or self.liveness
        while now <= horizon:
            if self._probe(probe, last_beat(now), now):
                failures = 0
                probe = self.liveness
            else:
                failures += 1
                if failures >= probe["failureThreshold"]:
                    return now
            now += probe["periodSeconds"]
        return None


@pytest.fixture
def beat_file(tmp_path: Path) -> Path:
    return tmp_path / "heartbeat"


def rule(beat_file: Path, timeout: int = 600, startup: int = 600) -> dict[str, Any]:
    return {"timeoutSeconds": timeout, "startupSeconds": startup, "heartbeat": "file", "path": str(beat_file)}


def container_for(beat_file: Path, **kwargs: int) -> dict[str, Any]:
    return stall.with_stall_probes({"name": "tensorflow", "image": "tf"}, rule(beat_file, **kwargs))


# ---- the command on its own ---------------------------------------------------------------------------


def test_a_fresh_heartbeat_passes(beat_file: Path) -> None:
    touched(beat_file, 5)
    assert run_check(stall.heartbeat_check_command(str(beat_file), 600)).returncode == 0


def test_a_stale_heartbeat_fails_saying_how_old_it_is(beat_file: Path) -> None:
    touched(beat_file, 700)
    result = run_check(stall.heartbeat_check_command(str(beat_file), 600))
    assert result.returncode == 1
    assert f"heartbeat {beat_file} is 70" in result.stdout and "(limit 600s)" in result.stdout


def test_an_absent_heartbeat_fails_saying_so(beat_file: Path) -> None:
    result = run_check(stall.heartbeat_check_command(str(beat_file), 600))
    assert result.returncode == 1
    assert result.stdout.strip() == f"no heartbeat file {beat_file}"


def test_a_path_with_spaces_and_quotes_is_an_argument_not_code(tmp_path: Path) -> None:
    odd = tmp_path / "beat $(touch pwned) 'x'"
    touched(odd, 1)
    assert run_check(stall.heartbeat_check_command(str(odd), 60)).returncode == 0
    assert not (Path.cwd() / "pwned").exists() and not (tmp_path / "pwned").exists()


# ---- the probes as the kubelet runs them ----------------------------------------------------------------


def test_an_absent_heartbeat_during_the_startup_grace_does_not_restart_the_container(beat_file: Path) -> None:
    kubelet = Kubelet(container_for(beat_file, timeout=60, startup=300), beat_file)
    first_beat_at = 280.0  # a slow first step, inside the grace
    restarted = kubelet.restart_time(lambda t: t - (t % 20) if t >= first_beat_at else None, horizon=900)
    assert restarted is None


def test_no_heartbeat_within_the_startup_grace_restarts_the_container_when_it_is_used_up(beat_file: Path) -> None:
    kubelet = Kubelet(container_for(beat_file, timeout=60, startup=300), beat_file)
    restarted = kubelet.restart_time(lambda t: None, horizon=900)
    assert restarted is not None and 300 - 15 <= restarted <= 300 + 15


def test_a_training_that_stops_beating_is_restarted_after_the_timeout(beat_file: Path) -> None:
    kubelet = Kubelet(container_for(beat_file, timeout=120, startup=60), beat_file)
    stalled_at = 400.0
    restarted = kubelet.restart_time(lambda t: min(t, stalled_at) - (min(t, stalled_at) % 10), horizon=2000)
    period = stall.probe_period(120)
    assert restarted is not None and stalled_at + 120 <= restarted <= stalled_at + 120 + 2 * period + 10


def test_a_pause_shorter_than_the_timeout_is_not_a_stall(beat_file: Path) -> None:
    kubelet = Kubelet(container_for(beat_file, timeout=600, startup=60), beat_file)

    def checkpointing_at_1000_for_500s(t: float) -> float:
        return 1000.0 if 1000 <= t < 1500 else t - (t % 10)

    assert kubelet.restart_time(checkpointing_at_1000_for_500s, horizon=2400) is None


def test_a_beat_left_by_an_earlier_container_does_not_end_the_grace_when_it_is_stale(beat_file: Path) -> None:
    kubelet = Kubelet(container_for(beat_file, timeout=60, startup=300), beat_file)
    # The file survived a restart in place (an emptyDir): an hour old, then the new process beats at 200 s.
    assert kubelet.restart_time(lambda t: -3600.0 if t < 200 else t - (t % 15), horizon=900) is None
