"""RateLimitingQueue: client-go's rate_limiting_queue_test.go, on a fake clock.

client-go reads the delay of each retry from the delaying queue's channel; here the same
delay is visible as the deadline the delaying thread sleeps until (fake time starts at 0).
"""

from collections.abc import Callable

from kube.clock import FakeClock
from workqueue import ItemExponentialFailureRateLimiter, RateLimitingQueue


def test_add_rate_limited_delays_by_the_limiter_and_counts_requeues(
    make_rate_limiting_queue: Callable[..., RateLimitingQueue[str]],
    clock: FakeClock,
    wait_for_sleep: Callable[[float], None],
    eventually: Callable[..., bool],
) -> None:
    q = make_rate_limiting_queue(ItemExponentialFailureRateLimiter(1.0, 1000.0))

    q.add_rate_limited("one")
    wait_for_sleep(1.0)
    assert q.num_requeues("one") == 1

    q.add_rate_limited("one")
    assert q.num_requeues("one") == 2
    # The second retry asked for 2 s; the earlier ready time (1 s) is kept.
    wait_for_sleep(1.0)

    q.forget("one")
    assert q.num_requeues("one") == 0
    clock.step(1.0)
    assert eventually(lambda: q.len() == 1)
    assert q.get() == ("one", False)


def test_requeue_after_processing_waits_twice_as_long(
    make_rate_limiting_queue: Callable[..., RateLimitingQueue[str]],
    clock: FakeClock,
    wait_for_sleep: Callable[[float], None],
    eventually: Callable[..., bool],
) -> None:
    q = make_rate_limiting_queue(ItemExponentialFailureRateLimiter(1.0, 1000.0))
    q.add_rate_limited("one")
    clock.step(1.0)
    assert eventually(lambda: q.len() == 1)
    item, _ = q.get()

    q.add_rate_limited("one")  # the sync failed again
    q.done(item)
    wait_for_sleep(3.0)
    clock.step(1.0)
    assert q.len() == 0
    clock.step(1.0)
    assert eventually(lambda: q.len() == 1)


def test_forget_resets_the_delay_of_the_next_retry(
    make_rate_limiting_queue: Callable[..., RateLimitingQueue[str]],
    clock: FakeClock,
    wait_for_sleep: Callable[[float], None],
    eventually: Callable[..., bool],
) -> None:
    q = make_rate_limiting_queue(ItemExponentialFailureRateLimiter(1.0, 1000.0))
    q.add_rate_limited("one")
    clock.step(1.0)
    assert eventually(lambda: q.len() == 1)
    item, _ = q.get()
    q.forget(item)  # the sync succeeded
    q.done(item)
    q.add_rate_limited("one")
    # Ready 1 s after now (t=1), not the 2 s a second failure in a row would wait.
    wait_for_sleep(2.0)


def test_forget_does_not_mark_the_item_done(
    make_rate_limiting_queue: Callable[..., RateLimitingQueue[str]],
) -> None:
    q = make_rate_limiting_queue()
    q.add("one")
    item, _ = q.get()
    q.forget(item)
    q.add("one")
    assert q.len() == 0
    q.done(item)
    assert q.len() == 1


def test_default_queue_retries_first_after_5ms(
    make_rate_limiting_queue: Callable[..., RateLimitingQueue[str]],
    wait_for_sleep: Callable[[float], None],
) -> None:
    q = make_rate_limiting_queue()
    q.add_rate_limited("one")
    wait_for_sleep(0.005)
    assert q.num_requeues("one") == 1


def test_add_rate_limited_waits_at_least_the_minimum_delay() -> None:
    from kube.clock import FakeClock
    from workqueue import RateLimitingQueue

    clock = FakeClock()
    queue: RateLimitingQueue[str] = RateLimitingQueue(clock=clock)
    try:
        queue.add_rate_limited("a", min_delay=30.0)
        clock.step(29.0)
        assert len(queue) == 0
        assert queue.num_requeues("a") == 1  # the failure is still counted
    finally:
        queue.shut_down()
