"""A rate-limited work queue with client-go's ``util/workqueue`` semantics, for Python threads.

``RateLimitingQueue`` is what a controller uses: informer handlers ``add`` keys, workers
``get``/``done`` them, failed keys go back with ``add_rate_limited`` and successful ones are
``forget``-ten. ``Queue`` and ``DelayingQueue`` are the layers underneath. Clocks are
injectable (``kube.clock.FakeClock`` in tests) and metrics go through a ``MetricsProvider``.
"""

from workqueue.delaying import DelayingQueue
from workqueue.metrics import MetricsProvider, NoopMetricsProvider, PrometheusMetricsProvider
from workqueue.queue import Queue
from workqueue.rate_limiters import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    WithMaxWaitRateLimiter,
    default_controller_rate_limiter,
)
from workqueue.rate_limiting import RateLimitingQueue

__all__ = [
    "BucketRateLimiter",
    "DelayingQueue",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "MaxOfRateLimiter",
    "MetricsProvider",
    "NoopMetricsProvider",
    "PrometheusMetricsProvider",
    "Queue",
    "RateLimiter",
    "RateLimitingQueue",
    "WithMaxWaitRateLimiter",
    "default_controller_rate_limiter",
]
