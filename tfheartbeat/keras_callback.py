"""`HeartbeatCallback`: a Keras callback that beats after every training, evaluation and prediction
batch and at the end of every epoch, and reports the training's progress (`tfheartbeat.progress`):
steps and epochs completed out of those `fit` was asked for, and the metrics Keras logs (`loss`,
`val_loss`, ...; the first 8 with valid names).

Metrics are read from the batch logs at most once per `metrics_interval` seconds (converting them can
wait on the device) and from every epoch's logs; steps count across epochs (`epoch * steps + batch +
1`), so the percentage is `fit`'s own. A metric Keras logs that cannot be reported (a name too long,
not a number) is left out: the callback never stops the training.

TensorFlow is only needed when the class is first used: `import tfheartbeat` works without it, and
`tfheartbeat.HeartbeatCallback` builds the class on first access on top of the Keras the program
uses (`tensorflow.keras`, which honours TF_USE_LEGACY_KERAS, else standalone `keras`). The behaviour
lives in `HeartbeatLogic`, which needs neither, so it is tested without TensorFlow.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import math
import time
from collections.abc import Callable, Mapping
from typing import Any

from tfheartbeat.heart import Heartbeat
from tfheartbeat.progress import MAX_METRICS, METRIC_NAME, ProgressReport


def reportable_metrics(logs: Any) -> dict[str, float | None]:
    """The metrics of Keras logs that a report can carry: numbers with valid names, at most 8."""
    metrics: dict[str, float | None] = {}
    if not isinstance(logs, Mapping):
        return metrics
    for name, value in logs.items():
        if len(metrics) == MAX_METRICS:
            break
        if not isinstance(name, str) or not METRIC_NAME.match(name):
            continue
        try:
            number = float(value)
        except (TypeError, ValueError):
            continue
        metrics[name] = number if math.isfinite(number) else None
    return metrics


class HeartbeatLogic:
    """What the callback does; mixed into Keras' `Callback` by `callback_class()`."""

    def __init__(self, heartbeat: Heartbeat | None = None, progress: ProgressReport | None = None, *,
                 metrics_interval: float = 5.0, clock: Callable[[], float] = time.monotonic, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if heartbeat is None or progress is None:
            from tfheartbeat import default_heartbeat, default_progress

            heartbeat = heartbeat or default_heartbeat()
            progress = progress or default_progress()
        self.heartbeat = heartbeat
        self.progress = progress
        self.metrics_interval = metrics_interval
        self._clock = clock
        self._epoch = 0
        self._started = False
        self._steps_per_epoch: int | None = None
        self._metrics_read: float | None = None
        self._metrics: dict[str, float | None] = {}  # the batch's and the epoch's (val_...) together

    def _params(self) -> Mapping[str, Any]:
        params = getattr(self, "params", None)  # set by Keras' fit
        return params if isinstance(params, Mapping) else {}

    def on_train_begin(self, logs: Any = None) -> None:
        epochs, steps = self._params().get("epochs"), self._params().get("steps")
        self._steps_per_epoch = steps if isinstance(steps, int) and steps > 0 else None
        total_epochs = epochs if isinstance(epochs, int) and epochs > 0 else None
        total_steps = total_epochs * self._steps_per_epoch if total_epochs and self._steps_per_epoch else None
        self._report(total_epochs=total_epochs, total_steps=total_steps)

    def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
        if not self._started and self._steps_per_epoch:
            # The first epoch this process trains: 0, or the one BackupAndRestore resumed at.
            self._report(start_step=epoch * self._steps_per_epoch)
        self._started = True
        self._epoch = epoch

    def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
        self.heartbeat.beat()
        now = self._clock()
        fresh_metrics = self._metrics_read is None or now - self._metrics_read >= self.metrics_interval
        if fresh_metrics:
            self._metrics_read = now
        step = self._epoch * self._steps_per_epoch + batch + 1 if self._steps_per_epoch else None
        self._report(step=step, metrics=(self._merged(logs) or None) if fresh_metrics else None)

    def on_test_batch_end(self, batch: int, logs: Any = None) -> None:
        self.heartbeat.beat()

    def on_predict_batch_end(self, batch: int, logs: Any = None) -> None:
        self.heartbeat.beat()

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        self.heartbeat.beat(force=True)
        step = (epoch + 1) * self._steps_per_epoch if self._steps_per_epoch else None
        self._report(epoch=epoch + 1, step=step, metrics=self._merged(logs) or None)

    def _merged(self, logs: Any) -> dict[str, float | None]:
        merged = {**self._metrics, **reportable_metrics(logs)}
        self._metrics = dict(list(merged.items())[:MAX_METRICS])
        return self._metrics

    def _report(self, **fields: Any) -> None:
        with contextlib.suppress(ValueError):  # a count out of bounds: never worth stopping the training for
            self.progress.update(**fields)


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
        "__doc__": "Keeps the stall rule's heartbeat fresh while Keras trains, evaluates or predicts, and reports "
                   "the training's progress (steps, epochs, metrics).",
    })
