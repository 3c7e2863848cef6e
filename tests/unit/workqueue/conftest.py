"""Fixtures for the work queue tests: a fake clock and condition waits for background threads.

The delaying queue moves items from a background thread. Tests never sleep to let it run:
they wait for a condition (an item is queued, the thread is asleep with a given deadline)
with a generous real timeout that only matters when the code under test is broken.
"""

import threading
import time
from collections.abc import Callable, Iterator

import pytest

from workqueue import DelayingQueue, FakeClock, RateLimiter, RateLimitingQueue

# Only reached when a test is about to fail; a passing test never waits this long.
CONDITION_TIMEOUT = 10.0


def _eventually(predicate: Callable[[], bool], timeout: float = CONDITION_TIMEOUT) -> bool:
    """Poll ``predicate`` until it holds or ``timeout`` real seconds pass; return its last value."""
    give_up = time.monotonic() + timeout
    pause = threading.Event()
    while not predicate():
        if time.monotonic() >= give_up:
            return predicate()
        pause.wait(0.0005)
    return True


@pytest.fixture
def eventually() -> Callable[..., bool]:
    return _eventually


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def wait_for_sleep(clock: FakeClock) -> Callable[[float], None]:
    """Wait until the delaying thread sleeps with exactly this (fake) deadline."""

    def wait(deadline: float) -> None:
        assert _eventually(lambda: deadline in clock.waiter_deadlines()), clock.waiter_deadlines()

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


@pytest.fixture
def join() -> Callable[[threading.Thread], None]:
    """Join a thread the test expects to finish; fail instead of hanging if it does not."""

    def join_thread(thread: threading.Thread) -> None:
        thread.join(CONDITION_TIMEOUT)
        assert not thread.is_alive(), f"{thread.name} did not finish"

    return join_thread
