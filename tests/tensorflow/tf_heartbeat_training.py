"""Real TensorFlow: the Keras callback keeps the heartbeat fresh while a model trains, and a training
loop that stalls lets it go stale -- judged by the probe command the operator injects.

Not part of `make test`: TensorFlow is no dependency of the project and takes minutes to install.
`make tf-heartbeat` installs tensorflow-cpu into a separate virtualenv and runs this file; its name
does not start with `test_`, so `pytest tests` never collects it. (The CI-run tests drive the same
callback with a fake Keras: tests/unit/tfheartbeat/test_keras_callback.py.)
"""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf

import tfheartbeat
from controller.job import stall
from tests.support.polling import wait_for
from tfheartbeat.heart import Heartbeat
from tfheartbeat.progress import checked

LIMIT = 2  # seconds: the probe reads whole seconds, so a stalled step is seen within about 3 s


def probe_passes(path: Path, limit: int = LIMIT) -> bool:
    command = stall.heartbeat_check_command(str(path), limit)
    return subprocess.run(command, capture_output=True, timeout=10, check=False).returncode == 0


def tiny_model() -> tf.keras.Model:
    model = tf.keras.Sequential([tf.keras.Input(shape=(4,)), tf.keras.layers.Dense(8, activation="relu"),
                                 tf.keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    return model


def data() -> tuple[Any, Any]:
    rng = np.random.default_rng(0)
    return rng.normal(size=(256, 4)).astype("float32"), rng.normal(size=(256, 1)).astype("float32")


def test_keras_training_keeps_the_heartbeat_fresh(tmp_path: Path) -> None:
    path = tmp_path / "heartbeat"
    ages: list[float] = []

    class Observer(tf.keras.callbacks.Callback):
        """Runs after the heartbeat callback at every batch: how old is the file then?"""

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            ages.append(time.time() - path.stat().st_mtime)

    callback = tfheartbeat.HeartbeatCallback(Heartbeat(str(path), min_interval=0.0))
    assert isinstance(callback, tf.keras.callbacks.Callback)
    x, y = data()
    tiny_model().fit(x, y, epochs=3, batch_size=16, callbacks=[callback, Observer()], verbose=0)
    assert len(ages) == 3 * 16
    assert max(ages) < 1.0
    assert probe_passes(path)


def test_a_stalled_training_loop_lets_the_heartbeat_go_stale(tmp_path: Path) -> None:
    path = tmp_path / "heartbeat"
    stalled, release = threading.Event(), threading.Event()

    class Hang(tf.keras.callbacks.Callback):
        """A deliberately stalled step (like a collective that never completes), until released."""

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            if batch == 3 and not stalled.is_set():
                stalled.set()
                release.wait(120)

    x, y = data()
    callbacks = [tfheartbeat.HeartbeatCallback(Heartbeat(str(path), min_interval=0.0)), Hang()]
    training = threading.Thread(target=lambda: tiny_model().fit(x, y, epochs=2, batch_size=16, callbacks=callbacks,
                                                               verbose=0), name="training")
    training.start()
    try:
        assert stalled.wait(120), "training never reached the stalled step"
        assert probe_passes(path)  # the heartbeat callback beat at the end of the batch that then hung
        wait_for(lambda: not probe_passes(path), 15, "the heartbeat to go stale while the step hangs", interval=0.2)
    finally:
        release.set()
        training.join(120)
    assert not training.is_alive()
    assert probe_passes(path)  # training resumed and beat again


def test_keras_training_reports_its_progress_as_the_operator_reads_it() -> None:
    report = tfheartbeat.ProgressReport()
    seen: list[dict[str, Any]] = []

    class Observer(tf.keras.callbacks.Callback):
        """Runs after the heartbeat callback: what would `/progress` answer now?"""

        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            seen.append(report.document())

    callback = tfheartbeat.HeartbeatCallback(Heartbeat(None), report, metrics_interval=0.0)
    x, y = data()
    model = tiny_model()
    model.compile(optimizer="sgd", loss="mse", metrics=["mae"])
    model.fit(x, y, epochs=3, batch_size=16, validation_split=0.25, callbacks=[callback, Observer()], verbose=0)
    assert [(s["epoch"], s["step"]) for s in seen] == [(1, 12), (2, 24), (3, 36)]  # 192 samples / 16
    assert all(s["totalEpochs"] == 3 and s["totalSteps"] == 36 for s in seen)
    assert set(seen[-1]["metrics"]) >= {"loss", "mae", "val_loss", "val_mae"}
    assert checked(seen[-1]) == seen[-1]  # the operator takes it as it is
