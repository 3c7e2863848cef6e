"""The delaying queue: a work queue that can also add an item after a delay.

Port of client-go's ``delaying_queue.go``. ``add_after(item, seconds)`` records the item with
its ready time in a min-heap; one background thread sleeps until the earliest ready time
and then moves every ready item into the queue with ``add``.

Shaped like client-go with two Python-specific simplifications:

* client-go sends new entries to its waiting goroutine over a channel; here ``add_after``
  inserts into the heap itself under the heap's condition and wakes the thread only when
  the new entry became the earliest one, so the thread can sleep for a shorter time.
* Each item has at most one heap entry, found through a dict. Adding an item that is already
  waiting keeps the earlier of the two ready times (client-go: "update the time only if it
  would cause the item to be queued sooner").

The thread sleeps through the injected clock's ``wait_until``, so a ``FakeClock`` decides
when it wakes; a heartbeat of ``MAX_WAIT`` seconds (client-go's "insurance against weird
things") bounds every sleep. On shutdown the thread exits and items still waiting are
dropped.
"""

import threading
from dataclasses import dataclass
from typing import Generic

from kube.clock import Clock
from workqueue.metrics import MetricsProvider
from workqueue.queue import Queue, T

# client-go's maxWait: the longest the waiting thread sleeps without re-checking the heap.
MAX_WAIT = 10.0


@dataclass(eq=False, slots=True)
class _WaitFor(Generic[T]):
    """An item waiting to be added, with its ready time and its place in the heap."""

    item: T
    ready_at: float
    # Insertion order breaks ties, so items with the same ready time keep FIFO order.
    seq: int
    index: int = -1

    def before(self, other: "_WaitFor[T]") -> bool:
        return (self.ready_at, self.seq) < (other.ready_at, other.seq)


class _WaitForHeap(Generic[T]):
    """A binary min-heap of ``_WaitFor`` that tracks positions so an entry can be moved up.

    ``heapq`` cannot change an entry's priority in place; client-go uses container/heap's
    ``Fix`` for that, and this is the same algorithm with only the operations we need.
    """

    def __init__(self) -> None:
        self._entries: list[_WaitFor[T]] = []

    def __len__(self) -> int:
        return len(self._entries)

    def peek(self) -> _WaitFor[T]:
        return self._entries[0]

    def push(self, entry: _WaitFor[T]) -> None:
        entry.index = len(self._entries)
        self._entries.append(entry)
        self._sift_up(entry.index)

    def pop(self) -> _WaitFor[T]:
        entries = self._entries
        top = entries[0]
        last = entries.pop()
        if entries:
            entries[0] = last
            last.index = 0
            self._sift_down(0)
        top.index = -1
        return top

    def moved_earlier(self, entry: _WaitFor[T]) -> None:
        """Restore the heap after ``entry.ready_at`` was lowered."""
        self._sift_up(entry.index)

    def clear(self) -> None:
        self._entries.clear()

    def _swap(self, i: int, j: int) -> None:
        entries = self._entries
        entries[i], entries[j] = entries[j], entries[i]
        entries[i].index = i
        entries[j].index = j

    def _sift_up(self, i: int) -> None:
        entries = self._entries
        while i > 0:
            parent = (i - 1) // 2
            if not entries[i].before(entries[parent]):
                break
            self._swap(i, parent)
            i = parent

    def _sift_down(self, i: int) -> None:
        entries = self._entries
        n = len(entries)
        while True:
            smallest = i
            for child in (2 * i + 1, 2 * i + 2):
                if child < n and entries[child].before(entries[smallest]):
                    smallest = child
            if smallest == i:
                return
            self._swap(i, smallest)
            i = smallest


class DelayingQueue(Queue[T]):
    """A ``Queue`` with ``add_after``; starts one daemon thread, stopped by ``shut_down``."""

    def __init__(
        self,
        name: str = "",
        metrics_provider: MetricsProvider | None = None,
        clock: Clock | None = None,
    ) -> None:
        super().__init__(name=name, metrics_provider=metrics_provider, clock=clock)
        # The heap has its own lock: the waiting thread holds it while it calls add(), so
        # the lock order is always heap lock -> queue lock.
        self._heap_cond = threading.Condition(threading.Lock())
        self._heap: _WaitForHeap[T] = _WaitForHeap()
        self._waiting: dict[T, _WaitFor[T]] = {}
        self._seq = 0
        self._stopped = False
        self._thread = threading.Thread(
            target=self._waiting_loop, name=f"workqueue-delaying-{name or 'unnamed'}", daemon=True
        )
        self._thread.start()

    def add_after(self, item: T, seconds: float) -> None:
        """Add ``item`` once ``seconds`` have passed; at once if ``seconds <= 0``.

        If the item is already waiting, the earlier ready time wins.
        """
        if self.shutting_down():
            return
        if self._metrics is not None:
            # Only a counter is touched, and metric objects are thread-safe: no queue lock.
            self._metrics.retry()
        if seconds <= 0:
            self.add(item)
            return
        with self._heap_cond:
            if self._stopped:
                return
            ready_at = self._clock.now() + seconds
            entry = self._waiting.get(item)
            if entry is None:
                self._seq += 1
                entry = _WaitFor(item, ready_at, self._seq)
                self._waiting[item] = entry
                self._heap.push(entry)
            elif ready_at < entry.ready_at:
                entry.ready_at = ready_at
                self._heap.moved_earlier(entry)
            else:
                return
            if self._heap.peek() is entry:
                # The thread sleeps until the previous earliest time; make it re-arm.
                self._heap_cond.notify()

    def waiting_due(self) -> int:
        """How many delayed items are due by the clock but not yet handed to the queue. The delaying
        thread moves them as soon as it wakes; with a fake clock, a test steps the clock and waits
        for 0 before it drains (client-go's tests poll the queue's length the same way)."""
        with self._heap_cond:
            now = self._clock.now()
            return sum(1 for entry in self._waiting.values() if entry.ready_at <= now)

    def shut_down(self) -> None:
        super().shut_down()
        self._stop_waiting()

    def shut_down_with_drain(self) -> None:
        # Stop the delaying thread first: items still waiting would be dropped by add()
        # anyway, and the drain may take a while.
        self._stop_waiting()
        super().shut_down_with_drain()

    def _stop_waiting(self) -> None:
        with self._heap_cond:
            self._stopped = True
            self._heap_cond.notify_all()
        if threading.current_thread() is not self._thread:
            self._thread.join()

    def _waiting_loop(self) -> None:
        with self._heap_cond:
            while not self._stopped:
                now = self._clock.now()
                while self._heap and self._heap.peek().ready_at <= now:
                    entry = self._heap.pop()
                    del self._waiting[entry.item]
                    self.add(entry.item)
                deadline = now + MAX_WAIT
                if self._heap:
                    deadline = min(deadline, self._heap.peek().ready_at)
                self._clock.wait_until(self._heap_cond, deadline)
            # Shut down: whatever is still waiting is dropped, as in client-go.
            self._heap.clear()
            self._waiting.clear()
