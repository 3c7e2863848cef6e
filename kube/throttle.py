"""The one token bucket: client-go's QPS/burst for API requests, and the work queue's overall retry
limit (`workqueue.BucketRateLimiter`).

It reproduces `golang.org/x/time/rate`'s `Limiter.Reserve().Delay()`: every reservation takes a
token even if none is left, putting the bucket into debt, and answers how long the caller must wait
for that token. The clock is injected so tests do not sleep.
"""

from __future__ import annotations

import math
import threading

from kube.clock import REAL_CLOCK, Clock

__all__ = ["TokenBucket"]


class TokenBucket:
    """A thread-safe token bucket: `qps` tokens per second, at most `burst` saved up, full at first.

    `reserve()` takes a token and returns the seconds until it is due (the bucket may go into debt,
    like Go's `rate.Limiter`); `acquire()` also sleeps that long, outside the lock, so waiters are
    served in arrival order. As in `x/time/rate`, an infinite `qps` never waits, and a `burst` below
    1 (or a `qps` of 0 once the saved tokens are spent) never grants a token: the delay is infinite.
    """

    def __init__(
        self,
        qps: float,
        burst: int,
        *,
        clock: Clock = REAL_CLOCK,
    ) -> None:
        self.qps = qps
        self.burst = burst
        self._clock = clock
        self._lock = threading.Lock()
        self._tokens = float(burst)
        self._last = clock.now()

    def reserve(self) -> float:
        """Take a token; return the seconds to wait before using it (`math.inf`: never)."""
        with self._lock:
            if math.isinf(self.qps):
                return 0.0
            if self.burst < 1:
                return math.inf
            now = self._clock.now()
            # advance(): refill for the time since the last reservation, up to burst.
            elapsed = max(0.0, now - self._last)
            self._tokens = min(float(self.burst), self._tokens + elapsed * self.qps) - 1.0
            self._last = now
            if self._tokens >= 0:
                return 0.0
            if self.qps <= 0:
                return math.inf
            return -self._tokens / self.qps

    def acquire(self) -> float:
        """Block until a token is available; return the seconds waited."""
        delay = self.reserve()
        if math.isinf(delay):
            raise ValueError(f"a token bucket of {self.qps} qps and burst {self.burst} never grants a token")
        if delay > 0:
            self._clock.sleep(delay)
        return delay
