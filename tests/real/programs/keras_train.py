"""A small Keras training that runs unchanged on TensorFlow 2.15 (Keras 2) and 2.21 (Keras 3).

The real-node tests mount it at /code/train.py: the Argo workflow's job (test_argo_workflow.py) and
the start-up profiles across TensorFlow versions (test_profiles_across_versions.py). It prints what
the pod was given and what TensorFlow made of it, so a test reads both from the log:

    TASK chief/0 tensorflow 2.15.1 keras 2.15.0
    ENV {"TF_NUM_INTEROP_THREADS": "1", ...}        every TF_*, KERAS_* and OMP_* variable of the pod
    TRAINING DONE loss=0.0123

It fits y = 3x + 1 on generated data (nothing to download) with the API common to Keras 2 and 3.
Every task trains alone: the job's success is its chief's exit code 0.
"""

import json
import os

import keras  # only for its version: tf.keras of 2.15 has no __version__
import numpy as np
import tensorflow as tf

task = json.loads(os.environ.get("TF_CONFIG") or "{}").get("task") or {}
print(f"TASK {task.get('type')}/{task.get('index')} tensorflow {tf.__version__} keras {keras.__version__}",
      flush=True)
print("ENV " + json.dumps({k: v for k, v in sorted(os.environ.items()) if k.startswith(("TF_", "KERAS_", "OMP_"))
                           and k != "TF_CONFIG"}), flush=True)

rng = np.random.default_rng(7)
x = rng.uniform(-1, 1, size=(2048, 1)).astype("float32")
y = 3 * x + 1 + rng.normal(0, 0.01, size=(2048, 1)).astype("float32")
model = tf.keras.Sequential([tf.keras.Input(shape=(1,)), tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=0.1), loss="mse")
history = model.fit(x, y, batch_size=64, epochs=5, verbose=0)
print(f"TRAINING DONE loss={history.history['loss'][-1]:.4f}", flush=True)
