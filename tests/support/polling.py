"""Deadline-bounded polling for tests: wait for a condition instead of sleeping.

A fixed sleep makes a test both slow and flaky; a poll with a deadline is as fast as the system
allows and, when the condition never holds, fails saying what did not happen.

* `wait_for` — until the predicate returns something truthy, which it returns (poll and fetch in
  one step: `pod = wait_for(lambda: running_pod(name), 60, "pod running")`);
* `eventually` — the same, answering True or False, for `assert eventually(...)`;
* `until_empty` — until a list of what is still wrong is empty, failing with that list.

Exceptions from the predicate are not swallowed: they fail the test at once, unless `wait_for` is
told which ones mean "not yet" (`ignoring=ApiError` while an object does not exist yet). The
devcluster package polls with its own `devcluster.waiting.wait_for` (it imports nothing from tests).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(predicate: Callable[[], T], timeout: float, what: str, interval: float = 0.1, *,
             ignoring: type[Exception] | tuple[type[Exception], ...] = ()) -> T:
    """Poll until `predicate()` is truthy and return that value; after `timeout` seconds fail with an
    AssertionError naming `what` and the last value (or the last exception it was told to ignore).

    An exception of a type in `ignoring` counts as "not yet"; any other fails at once."""
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        try:
            value = predicate()
        except ignoring as error:
            last = error
        else:
            if value:
                return value
            last = value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}; last value: {last!r}")


def eventually(predicate: Callable[[], object], timeout: float, interval: float = 0.0005) -> bool:
    """Poll until `predicate()` holds or `timeout` seconds pass; whether it held at the end.

    Meant for conditions in the test's own process (a background thread catching up), hence the
    short default interval."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() >= deadline:
            return bool(predicate())
        time.sleep(interval)
    return True


def until_empty(remaining: Callable[[], list[str]], timeout: float, what: str, interval: float = 0.5) -> None:
    """Poll until `remaining()` (what is still wrong) is empty; after `timeout` seconds fail listing
    (up to 20 of) the items it last returned."""
    deadline = time.monotonic() + timeout
    while True:
        left = remaining()
        if not left:
            return
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}; still: " + "; ".join(left[:20]))
        time.sleep(interval)
