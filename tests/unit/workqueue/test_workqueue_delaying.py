"""DelayingQueue: client-go's delaying_queue_test.go cases, driven by a fake clock.

Fake time starts at 0 and moves in binary fractions of a second, so ready times compare
exactly. ``wait_for_sleep(t)`` waits until the background thread is asleep until fake time
``t``; after that, a step that does not reach ``t`` cannot wake it, so "nothing is queued
yet" is a deterministic assertion.
"""

import threading
from collections.abc import Callable

import pytest

from kube.clock import FakeClock, RealClock
from workqueue import DelayingQueue
from workqueue.delaying import MAX_WAIT


def test_add_after_queues_the_item_once_its_delay_has_passed(
    delaying_queue: DelayingQueue[str],
    clock: FakeClock,
    wait_for_sleep: Callable[[float], None],
    eventually: Callable[..., bool],
) -> None:
    delaying_queue.add_after("foo", 0.5)
    wait_for_sleep(0.5)
    assert delaying_queue.len() == 0
    clock.step(0.25)
    assert delaying_queue.len() == 0
    clock.step(0.25)
    assert eventually(lambda: delaying_queue.len() == 1)
    assert delaying_queue.get() == ("foo", False)


def test_waiting_due_counts_due_items_until_the_thread_has_queued_them(
    delaying_queue: DelayingQueue[str],
    clock: FakeClock,
    wait_for_sleep: Callable[[float], None],
    eventually: Callable[..., bool],
) -> None:
    delaying_queue.add_after("foo", 0.5)
    delaying_queue.add_after("bar", 1.0)
    wait_for_sleep(0.5)
    assert delaying_queue.waiting_due() == 0
    clock.step(0.5)  # foo is due; the thread may not have woken yet
    assert eventually(lambda: delaying_queue.waiting_due() == 0 and delaying_queue.len() == 1)
    assert delaying_queue.get() == ("foo", False)


@pytest.mark.parametrize("seconds", [0.0, -1.0])
def test_add_after_without_a_positive_delay_adds_at_once(delaying_queue: DelayingQueue[str], seconds: float) -> None:
    delaying_queue.add_after("foo", seconds)
    assert delaying_queue.len() == 1


def test_waiting_item_keeps_its_earlier_ready_time_when_added_with_a_longer_delay(
    delaying_queue: DelayingQueue[str],
    clock: FakeClock,
    wait_for_sleep: Callable[[float], None],
    eventually: Callable[..., bool],
) -> None:
    delaying_queue.add_after("foo", 0.5)
    delaying_queue.add_after("foo", 0.75)
    wait_for_sleep(0.5)
    clock.step(0.5)
    assert eventually(lambda: delaying_queue.len() == 1)
    item, _ = delaying_queue.get()
    delaying_queue.done(item)
    # The later add did not leave a second entry behind.
    wait_for_sleep(0.5 + MAX_WAIT)
    clock.step(0.25)
    assert delaying_queue.len() == 0


def test_waiting_item_moves_earlier_when_added_with_a_shorter_delay(
    delaying_queue: DelayingQueue[str],
    clock: FakeClock,
    wait_for_sleep: Callable[[float], None],
    eventually: Callable[..., bool],
) -> None:
    delaying_queue.add_after("foo", 0.75)
    wait_for_sleep(0.75)
    delaying_queue.add_after("foo", 0.5)
    wait_for_sleep(0.5)
    clock.step(0.5)
    assert eventually(lambda: delaying_queue.len() == 1)
    item, _ = delaying_queue.get()
    delaying_queue.done(item)
    wait_for_sleep(0.5 + MAX_WAIT)
    clock.step(0.25)
    assert delaying_queue.len() == 0


def test_new_earlier_item_wakes_the_waiting_thread_to_re_arm(
    delaying_queue: DelayingQueue[str],
    clock: FakeClock,
    wait_for_sleep: Callable[[float], None],
    eventually: Callable[..., bool],
) -> None:
    delaying_queue.add_after("late", 5.0)
    wait_for_sleep(5.0)
    delaying_queue.add_after("early", 1.0)
    wait_for_sleep(1.0)
    clock.step(1.0)
    assert eventually(lambda: delaying_queue.len() == 1)
    assert delaying_queue.get() == ("early", False)
    wait_for_sleep(5.0)
    assert delaying_queue.len() == 0


def test_ready_items_are_queued_in_ready_time_order(
    delaying_queue: DelayingQueue[str], clock: FakeClock, eventually: Callable[..., bool]
) -> None:
    delaying_queue.add_after("foo", 0.75)
    delaying_queue.add_after("bar", 0.5)
    delaying_queue.add_after("baz", 0.25)
    clock.step(1.0)
    assert eventually(lambda: delaying_queue.len() == 3)
    assert [delaying_queue.get()[0] for _ in range(3)] == ["baz", "bar", "foo"]


def test_items_with_the_same_ready_time_keep_their_insertion_order(
    delaying_queue: DelayingQueue[str], clock: FakeClock, eventually: Callable[..., bool]
) -> None:
    items = [f"item-{i}" for i in range(20)]
    for item in items:
        delaying_queue.add_after(item, 0.5)
    clock.step(0.5)
    assert eventually(lambda: delaying_queue.len() == len(items))
    assert [delaying_queue.get()[0] for _ in items] == items


def test_only_the_items_that_are_due_are_queued(
    delaying_queue: DelayingQueue[str],
    clock: FakeClock,
    wait_for_sleep: Callable[[float], None],
    eventually: Callable[..., bool],
) -> None:
    delaying_queue.add_after("foo", 1.0)
    delaying_queue.add_after("bar", 0.25)
    clock.step(0.5)
    assert eventually(lambda: delaying_queue.len() == 1)
    assert delaying_queue.get() == ("bar", False)
    wait_for_sleep(1.0)
    assert delaying_queue.len() == 0


def test_delayed_item_already_queued_collapses_into_the_queued_one(
    delaying_queue: DelayingQueue[str],
    clock: FakeClock,
    wait_for_sleep: Callable[[float], None],
) -> None:
    delaying_queue.add("foo")
    delaying_queue.add_after("foo", 0.5)
    wait_for_sleep(0.5)
    clock.step(0.5)
    # The thread moved foo (add() collapsed it) and went back to sleep on an empty heap.
    wait_for_sleep(0.5 + MAX_WAIT)
    assert delaying_queue.len() == 1


def test_delayed_items_are_dropped_on_shut_down(delaying_queue: DelayingQueue[str], clock: FakeClock) -> None:
    delaying_queue.add_after("foo", 0.5)
    delaying_queue.shut_down()
    clock.step(1.0)
    assert delaying_queue.get() == (None, True)


def test_add_after_after_shut_down_is_ignored(delaying_queue: DelayingQueue[str], clock: FakeClock) -> None:
    delaying_queue.shut_down()
    delaying_queue.add_after("foo", 0.5)
    delaying_queue.add_after("bar", 0.0)
    clock.step(1.0)
    assert delaying_queue.get() == (None, True)


@pytest.mark.parametrize("shut_down", ["shut_down", "shut_down_with_drain"])
def test_shut_down_stops_the_waiting_thread(clock: FakeClock, shut_down: str) -> None:
    q: DelayingQueue[str] = DelayingQueue(name="stopping", clock=clock)
    q.add_after("foo", 0.5)
    getattr(q, shut_down)()
    assert not any(t.name == "workqueue-delaying-stopping" for t in threading.enumerate())


def test_real_clock_delivers_a_short_delay(join: Callable[[threading.Thread], None]) -> None:
    q: DelayingQueue[str] = DelayingQueue(clock=RealClock())
    try:
        got: list[tuple[str | None, bool]] = []
        worker = threading.Thread(target=lambda: got.append(q.get()))
        worker.start()
        # A long wait first, so the thread has to re-arm for the short one.
        q.add_after("late", 3600.0)
        q.add_after("soon", 0.001)
        join(worker)
        assert got == [("soon", False)]
    finally:
        q.shut_down()
