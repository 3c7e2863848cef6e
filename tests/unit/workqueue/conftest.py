"""Fixtures for the work queue tests: queues on the shared fake clock (tests/unit/conftest.py).

The delaying queue moves items from a background thread. Tests never sleep to let it run:
they wait for a condition (an item is queued, the thread is asleep with a given deadline)
with a generous real timeout that only matters when the code under test is broken.
"""

from collections.abc import Callable, Iterator

import pytest

from kube.clock import FakeClock
from workqueue import DelayingQueue, RateLimiter, RateLimitingQueue


@pytest.fixture
def wait_for_sleep(clock: FakeClock, eventually: Callable[..., bool]) -> Callable[[float], None]:
    """Wait until the delaying thread sleeps with exactly this (fake) deadline."""

    def wait(deadline: float) -> None:
        assert eventually(lambda: deadline in clock.waiter_deadlines()), clock.waiter_deadlines()

    return wait


@pytest.fixture
def delaying_queue(clock: FakeClock) -> Iterator[DelayingQueue[str]]:
    q: DelayingQueue[str] = DelayingQueue(clock=clock)
    yield q
    q.shut_down()


@pytest.fixture
def make_rate_limiting_queue(clock: FakeClock) -> Iterator[Callable[..., RateLimitingQueue[str]]]:
    """Build rate-limiting queues on the fake clock; all of them are shut down afterwards."""
    made: list[RateLimitingQueue[str]] = []

    def make(rate_limiter: RateLimiter | None = None) -> RateLimitingQueue[str]:
        q: RateLimitingQueue[str] = RateLimitingQueue(rate_limiter, clock=clock)
        made.append(q)
        return q

    yield make
    for q in made:
        q.shut_down()
