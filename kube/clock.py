"""The one clock of the project: monotonic time, wall time, sleeping and waiting, real or fake.

client-go injects a clock into everything that keeps time so delays, back-offs, leases and
deadlines are tested without sleeping; this module does the same. Everything that keeps time takes a
`Clock` (default `REAL_CLOCK`), and tests pass one `FakeClock` that they move by hand. A clock does:

* ``now()`` -- monotonic seconds, for ready times, token buckets, expectations, leases and metrics;
* ``wall()`` -- the UTC date and time, for what is written to the API (status times, Events);
* ``sleep(seconds, stop)`` -- pause, returning early (True) when ``stop`` is set;
* ``wait_until(cond, deadline)`` -- block a thread that holds ``cond`` until somebody notifies it or
  the clock reaches ``deadline``. The delaying queue's thread sleeps through this call, so a fake
  clock can wake it when fake time passes.

``FakeClock`` moves only when a test calls ``step`` (or something sleeps on it: a fake sleep
advances fake time and records the pause). It wakes only the waiters whose deadline was reached,
exactly like a fake timer firing; a waiter with a later deadline keeps sleeping, so tests can check
that a background thread re-armed itself for an earlier deadline (``waiter_deadlines()`` shows what
it waits for). Its wall time moves with its monotonic time.
"""

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol

__all__ = ["REAL_CLOCK", "Clock", "FakeClock", "RealClock"]


class Clock(Protocol):
    """What everything that keeps time needs from a clock."""

    def now(self) -> float:
        """Monotonic time in seconds."""
        ...

    def wall(self) -> datetime:
        """The current date and time in UTC."""
        ...

    def sleep(self, seconds: float, stop: threading.Event | None = None) -> bool:
        """Pause for ``seconds``; return True at once when ``stop`` is (or becomes) set."""
        ...

    def wait_until(self, cond: threading.Condition, deadline: float | None) -> None:
        """Wait on ``cond`` (held by the caller) until notified or ``deadline`` is reached.

        ``deadline`` is in the clock's own time; ``None`` means wait only for a notification.
        Like ``Condition.wait`` this may return early, so callers re-check their state in a loop.
        """
        ...


class RealClock:
    """The real clock: ``time.monotonic``, ``datetime.now(UTC)`` and waits with a timeout."""

    def now(self) -> float:
        return time.monotonic()

    def wall(self) -> datetime:
        return datetime.now(UTC)

    def sleep(self, seconds: float, stop: threading.Event | None = None) -> bool:
        if stop is not None:
            return stop.wait(max(0.0, seconds))
        if seconds > 0:
            time.sleep(seconds)
        return False

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

    def __init__(self, start: float = 0.0, wall: datetime = datetime(2026, 1, 1, tzinfo=UTC)) -> None:
        self._lock = threading.Lock()
        self._start = start
        self._now = start
        self._wall = wall
        self._waiters: list[_Waiter] = []
        self.sleeps: list[float] = []  # every pause taken through sleep(), in order
        # Called after each fake sleep, so a test can act between the pauses of a loop it drives.
        self.on_sleep: Callable[[], None] | None = None

    def now(self) -> float:
        with self._lock:
            return self._now

    def wall(self) -> datetime:
        with self._lock:
            return self._wall + timedelta(seconds=self._now - self._start)

    def sleep(self, seconds: float, stop: threading.Event | None = None) -> bool:
        """A fake pause: fake time moves on by ``seconds`` at once (unless ``stop`` is already set)."""
        if stop is not None and stop.is_set():
            return True
        with self._lock:
            self.sleeps.append(seconds)
        self.step(max(0.0, seconds))
        if self.on_sleep is not None:
            self.on_sleep()
        return stop is not None and stop.is_set()

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


REAL_CLOCK = RealClock()
"""The clock every component uses unless a test injects another."""
