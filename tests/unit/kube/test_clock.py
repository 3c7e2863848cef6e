"""Clocks: the fake clock wakes exactly the waiters whose deadline it reaches, and moves wall time,
sleeps and stop events the way the real one does."""

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from kube.clock import FakeClock, RealClock


def _sleeper(clock: FakeClock, deadline: float | None, woke: threading.Event) -> threading.Thread:
    cond = threading.Condition()

    def sleep() -> None:
        with cond:
            clock.wait_until(cond, deadline)
        woke.set()

    thread = threading.Thread(target=sleep)
    thread.start()
    return thread


def test_fake_clock_moves_only_when_stepped() -> None:
    clock = FakeClock(start=10.0)
    assert clock.now() == 10.0
    clock.step(0.5)
    assert clock.now() == 10.5


def test_step_wakes_a_waiter_whose_deadline_it_reaches(
    eventually: Callable[..., bool], join: Callable[[threading.Thread], None]
) -> None:
    clock = FakeClock()
    woke = threading.Event()
    thread = _sleeper(clock, 1.0, woke)
    assert eventually(lambda: clock.waiter_deadlines() == [1.0])
    clock.step(0.5)
    assert not woke.is_set()
    clock.step(0.5)
    join(thread)
    assert not clock.has_waiters()


def test_step_does_not_wake_a_waiter_without_deadline(
    eventually: Callable[..., bool], join: Callable[[threading.Thread], None]
) -> None:
    clock = FakeClock()
    woke = threading.Event()
    cond = threading.Condition()

    def sleep() -> None:
        with cond:
            clock.wait_until(cond, None)
        woke.set()

    thread = threading.Thread(target=sleep)
    thread.start()
    assert eventually(clock.has_waiters)
    clock.step(1000.0)
    assert not woke.is_set()
    with cond:
        cond.notify_all()
    join(thread)
    assert not clock.has_waiters()


def test_wait_until_a_past_deadline_returns_at_once() -> None:
    clock = FakeClock(start=5.0)
    cond = threading.Condition()
    with cond:
        clock.wait_until(cond, 5.0)
    assert not clock.has_waiters()


def test_real_clock_is_monotonic_and_returns_for_a_past_deadline() -> None:
    clock = RealClock()
    first = clock.now()
    assert clock.now() >= first
    cond = threading.Condition()
    with cond:
        clock.wait_until(cond, first - 1.0)


def test_fake_wall_time_moves_with_fake_monotonic_time() -> None:
    start = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    clock = FakeClock(start=50.0, wall=start)
    clock.step(90)
    assert clock.now() == 140.0 and clock.wall() == start + timedelta(seconds=90)


def test_fake_sleep_moves_time_records_the_pause_and_runs_the_hook() -> None:
    clock = FakeClock()
    seen: list[float] = []
    clock.on_sleep = lambda: seen.append(clock.now())
    assert clock.sleep(2.5) is False
    assert clock.now() == 2.5 and clock.sleeps == [2.5] and seen == [2.5]


def test_a_sleep_on_a_set_stop_event_returns_at_once_without_moving_time() -> None:
    stop = threading.Event()
    stop.set()
    fake = FakeClock()
    assert fake.sleep(30, stop) is True and fake.now() == 0.0
    started = time.monotonic()
    assert RealClock().sleep(30, stop) is True
    assert time.monotonic() - started < 5


def test_the_real_clock_tells_utc_wall_time() -> None:
    assert RealClock().wall().tzinfo is UTC
