"""Short, bounded retries of transient API failures, with tenacity.

`kube/client.py` never retries: a retry policy depends on the caller (a POST create is safe to
replay only because pod names are deterministic and a replay answers 409 AlreadyExists). This module
is the one policy the controller wraps its calls with:

* retry only errors whose `transient` attribute is true (`ApiError`: status 0 transport errors,
  429, 500-504, timeouts); everything else (404, 409, 422, 403, ...) is raised at once;
* wait `multiplier * 2**n` plus jitter, capped at `maximum`, and never less than the server's
  `Retry-After` (`ApiError.retry_after`);
* give up after `attempts` tries, or at once when the server asks for a wait longer than
  `max_retry_after`: a worker thread must not sleep for minutes; the work queue's rate-limited
  requeue is the long back-off (two layers: short retries here, the queue's back-off above);
* re-raise the original exception, never tenacity's `RetryError`.

The module is duck-typed on the exception (`transient`, `retry_after`) so it does not import the
client boundary, and the clock and `rand` are injectable so tests do not sleep.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar, overload

import structlog
import tenacity

from kube.clock import REAL_CLOCK, Clock

__all__ = ["BackoffWait", "is_transient", "retry_transient", "retrying"]

P = ParamSpec("P")
T = TypeVar("T")

log = structlog.get_logger(__name__)

DEFAULT_ATTEMPTS = 5
DEFAULT_MULTIPLIER = 0.2
DEFAULT_MAXIMUM = 5.0
DEFAULT_JITTER = 0.2
DEFAULT_MAX_RETRY_AFTER = 10.0


def is_transient(exc: BaseException) -> bool:
    """True for errors worth retrying as they are (ApiError.transient)."""
    return bool(getattr(exc, "transient", False))


def _retry_after(exc: BaseException | None) -> float | None:
    value = getattr(exc, "retry_after", None) if exc is not None else None
    return float(value) if isinstance(value, int | float) else None


class BackoffWait(tenacity.wait.wait_base):
    """Exponential back-off with additive jitter, never shorter than the error's `retry_after`.

    Before retry number n (1-based) it waits `min(maximum, multiplier * 2**(n-1) + jitter*rand())`,
    or the server's Retry-After if that is longer.
    """

    def __init__(
        self,
        *,
        multiplier: float = DEFAULT_MULTIPLIER,
        maximum: float = DEFAULT_MAXIMUM,
        jitter: float = DEFAULT_JITTER,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self.multiplier = multiplier
        self.maximum = maximum
        self.jitter = jitter
        self.rand = rand

    def __call__(self, retry_state: tenacity.RetryCallState) -> float:
        exponent = max(0, retry_state.attempt_number - 1)
        backoff: float = min(self.maximum, self.multiplier * 2**exponent + self.jitter * self.rand())
        outcome = retry_state.outcome
        retry_after = _retry_after(outcome.exception() if outcome is not None and outcome.failed else None)
        return max(backoff, retry_after or 0.0)


class _StopOnLongRetryAfter(tenacity.stop.stop_base):
    """Give up when the server asks for a longer wait than a worker should sleep."""

    def __init__(self, limit: float) -> None:
        self.limit = limit

    def __call__(self, retry_state: tenacity.RetryCallState) -> bool:
        outcome = retry_state.outcome
        if outcome is None or not outcome.failed:
            return False
        retry_after = _retry_after(outcome.exception())
        return retry_after is not None and retry_after > self.limit


def _log_before_sleep(retry_state: tenacity.RetryCallState) -> None:
    outcome = retry_state.outcome
    exc = outcome.exception() if outcome is not None and outcome.failed else None
    log.info(
        "retrying transient API error",
        call=getattr(retry_state.fn, "__qualname__", repr(retry_state.fn)),
        attempt=retry_state.attempt_number,
        wait_s=round(retry_state.upcoming_sleep, 3),
        error=str(exc),
    )


def retrying(
    *,
    attempts: int = DEFAULT_ATTEMPTS,
    multiplier: float = DEFAULT_MULTIPLIER,
    maximum: float = DEFAULT_MAXIMUM,
    jitter: float = DEFAULT_JITTER,
    max_retry_after: float = DEFAULT_MAX_RETRY_AFTER,
    deadline: float | None = None,
    clock: Clock = REAL_CLOCK,
    rand: Callable[[], float] = random.random,
    predicate: Callable[[BaseException], bool] = is_transient,
) -> tenacity.Retrying:
    """A tenacity `Retrying` with this policy, for blocks: `for attempt in retrying(): with attempt: ...`."""
    stop: tenacity.stop.stop_base = tenacity.stop_after_attempt(attempts) | _StopOnLongRetryAfter(max_retry_after)
    if deadline is not None:
        stop = stop | tenacity.stop_after_delay(deadline)

    def sleep(seconds: float) -> None:
        clock.sleep(seconds)

    return tenacity.Retrying(
        retry=tenacity.retry_if_exception(predicate),
        stop=stop,
        wait=BackoffWait(multiplier=multiplier, maximum=maximum, jitter=jitter, rand=rand),
        sleep=sleep,
        reraise=True,
        before_sleep=_log_before_sleep,
    )


@overload
def retry_transient(fn: Callable[P, T], **options: Any) -> Callable[P, T]: ...


@overload
def retry_transient(fn: None = None, **options: Any) -> Callable[[Callable[P, T]], Callable[P, T]]: ...


def retry_transient(fn: Callable[P, T] | None = None, **options: Any) -> Any:
    """Retry `fn` on transient API errors; usable as `@retry_transient`, `@retry_transient(attempts=3)`
    or `retry_transient(kube.get, attempts=3)(path)`.

    Options are those of `retrying()`: `attempts` (total tries, default 5), `multiplier`, `maximum`,
    `jitter`, `max_retry_after`, `deadline`, `clock`, `rand`, `predicate`.
    """

    def decorate(func: Callable[P, T]) -> Callable[P, T]:
        @functools.wraps(func)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
            return retrying(**options)(func, *args, **kwargs)

        return wrapper

    return decorate(fn) if fn is not None else decorate
