"""The basic work queue: client-go's ``util/workqueue`` ``Typed`` queue for Python threads.

A controller's workers take keys from this queue. It is not a plain FIFO because it keeps
client-go's guarantees (doc.go):

* Fair: items are handed out in the order they were added.
* Stingy: an item added several times before it is processed is processed once, and an
  item is never handed to two workers at once.
* Multiple producers and consumers; re-adding an item while it is being processed is
  allowed: it is handed out again after ``done``.
* Shutdown notifications: ``get`` reports ``shutdown=True`` once the queue is shut down and
  empty, so workers know when to stop.

The state is the same three structures as client-go: ``_queue`` (FIFO order), ``_dirty``
(items that need processing) and ``_processing`` (items handed out and not yet done). The
invariant: every element of ``_queue`` is in ``_dirty`` and not in ``_processing``.

One deliberate difference: ``shut_down_with_drain`` waits until the queue is empty *and*
nothing is being processed. client-go only re-checks the processing set, so it can return
in the moment between one worker's ``done`` and another worker's next ``get`` while items
are still queued, although its own documentation promises that workers have "called Done
on all existing items in the queue". Waiting for both is what a controller shutting down
its API client after the drain needs.
"""

import threading
from collections import deque
from collections.abc import Hashable
from typing import Generic, TypeVar

from kube.clock import Clock, RealClock
from workqueue.metrics import MetricsProvider, NoopMetricsProvider, QueueMetrics, new_queue_metrics

T = TypeVar("T", bound=Hashable)


class Queue(Generic[T]):
    """A fair, stingy, thread-safe work queue of hashable items.

    Workers loop ``item, shutdown = q.get()``; stop when ``shutdown`` is true; otherwise
    process ``item`` and always call ``q.done(item)`` afterwards.
    """

    def __init__(
        self,
        name: str = "",
        metrics_provider: MetricsProvider | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.name = name
        self._clock: Clock = clock if clock is not None else RealClock()
        self._lock = threading.Lock()
        # Two conditions on one lock: workers blocked in get() and threads blocked in
        # shut_down_with_drain() wait for different things, so a done() that only matters
        # to a drainer never wakes a worker and vice versa.
        self._cond = threading.Condition(self._lock)
        self._drained = threading.Condition(self._lock)
        self._queue: deque[T] = deque()
        self._dirty: set[T] = set()
        self._processing: set[T] = set()
        self._shutting_down = False
        self._drain = False
        provider = metrics_provider if metrics_provider is not None else NoopMetricsProvider()
        self._metrics: QueueMetrics | None = new_queue_metrics(provider, name, self._clock)
        if self._metrics is not None:
            provider.register_refresh(self.update_unfinished_work)

    def add(self, item: T) -> None:
        """Mark ``item`` as needing processing. Ignored once the queue is shutting down."""
        with self._lock:
            if self._shutting_down or item in self._dirty:
                return
            if self._metrics is not None:
                self._metrics.add(item)
            self._dirty.add(item)
            if item in self._processing:
                # A worker holds it now; done() will queue it again.
                return
            self._queue.append(item)
            self._cond.notify()

    def len(self) -> int:
        """How many items wait to be handed out. For information only: never gate add/get on it."""
        with self._lock:
            return len(self._queue)

    def __len__(self) -> int:
        return self.len()

    def get(self) -> tuple[T | None, bool]:
        """Block until an item can be processed; return ``(item, False)`` or ``(None, True)``.

        After a shutdown the remaining queued items are still handed out; ``(None, True)``
        comes only once the queue is empty. The caller must call ``done(item)``.
        """
        with self._lock:
            while not self._queue and not self._shutting_down:
                self._cond.wait()
            if not self._queue:
                return None, True
            item = self._queue.popleft()
            if self._metrics is not None:
                self._metrics.get(item)
            self._processing.add(item)
            self._dirty.discard(item)
            return item, False

    def done(self, item: T) -> None:
        """Mark ``item`` as processed; if it was added again meanwhile, queue it again."""
        with self._lock:
            if self._metrics is not None:
                self._metrics.done(item)
            self._processing.discard(item)
            if item in self._dirty:
                self._queue.append(item)
                self._cond.notify()
            elif not self._processing and not self._queue:
                self._drained.notify_all()

    def shut_down(self) -> None:
        """Ignore new items and tell workers to exit once the queue is empty.

        Also aborts a ``shut_down_with_drain`` that is still waiting.
        """
        with self._lock:
            self._drain = False
            self._shutting_down = True
            self._cond.notify_all()
            self._drained.notify_all()

    def shut_down_with_drain(self) -> None:
        """Ignore new items and wait until every queued item has been processed and done.

        Workers must keep calling ``get`` and ``done`` until ``get`` reports shutdown, or this
        blocks forever; calling ``shut_down`` from another thread ends the wait early.
        """
        with self._lock:
            self._drain = True
            self._shutting_down = True
            self._cond.notify_all()
            while (self._processing or self._queue) and self._drain:
                self._drained.wait()

    def shutting_down(self) -> bool:
        with self._lock:
            return self._shutting_down

    def update_unfinished_work(self) -> None:
        """Recompute the unfinished-work and longest-running-processor gauges now.

        client-go does this from a ticker; here the metrics provider calls it when scraped.
        """
        with self._lock:
            if self._metrics is not None:
                self._metrics.update_unfinished_work()
