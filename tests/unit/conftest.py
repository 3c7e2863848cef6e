"""Fixtures shared by the unit tests: the one fake clock, and condition waits for background threads.

Threaded code (the delaying queue, informers, the controller's workers) is never given time by
sleeping: tests wait for a condition with a generous real timeout that only matters when the code
under test is broken, and move time with `FakeClock.step`.
"""

import threading
from collections.abc import Callable

import pytest

from kube.clock import FakeClock
from tests.support import polling

# Only reached when a test is about to fail; a passing test never waits this long.
CONDITION_TIMEOUT = 10.0


@pytest.fixture
def eventually() -> Callable[..., bool]:
    return lambda predicate, timeout=CONDITION_TIMEOUT: polling.eventually(predicate, timeout)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def join() -> Callable[[threading.Thread], None]:
    """Join a thread the test expects to finish; fail instead of hanging if it does not."""

    def join_thread(thread: threading.Thread) -> None:
        thread.join(CONDITION_TIMEOUT)
        assert not thread.is_alive(), f"{thread.name} did not finish"

    return join_thread
