"""The thread that reads reporting jobs' progress, off the reconcile workers' path.

Every `tick` it asks the book which jobs are due, reads their reports in parallel (at most
`parallelism` at once, each bounded by the read's timeout), records the answers and enqueues the jobs
whose status should change. A slow or dead endpoint therefore delays only other reads, never a
reconcile, and a job is read at most once per `spec.progress.periodSeconds`: its status changes at most
that often, and the reconcile the enqueue brings writes it together with anything else that changed.

`fetch(target)` does the read (the controller's: a GET through the API server's pod proxy); it raises
`kube.ApiError` when the endpoint cannot be reached or did not answer a JSON object. Only the leader
reads (the controller starts the poller with its workers).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import structlog

from controller.job.progress import Target
from controller.progress.book import ProgressBook
from kube import ApiError
from kube.clock import REAL_CLOCK, Clock

log = structlog.get_logger(__name__)

READ_TIMEOUT = 5.0
"""Seconds one read may take (through the API server to the pod and back)."""
INVALID_RESPONSE = "InvalidResponse"  # kube.ApiError's reason for an answer that is not a JSON object

Fetch = Callable[[Target], Any]


class ProgressPoller:
    def __init__(self, book: ProgressBook, fetch: Fetch, enqueue: Callable[[str], None], *,
                 clock: Clock = REAL_CLOCK, parallelism: int = 4, tick: float = 1.0,
                 on_read: Callable[[str], None] | None = None) -> None:
        """`on_read(result)` counts each read: `changed`, `unchanged`, `unreachable` or `invalid`."""
        self.book = book
        self._fetch = fetch
        self._enqueue = enqueue
        self._clock = clock
        self._tick = tick
        self._on_read = on_read
        self._pool = ThreadPoolExecutor(max_workers=parallelism, thread_name_prefix="progress")
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def poll_once(self) -> list[str]:
        """Read every job that is due; return the keys enqueued (their status should change)."""
        due = self.book.due()
        answers = list(self._pool.map(self._read, [target for _, target in due]))
        changed = []
        for (key, target), (answer, result) in zip(due, answers, strict=True):
            if result == "unreachable":
                self._count(result)
                continue
            refused = answer if result == "invalid" else None
            if self.book.record(key, target, None if refused else answer, refused=refused):
                changed.append(key)
                self._enqueue(key)
                result = "changed" if result == "ok" else result
            self._count("unchanged" if result == "ok" else result)
        return changed

    def _read(self, target: Target) -> tuple[Any, str]:
        try:
            return self._fetch(target), "ok"
        except ApiError as error:
            if error.reason == INVALID_RESPONSE:  # it answered, but not a JSON object: the trainer's fault
                return error.message, "invalid"
            log.debug("progress not readable", pod=f"{target.namespace}/{target.pod}", port=target.port,
                      error=str(error))
            return None, "unreachable"

    def _count(self, result: str) -> None:
        if self._on_read is not None:
            self._on_read(result)

    # ---- the thread ------------------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="progress-poller", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _run(self) -> None:
        while not self._clock.sleep(self._tick, self._stop):
            try:
                self.poll_once()
            except Exception:  # a bug must never end the reading for every job
                log.exception("progress poll crashed; going on")
