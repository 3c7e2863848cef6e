"""One heartbeat: a file whose modification time says when the training last made progress, and the
same moment kept in memory for the HTTP endpoint.

`beat()` is cheap enough to call after every training step: it touches the file at most once per
`min_interval` seconds (1 by default; the probe reads whole seconds anyway).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable


class Heartbeat:
    """Thread-safe. `clock` (monotonic) throttles and ages beats; `wall` stamps the file."""

    def __init__(self, path: str | None, *, min_interval: float = 1.0,
                 clock: Callable[[], float] = time.monotonic, wall: Callable[[], float] = time.time) -> None:
        self.path = path
        self.min_interval = min_interval
        self._clock = clock
        self._wall = wall
        self._last: float | None = None
        self._lock = threading.Lock()

    def beat(self, force: bool = False) -> bool:
        """Record progress; True when this call touched the file (or, without one, recorded the beat).
        An unwritable file raises OSError: better a loud first step than a silent stall rule."""
        now = self._clock()
        with self._lock:
            if not force and self._last is not None and now - self._last < self.min_interval:
                return False
            self._last = now
        if self.path:
            self._touch(self.path)
        return True

    def age(self) -> float | None:
        """Seconds since the last beat; None before the first."""
        with self._lock:
            last = self._last
        return None if last is None else self._clock() - last

    def _touch(self, path: str) -> None:
        stamp = self._wall()
        try:
            os.utime(path, (stamp, stamp))
        except FileNotFoundError:
            directory = os.path.dirname(path)
            if directory:
                os.makedirs(directory, exist_ok=True)
            with open(path, "a", encoding="utf-8"):
                pass
            os.utime(path, (stamp, stamp))
