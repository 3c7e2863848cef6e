"""Rate limiters: client-go's default_rate_limiters_test.go cases, plus the token bucket's debt."""

import math

import pytest

from kube.clock import FakeClock
from workqueue import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    WithMaxWaitRateLimiter,
    default_controller_rate_limiter,
)


def test_exponential_backoff_starts_at_5ms_and_doubles() -> None:
    limiter = ItemExponentialFailureRateLimiter()
    delays = [limiter.when("one") for _ in range(5)]
    assert delays == pytest.approx([0.005, 0.010, 0.020, 0.040, 0.080])
    assert limiter.num_requeues("one") == 5


def test_exponential_backoff_is_reset_by_forget() -> None:
    limiter = ItemExponentialFailureRateLimiter(0.001, 1.0)
    limiter.when("one")
    limiter.when("one")
    limiter.forget("one")
    assert limiter.num_requeues("one") == 0
    assert limiter.when("one") == pytest.approx(0.001)


def test_exponential_backoff_is_tracked_per_item() -> None:
    limiter = ItemExponentialFailureRateLimiter(0.001, 1.0)
    limiter.when("one")
    limiter.when("one")
    assert limiter.when("two") == pytest.approx(0.001)
    assert limiter.num_requeues("one") == 2
    assert limiter.num_requeues("two") == 1


def test_exponential_backoff_is_capped_at_the_max_delay() -> None:
    limiter = ItemExponentialFailureRateLimiter(0.001, 1.0)
    delays = [limiter.when("one") for _ in range(12)]
    assert delays[9] == pytest.approx(0.512)
    assert delays[10:] == [1.0, 1.0]


def test_default_backoff_reaches_the_1000s_cap_on_the_19th_failure() -> None:
    limiter = ItemExponentialFailureRateLimiter()
    delays = [limiter.when("one") for _ in range(19)]
    assert delays[17] == pytest.approx(0.005 * 2**17)
    assert delays[18] == 1000.0


def test_exponential_backoff_survives_failure_counts_past_float_range() -> None:
    limiter = ItemExponentialFailureRateLimiter(0.001, 1.0)
    for _ in range(2000):
        last = limiter.when("one")
    assert last == 1.0


def test_fast_slow_limiter_switches_to_slow_after_the_fast_attempts() -> None:
    limiter = ItemFastSlowRateLimiter(0.005, 10.0, 3)
    assert [limiter.when("one") for _ in range(5)] == [0.005, 0.005, 0.005, 10.0, 10.0]
    assert limiter.num_requeues("one") == 5
    limiter.forget("one")
    assert limiter.num_requeues("one") == 0
    assert limiter.when("one") == 0.005


def test_bucket_grants_the_burst_then_spaces_retries_by_one_over_qps() -> None:
    limiter = BucketRateLimiter(qps=10.0, burst=3, clock=FakeClock())
    delays = [limiter.when("one") for _ in range(6)]
    assert delays == pytest.approx([0.0, 0.0, 0.0, 0.1, 0.2, 0.3])


def test_bucket_reservations_go_into_debt_that_time_pays_back() -> None:
    clock = FakeClock()
    limiter = BucketRateLimiter(qps=10.0, burst=1, clock=clock)
    assert limiter.when("a") == 0.0
    assert limiter.when("b") == pytest.approx(0.1)
    assert limiter.when("c") == pytest.approx(0.2)
    # Two tokens of debt plus the one being reserved: 0.3 s makes the next one free.
    clock.step(0.3)
    assert limiter.when("d") == pytest.approx(0.0)
    assert limiter.when("e") == pytest.approx(0.1)


def test_bucket_refills_with_time_but_never_beyond_the_burst() -> None:
    clock = FakeClock()
    limiter = BucketRateLimiter(qps=10.0, burst=2, clock=clock)
    limiter.when("a")
    limiter.when("b")
    clock.step(100.0)
    assert [limiter.when("c") for _ in range(3)] == pytest.approx([0.0, 0.0, 0.1])


def test_bucket_has_no_per_item_state() -> None:
    limiter = BucketRateLimiter(qps=10.0, burst=1, clock=FakeClock())
    limiter.when("one")
    limiter.forget("one")
    assert limiter.num_requeues("one") == 0
    assert limiter.when("one") == pytest.approx(0.1)


def test_bucket_with_zero_burst_never_grants_a_token() -> None:
    limiter = BucketRateLimiter(qps=10.0, burst=0, clock=FakeClock())
    assert limiter.when("one") == math.inf


def test_max_of_returns_the_longest_delay_and_forwards_forget() -> None:
    limiter = MaxOfRateLimiter(
        ItemFastSlowRateLimiter(0.005, 3.0, 3),
        ItemExponentialFailureRateLimiter(0.001, 1.0),
    )
    assert [limiter.when("one") for _ in range(5)] == pytest.approx([0.005, 0.005, 0.005, 3.0, 3.0])
    assert limiter.num_requeues("one") == 5
    limiter.forget("one")
    assert limiter.num_requeues("one") == 0
    assert limiter.when("one") == pytest.approx(0.005)


def test_max_of_takes_a_bucket_token_even_when_the_backoff_is_longer() -> None:
    bucket = BucketRateLimiter(qps=10.0, burst=1, clock=FakeClock())
    limiter = MaxOfRateLimiter(ItemExponentialFailureRateLimiter(1.0, 1000.0), bucket)
    assert limiter.when("a") == 1.0
    # "a" used the only token although its back-off decided its delay.
    assert bucket.when("b") == pytest.approx(0.1)


def test_default_controller_limiter_retries_first_after_5ms() -> None:
    limiter = default_controller_rate_limiter(clock=FakeClock())
    assert limiter.when("one") == pytest.approx(0.005)
    assert limiter.when("one") == pytest.approx(0.010)
    assert limiter.num_requeues("one") == 2


def test_default_controller_limiter_lets_the_bucket_dominate_after_the_burst() -> None:
    limiter = default_controller_rate_limiter(clock=FakeClock())
    for i in range(100):
        assert limiter.when(f"item-{i}") == pytest.approx(0.005)
    assert limiter.when("item-100") == pytest.approx(0.1)


def test_with_max_wait_caps_the_wrapped_delay() -> None:
    limiter = WithMaxWaitRateLimiter(ItemExponentialFailureRateLimiter(1.0, 1000.0), 3.0)
    assert [limiter.when("one") for _ in range(4)] == [1.0, 2.0, 3.0, 3.0]
    assert limiter.num_requeues("one") == 4
    limiter.forget("one")
    assert limiter.num_requeues("one") == 0
