"""Kubernetes Events on TensorFlowJobs, so `kubectl describe tfjob` tells the story.

Events are best-effort by design (client-go's recorder drops them under pressure too): they are
posted from one background thread through a bounded queue, so a slow or failing events API never
delays a reconcile, and an error posting one is logged once and dropped.
"""

from __future__ import annotations

import contextlib
import itertools
import queue
import threading
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

import structlog

from kube.clock import REAL_CLOCK, Clock
from tfjob_api.bounds import EVENT_MESSAGE_MAX_BYTES, cut_bytes
from tfjob_api.timeutil import format_time

log = structlog.get_logger(__name__)

COMPONENT = "tfjob-operator"

_sequence = itertools.count()


def event_name(object_name: str) -> str:
    """client-go's `<object>.<hex nanoseconds>`, plus a process-wide sequence number so two events
    stamped in the same nanosecond still differ (no random bytes: a syscall per event)."""
    return f"{object_name}.{time.time_ns():x}{next(_sequence) & 0xFFF:03x}"


def event_body(job: Mapping[str, Any], kind: str, reason: str, message: str, now: datetime,
               instance: str = "") -> dict[str, Any]:
    metadata = job["metadata"]
    stamp = format_time(now)
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": event_name(metadata["name"]), "namespace": metadata["namespace"]},
        "involvedObject": {
            "apiVersion": job.get("apiVersion", "kubeflow.org/v1"), "kind": job.get("kind", "TensorFlowJob"),
            "name": metadata["name"], "namespace": metadata["namespace"], "uid": metadata.get("uid", ""),
            "resourceVersion": metadata.get("resourceVersion", ""),
        },
        "reason": reason,
        "message": cut_bytes(message, EVENT_MESSAGE_MAX_BYTES),
        "type": kind,
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT,
        "reportingInstance": instance or COMPONENT,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }


class EventRecorder:
    """Posts events asynchronously with `post(namespace, body)` (a thin wrapper over the client)."""

    def __init__(self, post: Callable[[str, dict[str, Any]], object], *, capacity: int = 1000,
                 instance: str = "", clock: Clock = REAL_CLOCK) -> None:
        self._post = post
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue(maxsize=capacity)
        self._instance = instance
        self._clock = clock
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="event-recorder", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        if self._thread is None:
            return
        with contextlib.suppress(queue.Full):
            self._queue.put(None, timeout=timeout)
        self._thread.join(timeout)

    def record(self, job: Mapping[str, Any], kind: str, reason: str, message: str) -> None:
        body = event_body(job, kind, reason, message, self._clock.wall(), self._instance)
        try:
            self._queue.put_nowait(body)
        except queue.Full:
            log.warning("event dropped: queue full", reason=reason)

    def _loop(self) -> None:
        while True:
            body = self._queue.get()
            if body is None:
                return
            try:
                self._post(body["metadata"]["namespace"], body)
            except Exception as error:  # best-effort: an event must never break the controller
                log.warning("event not recorded", reason=body["reason"], error=str(error))
