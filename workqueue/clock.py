"""Clocks for the work queue: the real monotonic clock and a fake one for tests.

client-go injects a clock into every queue so that delays and back-offs can be tested
without sleeping. This module does the same for Python threads. A clock has to do two
things:

* ``now()`` -- monotonic seconds, used for ready times, token buckets and metrics.
* ``wait_until(cond, deadline)`` -- block a thread that holds ``cond`` until somebody
  notifies ``cond`` or the clock reaches ``deadline``. The delaying queue's background
  thread sleeps through this call, so a fake clock can wake it when fake time passes.

``FakeClock`` only wakes waiters whose deadline has been reached by ``step``, exactly like a
fake timer firing; a waiter with a later deadline keeps sleeping. Tests can therefore check
that a background thread really re-armed itself for an earlier deadline, and can use
``waiter_deadlines()`` to see what the thread is waiting for (client-go's tests read the
same information from the delaying queue's channel).
"""

import threading
import time
from dataclasses import dataclass
from typing import Protocol


class Clock(Protocol):
    """What the queue, the delaying thread and the rate limiters need from a clock."""

    def now(self) -> float:
        """Monotonic time in seconds."""
        ...

    def wait_until(self, cond: threading.Condition, deadline: float | None) -> None:
        """Wait on ``cond`` (held by the caller) until notified or ``deadline`` is reached.

        ``deadline`` is in the clock's own time; ``None`` means wait only for a notification.
        Like ``Condition.wait`` this may return early, so callers re-check their state in a loop.
        """
        ...


class RealClock:
    """The real clock: ``time.monotonic`` and ``Condition.wait`` with a timeout."""

    def now(self) -> float:
        return time.monotonic()

    def wait_until(self, cond: threading.Condition, deadline: float | None) -> None:
        if deadline is None:
            cond.wait()
            return
        timeout = deadline - time.monotonic()
        if timeout > 0:
            cond.wait(timeout)


@dataclass(eq=False)
class _Waiter:
    """One thread blocked in ``FakeClock.wait_until``: its condition and its deadline."""

    cond: threading.Condition
    deadline: float | None


class FakeClock:
    """A clock that only moves when a test calls ``step``; it wakes waiters whose time came.

    Lock order: a waiter holds its condition and then takes the clock's lock to register;
    ``step`` takes the clock's lock, releases it, and only then takes each due waiter's
    condition to notify it. Registering and the "has the deadline already passed?" check
    happen together under the clock's lock, so a step that races with a thread going to
    sleep can never be missed: either the thread sees the new time, or it is registered
    before the step looks for due waiters.
    """

    def __init__(self, start: float = 0.0) -> None:
        self._lock = threading.Lock()
        self._now = start
        self._waiters: list[_Waiter] = []

    def now(self) -> float:
        with self._lock:
            return self._now

    def step(self, seconds: float) -> None:
        """Advance fake time by ``seconds`` and wake every waiter whose deadline has come."""
        with self._lock:
            self._now += seconds
            due = [w for w in self._waiters if w.deadline is not None and w.deadline <= self._now]
            # Due waiters are unregistered here rather than by themselves, so that as soon
            # as step() returns, "has waiters" means "has gone back to sleep after this step".
            self._waiters = [w for w in self._waiters if w not in due]
        for waiter in due:
            with waiter.cond:
                waiter.cond.notify_all()

    def wait_until(self, cond: threading.Condition, deadline: float | None) -> None:
        with self._lock:
            if deadline is not None and self._now >= deadline:
                return
            waiter = _Waiter(cond, deadline)
            self._waiters.append(waiter)
        try:
            cond.wait()
        finally:
            # A notify from someone other than step() (a new item, a shutdown) leaves the
            # registration behind; drop it so it cannot be mistaken for a sleeping thread.
            with self._lock:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)

    def has_waiters(self) -> bool:
        """True while some thread is asleep in ``wait_until``."""
        with self._lock:
            return bool(self._waiters)

    def waiter_deadlines(self) -> list[float | None]:
        """The deadlines the sleeping threads are waiting for, for assertions in tests."""
        with self._lock:
            return [w.deadline for w in self._waiters]
