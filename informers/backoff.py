"""Exponential back-off with jitter for the reflector's reconnects (client-go's backoff manager).

client-go's reflector waits 0.8 s after a failed list or watch, doubling up to 30 s, each wait
stretched by up to +100 % jitter (so waits stop at [30, 60) s, "0.22 QPS" per reflector), and it
starts again from 0.8 s once two minutes have passed since the previous back-off. The same numbers
are used here. The clock and the random source are injected so tests are deterministic.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable

__all__ = ["Backoff"]

from kube.clock import REAL_CLOCK, Clock


class Backoff:
    """`next_delay()` returns the next wait; call it once per failure."""

    def __init__(
        self,
        *,
        initial: float = 0.8,
        maximum: float = 30.0,
        factor: float = 2.0,
        jitter: float = 1.0,
        reset_after: float = 120.0,
        clock: Clock = REAL_CLOCK,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self.initial = initial
        self.maximum = maximum
        self.factor = factor
        self.jitter = jitter
        self.reset_after = reset_after
        self._clock = clock
        self._rand = rand
        self._lock = threading.Lock()
        self._current = initial
        self._last: float | None = None

    def next_delay(self) -> float:
        """The wait before the next attempt: the current step plus jitter; then the step doubles."""
        with self._lock:
            now = self._clock.now()
            if self._last is not None and now - self._last > self.reset_after:
                self._current = self.initial
            self._last = now
            step = self._current
            self._current = min(self.maximum, self._current * self.factor)
            return step + step * self.jitter * self._rand()

    def reset(self) -> None:
        with self._lock:
            self._current = self.initial
            self._last = None
