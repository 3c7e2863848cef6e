"""`HeartbeatCallback`: a Keras callback that beats after every training, evaluation and prediction
batch and at the end of every epoch.

TensorFlow is only needed when the class is first used: `import tfheartbeat` works without it, and
`tfheartbeat.HeartbeatCallback` builds the class on first access on top of the Keras the program
uses (`tensorflow.keras`, which honours TF_USE_LEGACY_KERAS, else standalone `keras`). The behaviour
lives in `HeartbeatLogic`, which needs neither, so it is tested without TensorFlow.
"""

from __future__ import annotations

import functools
import importlib
from typing import Any

from tfheartbeat.heart import Heartbeat


class HeartbeatLogic:
    """What the callback does; mixed into Keras' `Callback` by `callback_class()`."""

    def __init__(self, heartbeat: Heartbeat | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if heartbeat is None:
            from tfheartbeat import default_heartbeat

            heartbeat = default_heartbeat()
        self.heartbeat = heartbeat

    def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
        self.heartbeat.beat()

    def on_test_batch_end(self, batch: int, logs: Any = None) -> None:
        self.heartbeat.beat()

    def on_predict_batch_end(self, batch: int, logs: Any = None) -> None:
        self.heartbeat.beat()

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        self.heartbeat.beat(force=True)


def _keras_callback_base() -> type:
    try:
        keras = importlib.import_module("tensorflow").keras
    except ImportError:
        keras = importlib.import_module("keras")
    base: type = keras.callbacks.Callback
    return base


@functools.cache
def callback_class() -> type:
    """The Keras callback class (built once, on first use)."""
    return type("HeartbeatCallback", (HeartbeatLogic, _keras_callback_base()), {
        "__module__": "tfheartbeat",
        "__doc__": "Keeps the stall rule's heartbeat fresh while Keras trains, evaluates or predicts.",
    })
