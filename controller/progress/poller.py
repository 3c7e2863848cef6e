"""The threads that read reporting jobs' progress, off the reconcile workers' path.

Every `tick` it asks the book which jobs are due and starts their reads; each read records its answer
when it ends and enqueues the job if its status should change. Nothing waits for a tick's reads as a
whole, so one slow endpoint delays no other job's read, and a job whose read is still under way is not
read again until it ends. A job is read at most once per `spec.progress.periodSeconds`: its status
changes at most that often, and the reconcile the enqueue brings writes it together with anything else
that changed.

A pod is not trusted to answer well. `fetch(target)` (the controller's: a GET through the API server's
pod proxy) reads at most `MAX_ANSWER_BYTES` and gives up at `READ_DEADLINE` however the bytes trickle
in, so an answer costs the operator at most a few kB and a few seconds. An endpoint that sent too much
or did not finish in time is read less often (`ProgressBook.slow`) and on the slow lane, a pool of its
own, so misbehaving pods wait for each other and never for honest ones, nor they for them.

`fetch` raises `kube.ApiError`: reason `InvalidResponse` when the answer is not a JSON object,
`AnswerTooLarge` past the size limit, `ReadTimeoutError` past the deadline, anything else when the
endpoint cannot be reached. Only the leader reads (the controller starts the poller with its workers).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import structlog

from controller.job.progress import Target
from controller.progress.book import ProgressBook
from kube import ApiError
from kube.clock import REAL_CLOCK, Clock
from tfheartbeat.progress import MAX_ANSWER_BYTES

log = structlog.get_logger(__name__)

READ_DEADLINE = 5.0
"""Seconds one read may take in all (through the API server to the pod and back)."""
INVALID_RESPONSE = "InvalidResponse"  # kube.ApiError's reason for an answer that is not a JSON object
TOO_LARGE = "AnswerTooLarge"
TIMED_OUT = "ReadTimeoutError"

Fetch = Callable[[Target], Any]

__all__ = ["MAX_ANSWER_BYTES", "READ_DEADLINE", "ProgressPoller"]


class ProgressPoller:
    def __init__(self, book: ProgressBook, fetch: Fetch, enqueue: Callable[[str], None], *,
                 clock: Clock = REAL_CLOCK, parallelism: int = 16, slow_parallelism: int = 2, tick: float = 1.0,
                 on_read: Callable[[str], None] | None = None) -> None:
        """`parallelism` reads at once of endpoints in good standing, `slow_parallelism` of misbehaving
        ones; `on_read(result)` counts each read: `changed`, `unchanged`, `unreachable`, `invalid`
        (refused, shown in the status) or `slow` (no complete answer in time)."""
        self.book = book
        self._fetch = fetch
        self._enqueue = enqueue
        self._clock = clock
        self._tick = tick
        self._on_read = on_read
        self._lanes = (ThreadPoolExecutor(max_workers=parallelism, thread_name_prefix="progress"),
                       ThreadPoolExecutor(max_workers=slow_parallelism, thread_name_prefix="progress-slow"))
        self._reading: set[str] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def poll_once(self) -> dict[str, Future[bool]]:
        """Start the read of every job that is due and not being read: the reads by job key, each
        future saying whether its read changed the job's status (and so enqueued it)."""
        started: dict[str, Future[bool]] = {}
        for due in self.book.due():
            with self._lock:
                if due.key in self._reading:
                    continue
                self._reading.add(due.key)
            lane = self._lanes[1] if due.slow else self._lanes[0]
            try:
                started[due.key] = lane.submit(self._read_and_record, due.key, due.target)
            except RuntimeError:  # shut down meanwhile
                with self._lock:
                    self._reading.discard(due.key)
        return started

    def _read_and_record(self, key: str, target: Target) -> bool:
        try:
            answer, result = self._read(target)
            if result == "unreachable":
                self._count(result)
                return False
            if result == "slow":
                self.book.slow(key, target)
                self._count(result)
                return False
            refused = answer if result in ("invalid", "too large") else None
            changed = self.book.record(key, target, None if refused else answer, refused=refused,
                                       slow=result == "too large")
            if changed:
                self._enqueue(key)
            self._count(("changed" if changed else "unchanged") if result == "ok" else "invalid")
            return changed
        finally:
            with self._lock:
                self._reading.discard(key)

    def _read(self, target: Target) -> tuple[Any, str]:
        try:
            return self._fetch(target), "ok"
        except ApiError as error:
            if error.reason == INVALID_RESPONSE:  # it answered, but not a JSON object: the trainer's fault
                return error.message, "invalid"
            if error.reason == TOO_LARGE:
                return f"the answer is larger than {MAX_ANSWER_BYTES} bytes", "too large"
            log.debug("progress not readable", pod=f"{target.namespace}/{target.pod}", port=target.port,
                      error=str(error))
            return None, "slow" if error.reason == TIMED_OUT else "unreachable"

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
        for lane in self._lanes:
            lane.shutdown(wait=False, cancel_futures=True)

    def _run(self) -> None:
        while not self._clock.sleep(self._tick, self._stop):
            try:
                self.poll_once()
            except Exception:  # a bug must never end the reading for every job
                log.exception("progress poll crashed; going on")
