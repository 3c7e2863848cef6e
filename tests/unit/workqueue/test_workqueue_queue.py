"""Queue: client-go's queue_test.go cases, single-threaded except where blocking is the point."""

import threading
from collections.abc import Callable

from workqueue import Queue


def test_get_hands_out_items_in_the_order_they_were_added() -> None:
    q: Queue[str] = Queue()
    for item in ("a", "b", "c"):
        q.add(item)
    assert [q.get() for _ in range(3)] == [("a", False), ("b", False), ("c", False)]


def test_item_added_several_times_before_get_is_handed_out_once() -> None:
    q: Queue[str] = Queue()
    q.add("foo")
    q.add("bar")
    q.add("foo")
    assert len(q) == 2
    assert q.get() == ("foo", False)
    assert q.get() == ("bar", False)
    assert q.len() == 0


def test_item_re_added_while_processing_is_handed_out_again_only_after_done() -> None:
    q: Queue[str] = Queue()
    q.add("foo")
    item, _ = q.get()
    q.add("foo")
    # Not queued while a worker holds it, so no second worker can get it.
    assert q.len() == 0
    q.done(item)
    assert q.len() == 1
    assert q.get() == ("foo", False)


def test_item_re_added_many_times_while_processing_is_queued_once_after_done() -> None:
    q: Queue[str] = Queue()
    q.add("foo")
    item, _ = q.get()
    for _ in range(3):
        q.add("foo")
    q.done(item)
    assert q.len() == 1


def test_done_without_re_add_does_not_queue_the_item_again() -> None:
    q: Queue[str] = Queue()
    q.add("foo")
    item, _ = q.get()
    q.done(item)
    assert q.len() == 0


def test_other_items_are_handed_out_while_one_is_processing() -> None:
    q: Queue[str] = Queue()
    q.add("foo")
    foo, _ = q.get()
    q.add("foo")
    q.add("bar")
    assert q.get() == ("bar", False)
    q.done(foo)
    assert q.get() == ("foo", False)


def test_blocked_get_receives_an_item_added_later(join: Callable[[threading.Thread], None]) -> None:
    q: Queue[str] = Queue()
    got: list[tuple[str | None, bool]] = []
    worker = threading.Thread(target=lambda: got.append(q.get()))
    worker.start()
    q.add("foo")
    join(worker)
    assert got == [("foo", False)]


def test_items_added_after_shut_down_are_dropped() -> None:
    q: Queue[str] = Queue()
    q.shut_down()
    q.add("added after shutdown!")
    assert q.len() == 0
    assert q.get() == (None, True)


def test_get_after_shut_down_returns_remaining_items_then_reports_shutdown() -> None:
    q: Queue[str] = Queue()
    q.add("foo")
    q.add("bar")
    q.shut_down()
    assert q.get() == ("foo", False)
    assert q.get() == ("bar", False)
    assert q.get() == (None, True)
    assert q.get() == (None, True)


def test_shut_down_wakes_a_blocked_get_with_shutdown(join: Callable[[threading.Thread], None]) -> None:
    q: Queue[str] = Queue()
    got: list[tuple[str | None, bool]] = []
    worker = threading.Thread(target=lambda: got.append(q.get()))
    worker.start()
    q.shut_down()
    join(worker)
    assert got == [(None, True)]


def test_shutting_down_reports_whether_shut_down_was_called() -> None:
    q: Queue[str] = Queue()
    assert not q.shutting_down()
    q.shut_down()
    assert q.shutting_down()


def test_dirty_item_is_not_re_queued_after_shut_down_by_a_later_add() -> None:
    q: Queue[str] = Queue()
    q.add("foo")
    item, _ = q.get()
    q.shut_down()
    q.add("foo")
    q.done(item)
    assert q.get() == (None, True)


def test_dirty_item_added_before_shut_down_is_still_handed_out_after_done() -> None:
    q: Queue[str] = Queue()
    q.add("foo")
    item, _ = q.get()
    q.add("foo")
    q.shut_down()
    # Nothing is queued while foo is being processed, so get reports shutdown...
    assert q.get() == (None, True)
    q.done(item)
    # ...but done() queues the dirty item again, and it must still be processed.
    assert q.get() == ("foo", False)


def test_shut_down_with_drain_returns_at_once_when_nothing_is_in_flight() -> None:
    q: Queue[str] = Queue()
    q.shut_down_with_drain()
    assert q.shutting_down()


def _start_drain(q: Queue[str], eventually: Callable[..., bool]) -> threading.Thread:
    drainer = threading.Thread(target=q.shut_down_with_drain)
    drainer.start()
    assert eventually(q.shutting_down)
    return drainer


def test_shut_down_with_drain_waits_for_every_in_flight_done(
    eventually: Callable[..., bool], join: Callable[[threading.Thread], None]
) -> None:
    q: Queue[str] = Queue()
    q.add("foo")
    q.add("bar")
    first, _ = q.get()
    second, _ = q.get()
    drainer = _start_drain(q, eventually)
    assert q.get() == (None, True)
    q.done(first)
    assert drainer.is_alive()
    q.done(second)
    join(drainer)


def test_shut_down_with_drain_waits_for_a_dirty_item_re_queued_by_done(
    eventually: Callable[..., bool], join: Callable[[threading.Thread], None]
) -> None:
    q: Queue[str] = Queue()
    q.add("foo")
    gotten, _ = q.get()
    q.add("foo")
    drainer = _start_drain(q, eventually)
    q.done(gotten)
    # done() put foo back in the queue: the drain is not over until it is processed too.
    assert drainer.is_alive()
    again, shutdown = q.get()
    assert (again, shutdown) == ("foo", False)
    assert drainer.is_alive()
    q.done(again)
    join(drainer)
    assert q.get() == (None, True)


def test_shut_down_with_drain_waits_for_items_still_queued(
    eventually: Callable[..., bool], join: Callable[[threading.Thread], None]
) -> None:
    q: Queue[str] = Queue()
    q.add("foo")
    drainer = _start_drain(q, eventually)
    item, _ = q.get()
    assert drainer.is_alive()
    q.done(item)
    join(drainer)


def test_shut_down_aborts_a_waiting_drain(
    eventually: Callable[..., bool], join: Callable[[threading.Thread], None]
) -> None:
    q: Queue[str] = Queue()
    q.add("foo")
    q.get()  # never done
    drainer = _start_drain(q, eventually)
    q.shut_down()
    join(drainer)
