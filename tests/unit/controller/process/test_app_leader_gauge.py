"""The `tfjob_leader` gauge of `tfjob-operator run`: 1 exactly while the process may reconcile.

A process run without `--leader-elect` is the only one reconciling, so it is the leader and exports 1
(else TFJobOperatorNoLeader, a critical alert, fires for as long as it runs); an elected one exports 0
while it stands by and 1 once it holds the Lease. Both export 0 once stopped.

`run` is driven for real with its collaborators replaced: the API client, the controller (its caches
"synced" at once), the signal handlers (captured, so the test sends SIGTERM itself) and, for the
elected case, the leader elector.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any
from unittest.mock import Mock

import pytest
from pytest_mock import MockerFixture

from controller.metrics import ControllerMetrics
from controller.process import app
from controller.process.cli import build_parser
from kube import Kube

Handler = Callable[[int, FrameType | None], None]


class Started:
    """What the test reads while `run` runs: the controller's metrics, and the SIGTERM handler."""

    def __init__(self, mocker: MockerFixture) -> None:
        self.handlers: dict[int, Handler] = {}
        mocker.patch.object(app.Kube, "load", return_value=Mock(spec=Kube))
        mocker.patch.object(app.logs, "configure")
        mocker.patch.object(app.validation, "prepare")
        mocker.patch.object(app.signal, "signal", side_effect=self.handlers.__setitem__)
        self.controller_class = mocker.patch.object(app, "Controller")
        self.controller = self.controller_class.return_value
        self.controller.wait_for_sync.return_value = True
        self.controller.caches_synced.return_value = True

    @property
    def metrics(self) -> ControllerMetrics:
        metrics: ControllerMetrics = self.controller_class.call_args.kwargs["metrics"]
        return metrics

    def leader(self) -> float | None:
        return self.metrics.registry.get_sample_value("tfjob_leader")

    def terminate(self) -> None:
        self.handlers[signal.SIGTERM](signal.SIGTERM, None)


def run_args(*flags: str) -> Any:
    return build_parser().parse_args(["run", "--kubeconfig", "/dev/null", "--metrics-addr", "0",
                                      "--health-addr", "0", "--log-format", "json", *flags])


def test_a_process_without_leader_election_exports_leader_1_while_it_runs(mocker: MockerFixture) -> None:
    started = Started(mocker)
    seen_by_workers: list[float | None] = []

    def start_workers() -> None:
        seen_by_workers.append(started.leader())
        started.terminate()
    started.controller.start_workers.side_effect = start_workers

    assert app.run(run_args()) == 0

    assert seen_by_workers == [1.0]
    assert started.leader() == 0.0


class FakeElector:
    """Stands by until the test lets it win, then leads until `run` stops it."""

    def __init__(self, *_args: Any, on_started_leading: Callable[[], None], **_kwargs: Any) -> None:
        self.on_started_leading = on_started_leading
        self.win = threading.Event()

    def run(self, stop: threading.Event) -> None:
        self.win.wait(10)
        self.on_started_leading()
        stop.wait(10)

    def healthy(self) -> bool:
        return True

    def holds_lease_now(self) -> bool:
        return True

    def is_leader(self) -> bool:
        return False


def test_an_elected_process_exports_0_while_standing_by_and_1_once_it_holds_the_lease(
        mocker: MockerFixture) -> None:
    started = Started(mocker)
    electors: list[FakeElector] = []

    def new_elector(*args: Any, **kwargs: Any) -> FakeElector:
        electors.append(FakeElector(*args, **kwargs))
        return electors[-1]
    mocker.patch.object(app, "LeaderElector", side_effect=new_elector)
    standing_by: list[float | None] = []

    def caches_synced(timeout: float) -> bool:
        if not standing_by:  # the first look, before the Lease is won
            standing_by.append(started.leader())
            electors[0].win.set()
        return True
    started.controller.wait_for_sync.side_effect = caches_synced
    seen_by_workers: list[float | None] = []

    def start_workers() -> None:
        seen_by_workers.append(started.leader())
        started.terminate()
    started.controller.start_workers.side_effect = start_workers

    assert app.run(run_args("--leader-elect", "--leader-election-namespace", "tfjob-system")) == 0

    assert standing_by == [0.0]
    assert seen_by_workers == [1.0]
    assert started.leader() == 0.0


@pytest.fixture(autouse=True)
def no_recorder_thread(mocker: MockerFixture) -> None:
    """The event recorder's thread has nothing to send here."""
    mocker.patch.object(app.EventRecorder, "start")
    mocker.patch.object(app.EventRecorder, "stop")
