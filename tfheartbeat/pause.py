"""A known long pause (saving a large checkpoint, an evaluation pass) that must not count as a stall.

`with pausing(seconds): ...` keeps beating from a background thread while the block runs, for at
most `seconds`: a pause longer than announced is a stall again, so a checkpoint write that hangs
still ends in a restart.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator

from tfheartbeat.heart import Heartbeat


@contextlib.contextmanager
def pausing(heartbeat: Heartbeat, seconds: float, interval: float = 5.0,
            clock: Callable[[], float] = time.monotonic) -> Iterator[None]:
    done = threading.Event()
    deadline = clock() + seconds

    def keep_beating() -> None:
        while not done.is_set() and clock() < deadline:
            heartbeat.beat(force=True)
            done.wait(min(interval, max(0.0, deadline - clock())))

    thread = threading.Thread(target=keep_beating, name="tfheartbeat-pause", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
        heartbeat.beat(force=True)  # the pause is over: that is progress too
