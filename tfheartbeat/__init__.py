"""tfheartbeat: keep a TensorFlowJob's stall rule informed that training makes progress, and tell the
job how far the training is.

A role with `stall` set (docs/production.md) restarts its TensorFlow container when the heartbeat
goes stale; a job with `spec.progress` shows the step, epoch, metrics and ETA its chief (or worker 0)
reports in its status. This package does both; it needs only the standard library, and TensorFlow
only for the Keras callback (which beats and reports by itself):

    import tfheartbeat

    model.fit(dataset, epochs=10, callbacks=[tfheartbeat.HeartbeatCallback()])   # Keras

    for step, batch in enumerate(dataset):                                      # a custom loop
        train_step(batch)
        tfheartbeat.beat()

    with tfheartbeat.pausing(900):                                              # a known long pause
        checkpoint.save(path)

    tfheartbeat.report(step=step, total_steps=10_000, metrics={"loss": loss})   # progress (also a beat)

Where the beat goes comes from the environment the operator sets (`settings`): the file it names,
or, with `heartbeat: http`, an endpoint on the port it names, started on the first beat. Outside a
stall rule it touches /tmp/tfjob-heartbeat, which nobody reads. Reports are kept in memory and served
at `/progress` on the port the operator names in the reporting pod (`TFJOB_PROGRESS_PORT`; the same
server when it is the heartbeat's port); elsewhere nobody reads them, and they cost a dict update.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from tfheartbeat import pause as _pause
from tfheartbeat import server as _server
from tfheartbeat.heart import Heartbeat
from tfheartbeat.keras_callback import HeartbeatLogic, callback_class
from tfheartbeat.progress import ProgressError, ProgressReport
from tfheartbeat.settings import Settings

__all__ = ["Heartbeat", "HeartbeatCallback", "HeartbeatLogic", "ProgressError", "ProgressReport", "Settings",
           "beat", "default_heartbeat", "default_progress", "pausing", "report", "serve"]

_lock = threading.Lock()
_default: Heartbeat | None = None
_progress: ProgressReport | None = None


def _ensure_defaults() -> tuple[Heartbeat, ProgressReport]:
    """The process's heartbeat and progress report, configured from the environment on first use, with
    their endpoints started (the heartbeat's in http mode, `/progress` where the operator asks for it).
    Called under `_lock`."""
    global _default, _progress
    if _default is None or _progress is None:
        settings = Settings.from_env()
        heartbeat, progress = Heartbeat(settings.file), ProgressReport()
        shared = settings.port is not None and settings.port == settings.progress_port
        if settings.port is not None:
            _server.serve(heartbeat, settings.port, settings.http_path, settings.timeout,
                          progress=progress if shared else None)
        if settings.progress_port is not None and not shared:
            try:
                _server.serve(None, settings.progress_port, progress=progress)
            except OSError as error:  # progress is for people watching: it never stops the training
                print(f"tfheartbeat: cannot serve progress on port {settings.progress_port}: {error}",
                      file=sys.stderr, flush=True)
        _default, _progress = heartbeat, progress
    return _default, _progress


def default_heartbeat() -> Heartbeat:
    """The process's heartbeat, configured from the environment on first use (and, in http mode,
    with its endpoint started)."""
    with _lock:
        return _ensure_defaults()[0]


def default_progress() -> ProgressReport:
    """The process's progress report, served at `/progress` when the operator asks for it."""
    with _lock:
        return _ensure_defaults()[1]


def report(*, step: int | None = None, total_steps: int | None = None, epoch: int | None = None,
           total_epochs: int | None = None, metrics: Mapping[str, float] | None = None,
           start_step: int | None = None) -> None:
    """Report how far the training is: `step`/`epoch` completed so far, out of `total_steps`/
    `total_epochs` (either pair gives the percentage), up to 8 named metrics, and `start_step`, the step
    this process started from (its restored checkpoint's; 0 when it started afresh). Fields left out
    keep their last value. A bad value raises ProgressError (a ValueError) naming it. It is a beat too."""
    default_progress().update(step=step, total_steps=total_steps, epoch=epoch, total_epochs=total_epochs,
                              metrics=metrics, start_step=start_step)
    beat()


def beat() -> bool:
    """Training made progress. Cheap: touches the file at most once a second."""
    return default_heartbeat().beat()


@contextmanager
def pausing(seconds: float) -> Iterator[None]:
    """Keep beating for at most `seconds` while the block runs (a checkpoint, an evaluation)."""
    with _pause.pausing(default_heartbeat(), seconds):
        yield


def serve(port: int, path: str = "/healthz", timeout: float = 600.0) -> Any:
    """Serve the default heartbeat over HTTP yourself (the operator's environment does it for you)."""
    return _server.serve(default_heartbeat(), port, path, timeout)


def __getattr__(name: str) -> Any:
    if name == "HeartbeatCallback":  # built on first use: needs Keras
        return callback_class()
    raise AttributeError(f"module 'tfheartbeat' has no attribute {name!r}")
