"""Rate limiters that decide how long a failed item waits before it is retried.

Port of client-go's ``default_rate_limiters.go``. A limiter answers ``when(item)`` with a
delay in seconds (and usually counts the call as a failure of that item), ``forget(item)``
clears the item's history, and ``num_requeues(item)`` reports how often it failed.

The controller default, ``default_controller_rate_limiter()``, is the maximum of a per-item
exponential back-off (5 ms, 10 ms, 20 ms ... capped at 1000 s) and an overall token bucket
(10 qps, burst 100). The bucket is only the overall retry speed, not per item.

``BucketRateLimiter`` reproduces ``golang.org/x/time/rate``'s ``Limiter.Reserve().Delay()``
with the API client's token bucket (``kube.throttle``): every call takes a token even if none
is left, putting the bucket into debt, and returns how long the caller must wait for that
token. All delays are float seconds.
"""

import threading
from collections.abc import Hashable
from typing import Protocol

from kube.clock import Clock, RealClock
from kube.throttle import TokenBucket


class RateLimiter(Protocol):
    def when(self, item: Hashable) -> float:
        """How many seconds ``item`` should wait; usually also records a failure."""
        ...

    def forget(self, item: Hashable) -> None:
        """Stop tracking ``item``, e.g. because it succeeded."""
        ...

    def num_requeues(self, item: Hashable) -> int:
        """How many failures of ``item`` are being tracked."""
        ...


class ItemExponentialFailureRateLimiter:
    """Per-item back-off: ``base_delay * 2**failures``, capped at ``max_delay``."""

    def __init__(self, base_delay: float = 0.005, max_delay: float = 1000.0) -> None:
        self._lock = threading.Lock()
        self._failures: dict[Hashable, int] = {}
        self._base_delay = base_delay
        self._max_delay = max_delay

    def when(self, item: Hashable) -> float:
        with self._lock:
            exp = self._failures.get(item, 0)
            self._failures[item] = exp + 1
        try:
            backoff = self._base_delay * 2.0**exp
        except OverflowError:
            # client-go guards against int64 overflow the same way: past the range, the cap.
            return self._max_delay
        return min(backoff, self._max_delay)

    def num_requeues(self, item: Hashable) -> int:
        with self._lock:
            return self._failures.get(item, 0)

    def forget(self, item: Hashable) -> None:
        with self._lock:
            self._failures.pop(item, None)


class ItemFastSlowRateLimiter:
    """Per-item: ``fast_delay`` for the first ``max_fast_attempts`` failures, then ``slow_delay``."""

    def __init__(self, fast_delay: float, slow_delay: float, max_fast_attempts: int) -> None:
        self._lock = threading.Lock()
        self._failures: dict[Hashable, int] = {}
        self._fast_delay = fast_delay
        self._slow_delay = slow_delay
        self._max_fast_attempts = max_fast_attempts

    def when(self, item: Hashable) -> float:
        with self._lock:
            failures = self._failures.get(item, 0) + 1
            self._failures[item] = failures
        return self._fast_delay if failures <= self._max_fast_attempts else self._slow_delay

    def num_requeues(self, item: Hashable) -> int:
        with self._lock:
            return self._failures.get(item, 0)

    def forget(self, item: Hashable) -> None:
        with self._lock:
            self._failures.pop(item, None)


class BucketRateLimiter:
    """An overall token bucket: ``burst`` tokens, refilled at ``qps`` tokens per second.

    ``when`` always reserves a token; when the bucket is empty the reservation goes into debt
    and the returned delay is the time until that token will have been refilled. With
    ``burst`` 0 no reservation can ever succeed and the delay is infinite, as in
    ``x/time/rate`` (where it is ``InfDuration``). It has no per-item state. The bucket is the
    API client's (``kube.throttle.TokenBucket``), asked for reservations and never slept on.
    """

    def __init__(self, qps: float, burst: int, clock: Clock | None = None) -> None:
        self._bucket = TokenBucket(qps, burst, clock=clock if clock is not None else RealClock())

    def when(self, item: Hashable) -> float:
        return self._bucket.reserve()

    def num_requeues(self, item: Hashable) -> int:
        return 0

    def forget(self, item: Hashable) -> None:
        pass


class MaxOfRateLimiter:
    """The longest delay of several limiters; every limiter is asked, so all of them count."""

    def __init__(self, *limiters: RateLimiter) -> None:
        if not limiters:
            raise ValueError("MaxOfRateLimiter needs at least one limiter")
        self._limiters = limiters

    def when(self, item: Hashable) -> float:
        # A list, not a generator inside max(): each limiter's when() must run (the bucket
        # takes its token even when the per-item back-off is longer).
        return max([limiter.when(item) for limiter in self._limiters])

    def num_requeues(self, item: Hashable) -> int:
        return max(limiter.num_requeues(item) for limiter in self._limiters)

    def forget(self, item: Hashable) -> None:
        for limiter in self._limiters:
            limiter.forget(item)


class WithMaxWaitRateLimiter:
    """Wraps a limiter and caps every delay at ``max_delay``."""

    def __init__(self, limiter: RateLimiter, max_delay: float) -> None:
        self._limiter = limiter
        self._max_delay = max_delay

    def when(self, item: Hashable) -> float:
        return min(self._limiter.when(item), self._max_delay)

    def num_requeues(self, item: Hashable) -> int:
        return self._limiter.num_requeues(item)

    def forget(self, item: Hashable) -> None:
        self._limiter.forget(item)


def default_controller_rate_limiter(
    base: float = 0.005,
    cap: float = 1000.0,
    qps: float = 10.0,
    burst: int = 100,
    clock: Clock | None = None,
) -> MaxOfRateLimiter:
    """client-go's DefaultControllerRateLimiter: max(per-item exponential, token bucket).

    The bucket (10 qps, 100 burst) limits only the overall retry speed, not any one item.
    """
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(base, cap),
        BucketRateLimiter(qps, burst, clock=clock),
    )
