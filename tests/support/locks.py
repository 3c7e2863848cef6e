"""`exclusive(path)`: a lock file held while a shared cache (a virtualenv, a download) is made, so that
parallel test workers, or a second checkout's tests, never build the same thing into the same place at
once: one builds it, the others wait and then find it made."""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def exclusive(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
