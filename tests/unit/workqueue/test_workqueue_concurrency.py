"""Many producers and consumers: the queue's guarantees under real thread interleavings.

Each add is preceded by bumping the key's version, the way an informer updates its cache
before enqueueing; each worker records the version it saw. "Processed at least once after
its last add" then means: every key's last seen version is its final version.
"""

import random
import sys
import threading
from collections.abc import Callable, Iterator

import pytest

from workqueue import Queue

PRODUCERS = 8
CONSUMERS = 8
ADDS = 100_000
KEYS = 1_000


@pytest.fixture(autouse=True)
def frequent_thread_switches() -> Iterator[None]:
    """Switch threads every 10 microseconds instead of 5 ms, to get many more interleavings."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(previous)


def test_producers_and_consumers_never_share_a_key_and_drain_waits_for_every_done(
    join: Callable[[threading.Thread], None],
) -> None:
    q: Queue[str] = Queue()
    keys = [f"ns/job-{i}" for i in range(KEYS)]
    lock = threading.Lock()
    version = dict.fromkeys(keys, 0)
    seen = dict.fromkeys(keys, 0)
    active: set[str] = set()
    overlaps: list[str] = []
    counts = {"gets": 0, "dones": 0}

    def produce(seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(ADDS // PRODUCERS):
            key = rng.choice(keys)
            with lock:
                version[key] += 1
            q.add(key)

    def consume() -> None:
        while True:
            key, shutdown = q.get()
            if shutdown:
                return
            assert key is not None
            with lock:
                counts["gets"] += 1
                if key in active:
                    overlaps.append(key)
                active.add(key)
                seen[key] = version[key]
            # Stand-in for a sync: long enough for other threads to run while the key is held.
            sum(range(200))
            with lock:
                active.discard(key)
                # Counted before done(): once the drain returns, every done has been counted.
                counts["dones"] += 1
            q.done(key)

    consumers = [threading.Thread(target=consume, name=f"consumer-{i}") for i in range(CONSUMERS)]
    producers = [threading.Thread(target=produce, args=(i,), name=f"producer-{i}") for i in range(PRODUCERS)]
    for thread in consumers + producers:
        thread.start()
    for thread in producers:
        join(thread)

    q.shut_down_with_drain()
    with lock:
        at_drain = dict(counts)
    for thread in consumers:
        join(thread)

    assert overlaps == []
    assert sum(version.values()) == ADDS
    assert seen == version
    assert at_drain["gets"] == at_drain["dones"]
    # Nothing was handed out after the drain returned.
    assert counts == at_drain
    assert q.len() == 0
