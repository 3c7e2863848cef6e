"""An example training script for a role with a stall rule (manifests/examples/stall-detection.yaml).

It trains a small Keras model on MNIST-shaped random data with MultiWorkerMirroredStrategy (TF_CONFIG
comes from the operator) and keeps the stall rule's heartbeat fresh:

* `tfheartbeat.HeartbeatCallback()` beats after every batch and epoch;
* `tfheartbeat.pausing(seconds)` announces a long pause (here: saving the model), so it is not
  taken for a stall -- for at most that long;
* a custom loop would call `tfheartbeat.beat()` after every step instead.

The helper reads where to beat from the environment the operator sets (TFJOB_HEARTBEAT_FILE, or
TFJOB_HEARTBEAT_PORT for `heartbeat: http`), so nothing here names a path.
"""

from __future__ import annotations

import json
import os

import numpy as np
import tensorflow as tf

import tfheartbeat


def dataset(batch_size: int) -> tf.data.Dataset:
    rng = np.random.default_rng(0)
    images = rng.random((6000, 28, 28), dtype=np.float32)
    labels = rng.integers(0, 10, size=(6000,))
    return tf.data.Dataset.from_tensor_slices((images, labels)).shuffle(6000).repeat().batch(batch_size)


def main() -> None:
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    with strategy.scope():
        model = tf.keras.Sequential([
            tf.keras.Input(shape=(28, 28)),
            tf.keras.layers.Flatten(),
            tf.keras.layers.Dense(128, activation="relu"),
            tf.keras.layers.Dense(10),
        ])
        model.compile(optimizer="adam", metrics=["accuracy"],
                      loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(dataset(64 * strategy.num_replicas_in_sync), epochs=5, steps_per_epoch=100,
              callbacks=[tfheartbeat.HeartbeatCallback()], verbose=2)
    # Every worker saves (MultiWorkerMirroredStrategy needs all of them to), each to its own folder.
    task = json.loads(os.environ.get("TF_CONFIG") or "{}").get("task") or {}
    name = f"{task.get('type', 'worker')}-{task.get('index', 0)}"
    folder = os.path.join(os.environ.get("MODEL_DIR", "/tmp/model"), name)
    os.makedirs(folder, exist_ok=True)
    with tfheartbeat.pausing(900):  # saving may take long on a slow volume: not a stall, for 15 minutes
        model.save(os.path.join(folder, "mnist.keras"))


if __name__ == "__main__":
    main()
