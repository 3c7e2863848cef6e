"""tfheartbeat: keep a TensorFlowJob's stall rule informed that training makes progress.

A role with `stall` set (docs/production.md) restarts its TensorFlow container when the heartbeat
goes stale. This package keeps it fresh; it needs only the standard library, and TensorFlow only
for the Keras callback:

    import tfheartbeat

    model.fit(dataset, epochs=10, callbacks=[tfheartbeat.HeartbeatCallback()])   # Keras

    for step, batch in enumerate(dataset):                                      # a custom loop
        train_step(batch)
        tfheartbeat.beat()

    with tfheartbeat.pausing(900):                                              # a known long pause
        checkpoint.save(path)

Where the beat goes comes from the environment the operator sets (`settings`): the file it names,
or, with `heartbeat: http`, an endpoint on the port it names, started on the first beat. Outside a
stall rule it touches /tmp/tfjob-heartbeat, which nobody reads.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tfheartbeat import pause as _pause
from tfheartbeat import server as _server
from tfheartbeat.heart import Heartbeat
from tfheartbeat.keras_callback import HeartbeatLogic, callback_class
from tfheartbeat.settings import Settings

__all__ = ["Heartbeat", "HeartbeatCallback", "HeartbeatLogic", "Settings", "beat", "default_heartbeat",
           "pausing", "serve"]

_lock = threading.Lock()
_default: Heartbeat | None = None


def default_heartbeat() -> Heartbeat:
    """The process's heartbeat, configured from the environment on first use (and, in http mode,
    with its endpoint started)."""
    global _default
    with _lock:
        if _default is None:
            settings = Settings.from_env()
            heartbeat = Heartbeat(settings.file)
            if settings.port is not None:
                _server.serve(heartbeat, settings.port, settings.http_path, settings.timeout)
            _default = heartbeat
        return _default


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
