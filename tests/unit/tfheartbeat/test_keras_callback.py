"""The Keras callback without TensorFlow: a fake `keras` module stands in for the real one, and a
Keras-like `fit` drives the callback through the hooks Keras calls. The file's age is judged by the
operator's own probe command; a stalled loop is one that stops calling the hooks while the file ages
(`os.utime` moves it into the past instead of waiting). `make tf-heartbeat` runs the same story with
real TensorFlow."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import time
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import tfheartbeat
from controller.job import stall
from kube.clock import FakeClock
from tfheartbeat.heart import Heartbeat
from tfheartbeat.keras_callback import callback_class

LIMIT = 600


class FakeKerasCallback:
    """What keras.callbacks.Callback offers the callbacks: the model and params set by fit."""

    def __init__(self) -> None:
        self.model: Any = None
        self.params: dict[str, Any] = {}

    def set_model(self, model: Any) -> None:
        self.model = model

    def set_params(self, params: dict[str, Any]) -> None:
        self.params = params

    def on_train_begin(self, logs: Any = None) -> None: ...
    def on_epoch_begin(self, epoch: int, logs: Any = None) -> None: ...
    def on_train_batch_begin(self, batch: int, logs: Any = None) -> None: ...
    def on_train_batch_end(self, batch: int, logs: Any = None) -> None: ...
    def on_epoch_end(self, epoch: int, logs: Any = None) -> None: ...
    def on_train_end(self, logs: Any = None) -> None: ...


def fit(callbacks: list[Any], epochs: int, steps: int, clock: FakeClock, on_step: Any = None) -> None:
    """The hook sequence of keras' Model.fit, one simulated second per step."""
    for callback in callbacks:
        callback.set_model(object())
        callback.set_params({"epochs": epochs, "steps": steps})
        callback.on_train_begin()
    for epoch in range(epochs):
        for callback in callbacks:
            callback.on_epoch_begin(epoch)
        for step in range(steps):
            for callback in callbacks:
                callback.on_train_batch_begin(step)
            clock.step(1.0)
            if on_step is not None:
                on_step(epoch, step)
            for callback in callbacks:
                callback.on_train_batch_end(step, {"loss": 0.1})
        for callback in callbacks:
            callback.on_epoch_end(epoch, {"loss": 0.1})
    for callback in callbacks:
        callback.on_train_end()


@pytest.fixture
def fake_keras(monkeypatch: pytest.MonkeyPatch) -> Iterator[types.ModuleType]:
    keras = types.ModuleType("keras")
    keras.callbacks = types.SimpleNamespace(Callback=FakeKerasCallback)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "keras", keras)
    monkeypatch.setitem(sys.modules, "tensorflow", None)  # `import tensorflow` raises ImportError
    callback_class.cache_clear()
    yield keras
    callback_class.cache_clear()


def probe_passes(path: Path) -> bool:
    command = stall.heartbeat_check_command(str(path), LIMIT)
    return subprocess.run(command, capture_output=True, timeout=10, check=False).returncode == 0


def aged(path: Path, seconds: float) -> None:
    stamp = time.time() - seconds
    os.utime(path, (stamp, stamp))


def test_importing_tfheartbeat_does_not_import_tensorflow_or_keras() -> None:
    code = "import sys, tfheartbeat; print(any(m in sys.modules for m in ('tensorflow', 'keras')))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=True,
                            cwd=Path(__file__).resolve().parents[3])
    assert result.stdout.strip() == "False"


def test_the_callback_is_a_keras_callback_built_on_first_use(fake_keras: types.ModuleType, tmp_path: Path) -> None:
    callback = tfheartbeat.HeartbeatCallback(Heartbeat(str(tmp_path / "hb")))
    assert isinstance(callback, FakeKerasCallback)
    assert type(callback).__name__ == "HeartbeatCallback"


def test_tensorflow_keras_is_preferred_when_tensorflow_is_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    tf_keras_base = type("TfKerasCallback", (), {})
    tensorflow = types.ModuleType("tensorflow")
    tensorflow.keras = types.SimpleNamespace(callbacks=types.SimpleNamespace(Callback=tf_keras_base))  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tensorflow", tensorflow)
    callback_class.cache_clear()
    try:
        assert issubclass(importlib.import_module("tfheartbeat").HeartbeatCallback, tf_keras_base)
    finally:
        callback_class.cache_clear()


def test_training_keeps_the_heartbeat_fresh(fake_keras: types.ModuleType, tmp_path: Path) -> None:
    path = tmp_path / "hb"
    clock = FakeClock()
    callback = tfheartbeat.HeartbeatCallback(Heartbeat(str(path), clock=clock.now))
    freshness = []

    def check_then_age(epoch: int, step: int) -> None:
        if path.exists():
            freshness.append(probe_passes(path))  # refreshed by the previous batch's end, though aged
            aged(path, LIMIT + 100)  # pretend the beat is old: only the next hook may make it fresh

    fit([callback], epochs=2, steps=3, clock=clock, on_step=check_then_age)
    assert freshness == [True] * 5
    assert probe_passes(path)


def test_a_stalled_training_loop_lets_the_heartbeat_go_stale(fake_keras: types.ModuleType, tmp_path: Path) -> None:
    path = tmp_path / "hb"
    clock = FakeClock()
    callback = tfheartbeat.HeartbeatCallback(Heartbeat(str(path), clock=clock.now))
    fresh_before_the_stall = []

    def stall_at_epoch_1_step_1(epoch: int, step: int) -> None:
        if (epoch, step) == (1, 1):
            fresh_before_the_stall.append(probe_passes(path))
            aged(path, LIMIT + 1)  # the collective hangs: time passes, no hook is called
            raise TimeoutError("stalled")

    with pytest.raises(TimeoutError):
        fit([callback], epochs=2, steps=3, clock=clock, on_step=stall_at_epoch_1_step_1)
    assert fresh_before_the_stall == [True]
    assert not probe_passes(path)


def test_evaluation_and_prediction_batches_beat_too(fake_keras: types.ModuleType) -> None:
    clock = FakeClock()
    heartbeat = Heartbeat(None, clock=clock.now)
    callback = tfheartbeat.HeartbeatCallback(heartbeat)
    callback.on_test_batch_end(0)
    clock.step(5)
    callback.on_predict_batch_end(0)
    assert heartbeat.age() == 0


def test_the_callback_uses_the_default_heartbeat_from_the_environment(
        fake_keras: types.ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "from-env"
    monkeypatch.setenv("TFJOB_HEARTBEAT_FILE", str(path))
    monkeypatch.delenv("TFJOB_HEARTBEAT_PORT", raising=False)
    monkeypatch.setattr(tfheartbeat, "_default", None)
    tfheartbeat.HeartbeatCallback().on_epoch_end(0)
    assert probe_passes(path)


# ---- progress ----------------------------------------------------------------------------------------------


def test_the_callback_reports_steps_and_epochs_out_of_what_fit_was_asked(fake_keras: types.ModuleType) -> None:
    clock = FakeClock()
    report = tfheartbeat.ProgressReport()
    callback = tfheartbeat.HeartbeatCallback(Heartbeat(None, clock=clock.now), report, clock=clock.now)
    seen = []
    fit([callback], epochs=2, steps=3, clock=clock,
        on_step=lambda epoch, step: seen.append((report.document().get("step"), report.document().get("epoch"))))
    assert seen == [(None, None), (1, None), (2, None), (3, 1), (4, 1), (5, 1)]
    assert report.document() == {"totalEpochs": 2, "totalSteps": 6, "step": 6, "epoch": 2, "metrics": {"loss": 0.1},
                                 "startStep": 0}


def test_a_fit_resumed_by_backup_and_restore_reports_the_step_it_started_from(fake_keras: types.ModuleType) -> None:
    clock = FakeClock()
    report = tfheartbeat.ProgressReport()
    callback = tfheartbeat.HeartbeatCallback(Heartbeat(None, clock=clock.now), report, clock=clock.now)
    callback.set_params({"epochs": 5, "steps": 10})
    callback.on_train_begin()
    callback.on_epoch_begin(3)  # BackupAndRestore restored the end of epoch 3: fit starts at the fourth
    callback.on_train_batch_end(0, {"loss": 1.0})
    callback.on_epoch_begin(4)
    assert report.document()["startStep"] == 30 and report.document()["step"] == 31


def test_the_callback_reads_batch_metrics_at_most_once_per_interval(fake_keras: types.ModuleType) -> None:
    clock = FakeClock()
    report = tfheartbeat.ProgressReport()
    callback = tfheartbeat.HeartbeatCallback(Heartbeat(None, clock=clock.now), report, metrics_interval=10,
                                             clock=clock.now)
    callback.set_params({"epochs": 1, "steps": 100})
    callback.on_train_begin()
    callback.on_train_batch_end(0, {"loss": 3.0})
    clock.step(9)
    callback.on_train_batch_end(1, {"loss": 2.0})
    assert report.document()["metrics"] == {"loss": 3.0}
    clock.step(1)
    callback.on_train_batch_end(2, {"loss": 1.0})
    assert report.document()["metrics"] == {"loss": 1.0}


def test_epoch_metrics_join_the_batch_metrics_and_unreportable_ones_are_left_out(
        fake_keras: types.ModuleType) -> None:
    report = tfheartbeat.ProgressReport()
    callback = tfheartbeat.HeartbeatCallback(Heartbeat(None), report)
    callback.on_train_batch_end(0, {"loss": 0.5, "accuracy": 0.75})
    callback.on_epoch_end(0, {"loss": 0.4, "val_loss": float("nan"), "a name with spaces": 1.0, "note": "text"})
    assert report.document()["metrics"] == {"loss": 0.4, "accuracy": 0.75, "val_loss": None}


def test_the_callback_never_stops_the_training_for_a_count_out_of_bounds(fake_keras: types.ModuleType) -> None:
    report = tfheartbeat.ProgressReport()
    callback = tfheartbeat.HeartbeatCallback(Heartbeat(None), report)
    callback.set_params({"epochs": 10**16, "steps": 1})
    callback.on_train_begin()
    callback.on_train_batch_end(0, {})
    assert report.document() == {"step": 1}
