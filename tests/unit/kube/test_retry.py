"""Unit tests of `kube/retry.py`: which errors are retried, how long it waits, when it gives up.

Sleeps and jitter are injected, so nothing here waits for real.
"""

from __future__ import annotations

from typing import Any

import pytest
import tenacity

from kube import ApiError
from kube.clock import FakeClock
from kube.retry import BackoffWait, is_transient, retry_transient, retrying


class Flaky:
    """Raises the given errors in turn, then returns "ok"."""

    def __init__(self, *errors: BaseException) -> None:
        self.errors = list(errors)
        self.calls = 0

    def __call__(self, *args: Any, **kwargs: Any) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "ok"


def no_jitter() -> float:
    return 0.0


@pytest.mark.parametrize("status", [0, 429, 500, 502, 503, 504])
def test_transient_statuses_are_retried(status: int) -> None:
    clock = FakeClock()
    sleeps = clock.sleeps
    fn = Flaky(ApiError(status))
    assert retry_transient(fn, clock=clock, rand=no_jitter)() == "ok"
    assert fn.calls == 2 and len(sleeps) == 1


@pytest.mark.parametrize("status", [400, 401, 403, 404, 409, 410, 422])
def test_permanent_errors_are_raised_at_once(status: int) -> None:
    clock = FakeClock()
    sleeps = clock.sleeps
    fn = Flaky(ApiError(status))
    with pytest.raises(ApiError) as info:
        retry_transient(fn, clock=clock)()
    assert info.value.status == status
    assert fn.calls == 1 and sleeps == []


def test_other_exceptions_are_not_retried() -> None:
    fn = Flaky(KeyError("bug"))
    with pytest.raises(KeyError):
        retry_transient(fn, clock=FakeClock())()
    assert fn.calls == 1


def test_gives_up_after_attempts_and_reraises_the_original_error() -> None:
    clock = FakeClock()
    sleeps = clock.sleeps
    errors = [ApiError(503, message=f"try {i}") for i in range(10)]
    fn = Flaky(*errors)
    with pytest.raises(ApiError) as info:
        retry_transient(fn, attempts=3, clock=clock, rand=no_jitter)()
    assert info.value is errors[2]
    assert fn.calls == 3 and len(sleeps) == 2
    assert not isinstance(info.value, tenacity.RetryError)


def test_waits_grow_exponentially_up_to_the_maximum() -> None:
    clock = FakeClock()
    sleeps = clock.sleeps
    fn = Flaky(*[ApiError(0) for _ in range(6)])
    retry_transient(fn, attempts=7, multiplier=0.5, maximum=3.0, clock=clock, rand=no_jitter)()
    assert sleeps == [0.5, 1.0, 2.0, 3.0, 3.0, 3.0]


def test_jitter_is_added_within_bounds() -> None:
    clock = FakeClock()
    sleeps = clock.sleeps
    fn = Flaky(ApiError(500), ApiError(500))
    retry_transient(fn, multiplier=1.0, jitter=0.5, clock=clock, rand=lambda: 1.0)()
    assert sleeps == [1.5, 2.5]


def test_retry_after_is_honoured_when_longer_than_the_backoff() -> None:
    clock = FakeClock()
    sleeps = clock.sleeps
    fn = Flaky(ApiError(429, retry_after=4.0), ApiError(429, retry_after=0.01))
    retry_transient(fn, multiplier=0.2, clock=clock, rand=no_jitter)()
    assert sleeps == [4.0, 0.4]


def test_a_retry_after_longer_than_the_limit_gives_up_for_the_work_queue() -> None:
    clock = FakeClock()
    sleeps = clock.sleeps
    fn = Flaky(ApiError(429, retry_after=120.0))
    with pytest.raises(ApiError):
        retry_transient(fn, max_retry_after=10.0, clock=clock)()
    assert fn.calls == 1 and sleeps == []


def test_works_as_a_bare_decorator_and_keeps_the_signature() -> None:
    calls: list[int] = []

    @retry_transient
    def double(x: int) -> int:
        """Doubles."""
        calls.append(x)
        return 2 * x

    assert double(4) == 8
    assert double.__name__ == "double" and double.__doc__ == "Doubles."


def test_works_as_a_decorator_with_options() -> None:
    clock = FakeClock()
    sleeps = clock.sleeps
    state = {"n": 0}

    @retry_transient(attempts=2, clock=clock, rand=no_jitter)
    def flaky(path: str) -> str:
        state["n"] += 1
        if state["n"] == 1:
            raise ApiError(503)
        return path

    assert flaky("/api/v1/pods") == "/api/v1/pods"
    assert len(sleeps) == 1


def test_retrying_block_uses_the_same_policy() -> None:
    clock = FakeClock()
    sleeps = clock.sleeps
    fn = Flaky(ApiError(504))
    result = None
    for attempt in retrying(clock=clock, rand=no_jitter):
        with attempt:
            result = fn()
    assert result == "ok" and sleeps == [0.2]


def test_a_custom_predicate_can_retry_conflicts() -> None:
    fn = Flaky(ApiError(409, "Conflict"))
    assert retry_transient(fn, predicate=lambda e: isinstance(e, ApiError) and e.conflict, clock=FakeClock())() == "ok"


def test_is_transient_is_duck_typed() -> None:
    class Custom(Exception):
        transient = True

    assert is_transient(Custom()) and not is_transient(ValueError())


def test_backoff_wait_is_a_tenacity_wait_strategy() -> None:
    wait = BackoffWait(multiplier=1.0, maximum=10.0, jitter=0.0)
    combined = wait + tenacity.wait_fixed(1)
    assert isinstance(combined, tenacity.wait.wait_combine)
