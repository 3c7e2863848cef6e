"""Training progress with real containers on a real node: what a trainer reports with `tfheartbeat`
reaches the job's status and `kubectl get tfjob` within the documented delay (one read period and a
few seconds), read by the operator through the API server's pod proxy; a trainer that answers with
forged conditions changes nothing but its progress; and the Keras callback of a real TensorFlow
training reports by itself while the model trains.

The trainers are a few lines of Python importing the repository's own `tfheartbeat`, submitted as
tests/real/reporting.py does (the in-cluster operator's scenario uses it too).
"""

from __future__ import annotations

import json
import time

import pytest

from tests.real.kubectl import Kubectl, wait_for
from tests.real.reporting import PERIOD, progress, submit
from tests.support.operator import Operator

DELAY = PERIOD + 5  # the documented delay: one period, and a few seconds for the read and the write

REPORTER = """
import time
import tfheartbeat

for step in range(1, 401):  # 100 s
    tfheartbeat.report(step=step, total_steps=400, epoch=step // 100, total_epochs=4,
                       metrics={"loss": 1.0 / step, "accuracy": 1.0 - 1.0 / step})
    time.sleep(0.25)
print("TRAINING DONE", flush=True)
"""

FORGER = """
import http.server, json

ANSWER = {"step": 5, "conditions": [{"type": "Succeeded", "status": "True", "reason": "Forged"}],
          "state": "Succeeded", "completionTime": "2020-01-01T00:00:00Z", "restartCount": 99}

class Forger(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps(ANSWER).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

print("FORGING", flush=True)
http.server.HTTPServer(("", 8090), Forger).serve_forever()
"""

KERAS = """
import time
import numpy as np
import tensorflow as tf
import tfheartbeat

class Slow(tf.keras.callbacks.Callback):
    # two busy cores share this with the operator and the API server: keep a step about 50 ms long
    def on_train_batch_end(self, batch, logs=None):
        time.sleep(0.05)

x = np.random.default_rng(0).normal(size=(640, 4)).astype("float32")
y = x.sum(axis=1, keepdims=True)
model = tf.keras.Sequential([tf.keras.Input(shape=(4,)), tf.keras.layers.Dense(16, activation="relu"),
                             tf.keras.layers.Dense(1)])
model.compile(optimizer="adam", loss="mse", metrics=["mae"])
print("TRAINING", flush=True)
model.fit(x, y, epochs=30, batch_size=32, verbose=0, callbacks=[tfheartbeat.HeartbeatCallback(), Slow()])
print("TRAINING DONE", flush=True)
"""


def columns(kubectl: Kubectl, name: str, *options: str) -> dict[str, str]:
    """`kubectl get tensorflowjob <name>` as {column: value} (columns are split on runs of spaces)."""
    header, row = kubectl("get", "tensorflowjob", name, *options).stdout.splitlines()[:2]
    starts = [i for i, c in enumerate(header) if c != " " and (i == 0 or header[i - 1] == " ")]
    bounds = [*starts[1:], None]
    return {header[a:b].strip(): row[a:b].strip() for a, b in zip(starts, bounds, strict=True)}


def first_running_at(kubectl: Kubectl, pod: str) -> float:
    """Wait for the pod's container to run; the monotonic time it was first seen running."""
    wait_for(lambda: any((s.get("state") or {}).get("running")
                         for s in kubectl.json("pod", pod)["status"].get("containerStatuses") or []),
             240, f"{pod}'s container to run")
    return time.monotonic()


@pytest.mark.real_ci
def test_a_reporting_trainer_shows_its_progress_in_status_and_kubectl_get(
        kubectl: Kubectl, operator: Operator) -> None:
    submit(kubectl, "reporter", REPORTER)
    running = first_running_at(kubectl, "reporter-worker-0")
    first = wait_for(lambda: progress(kubectl, "reporter").get("step"), 4 * DELAY, "the first progress in status")
    seen_after = time.monotonic() - running
    # The ETA needs two reads that saw progress; the columns show both then.
    shown = wait_for(lambda: (lambda c: c if c.get("ETA") not in ("", "<none>") else None)(
        columns(kubectl, "reporter", "-o", "wide")), 3 * DELAY, "Progress and ETA in kubectl get")
    status = progress(kubectl, "reporter")
    metrics = operator.metrics()
    kubectl("delete", "tensorflowjob", "reporter", "--wait=false")
    # The trainer starts Python, imports tfheartbeat and reports within a second or two of running;
    # the first read may come before that (refused connection), the next one a period later.
    assert seen_after <= 2 * DELAY, f"first progress {seen_after:.0f}s after the trainer started"
    assert first >= 1
    assert shown["PROGRESS"].endswith("%") and shown["METRICS"].startswith("loss=")
    assert status["totalSteps"] == 400 and status["reportedBy"] == "reporter-worker-0"
    assert status["summary"] == f"{status['percent']}%" and set(status["metrics"]) == {"loss", "accuracy"}
    assert any(line.startswith("tfjob_job_progress_ratio{") and 'job="reporter"' in line
               for line in metrics.splitlines())


@pytest.mark.real_ci
def test_a_trainer_cannot_forge_conditions_through_its_progress(kubectl: Kubectl, operator: Operator) -> None:
    submit(kubectl, "forger", FORGER, role="chief")
    wait_for(lambda: progress(kubectl, "forger").get("step"), 240, "the forger's progress in status")
    job = kubectl.job("forger")  # written by the patch that carried the forged answer's progress
    kubectl("delete", "tensorflowjob", "forger", "--wait=false")
    status = job["status"]
    assert status["progress"]["step"] == 5
    assert status["state"] == "Running", json.dumps(status)
    assert not [c for c in status["conditions"] if c["type"] in ("Succeeded", "Failed") or c.get("reason") == "Forged"]
    assert status.get("restartCount") == 0 and "completionTime" not in status
    assert not {"conditions", "state", "completionTime", "restartCount"} & set(status["progress"])


def test_the_keras_callback_reports_real_training_progress(kubectl: Kubectl, operator: Operator) -> None:
    submit(kubectl, "keras", KERAS, role="chief")
    seen = wait_for(lambda: (lambda p: p if p.get("epoch") and "mae" in (p.get("metrics") or {}) else None)(
        progress(kubectl, "keras")), 300, "the Keras callback's progress in status while it trains")
    state_then = kubectl.state("keras")
    final = wait_for(lambda: kubectl.state("keras") if kubectl.state("keras") in ("Succeeded", "Failed") else "",
                     600, "the Keras job to finish")
    last = progress(kubectl, "keras")
    assert state_then == "Running"
    assert seen["totalEpochs"] == 30 and seen["totalSteps"] == 30 * 20
    assert 0 < seen["percent"] < 100 and set(seen["metrics"]) >= {"loss", "mae"}
    assert final == "Succeeded"
    assert "remaining" not in last  # a finished job keeps its last progress, without an ETA
