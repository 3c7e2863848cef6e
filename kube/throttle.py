"""Client-side throttling of API requests: client-go's QPS/burst, as a blocking token bucket.

Every request but a watch takes a token first, so a burst of reconciles cannot flood the API server
beyond the configured rate. The clock is injected so tests do not sleep.
"""

from __future__ import annotations

import threading

from kube.clock import REAL_CLOCK, Clock

__all__ = ["TokenBucket"]


class TokenBucket:
    """A blocking, thread-safe token bucket: `qps` tokens per second, at most `burst` saved up.

    `acquire()` reserves a token (the bucket may go into debt, like Go's `rate.Limiter.Wait`) and
    sleeps outside the lock until the reservation is due, so waiters are served in arrival order.
    """

    def __init__(
        self,
        qps: float,
        burst: int,
        *,
        clock: Clock = REAL_CLOCK,
    ) -> None:
        if qps <= 0:
            raise ValueError("qps must be > 0")
        self.qps = qps
        self.burst = max(1, burst)
        self._clock = clock
        self._lock = threading.Lock()
        self._tokens = float(self.burst)
        self._last = clock.now()

    def reserve(self) -> float:
        """Take a token; return the seconds to wait before using it."""
        with self._lock:
            now = self._clock.now()
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
            self._last = now
            self._tokens -= 1.0
            return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def acquire(self) -> float:
        """Block until a token is available; return the seconds waited."""
        delay = self.reserve()
        if delay > 0:
            self._clock.sleep(delay)
        return delay

