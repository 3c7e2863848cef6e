"""The rate-limiting queue: the queue controllers use, with retries that back off.

Port of client-go's ``rate_limiting_queue.go``. It is a ``DelayingQueue`` plus a rate
limiter: ``add_rate_limited(item)`` is ``add_after(item, limiter.when(item))``. Workers call
``add_rate_limited`` when a sync fails and ``forget`` when it succeeds; ``forget`` only clears
the limiter's history and ``done`` must still be called. Remember to call ``forget``: if
you don't, the limiter tracks the item's failures forever.
"""

from kube.clock import Clock
from workqueue.delaying import DelayingQueue
from workqueue.metrics import MetricsProvider
from workqueue.queue import T
from workqueue.rate_limiters import RateLimiter, default_controller_rate_limiter


class RateLimitingQueue(DelayingQueue[T]):
    """A ``DelayingQueue`` whose retries are delayed by a ``RateLimiter``.

    Without ``rate_limiter`` it uses ``default_controller_rate_limiter`` on the same clock.
    """

    def __init__(
        self,
        rate_limiter: RateLimiter | None = None,
        name: str = "",
        metrics_provider: MetricsProvider | None = None,
        clock: Clock | None = None,
    ) -> None:
        super().__init__(name=name, metrics_provider=metrics_provider, clock=clock)
        self._rate_limiter: RateLimiter = (
            rate_limiter if rate_limiter is not None else default_controller_rate_limiter(clock=self._clock)
        )

    def add_rate_limited(self, item: T, min_delay: float = 0.0) -> None:
        """Add ``item`` after the delay the rate limiter decides (which counts a failure), and
        not sooner than ``min_delay`` (e.g. a server's Retry-After)."""
        self.add_after(item, max(self._rate_limiter.when(item), min_delay))

    def forget(self, item: T) -> None:
        """Clear the limiter's history of ``item``; ``done`` must still be called."""
        self._rate_limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return self._rate_limiter.num_requeues(item)
