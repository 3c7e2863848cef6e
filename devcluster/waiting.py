"""Poll a condition until it holds or a deadline passes: the only way tests and the devcluster wait.

Fixed sleeps make tests both slow and flaky; a deadline-bounded poll is as fast as the system
allows and fails with a message saying what did not happen. The predicate's last truthy value
is returned so callers can poll and fetch in one step, e.g.
`pod = wait_for(lambda: running_pod(name), 60, "pod running")`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class WaitTimeout(AssertionError):
    """The condition did not hold within the timeout (an AssertionError, so pytest shows it plainly)."""


def wait_for(predicate: Callable[[], T], timeout: float, what: str, interval: float = 0.2) -> T:
    """Call predicate until it returns a truthy value and return that value.

    Raises WaitTimeout after timeout seconds, naming `what` and the last exception the predicate
    raised, if any (exceptions count as "not yet").
    """
    deadline = time.monotonic() + timeout
    last_error: BaseException | None = None
    while True:
        try:
            value = predicate()
        except Exception as error:  # not yet: e.g. the object does not exist yet
            last_error = error
        else:
            if value:
                return value
        if time.monotonic() >= deadline:
            detail = f" (last error: {last_error})" if last_error is not None else ""
            raise WaitTimeout(f"timed out after {timeout:g}s waiting for {what}{detail}")
        time.sleep(interval)
