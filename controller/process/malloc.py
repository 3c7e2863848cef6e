"""The long-running operator and glibc's malloc: fewer arenas, and freed memory handed back.

glibc gives threads that contend for the allocator arenas of their own, up to eight per core. The
operator runs some hundred threads (reconcile workers, create threads, informers), so a burst leaves
many arenas each holding freed but unreturned memory: resident memory grows with the number of
threads that once allocated, not with what is cached. Python's own small-object allocator is not
affected (it maps its own pools); dicts' and strings' larger blocks are. Two arenas is what the
`MALLOC_ARENA_MAX=2` advice for threaded servers means; the allocations here are brief and the GIL
serialises most of them anyway, so contention costs nothing measurable (bench/RESULTS.md has the A/B).

Called once at start, before the threads exist. An explicit `MALLOC_ARENA_MAX` in the environment
wins (glibc reads it itself); on a C library other than glibc this does nothing.

Second, `malloc_trim(0)` every half minute. A burst decodes thousands of 5 kB watch lines and full
objects and keeps a small projection of each; the freed blocks between the survivors stay resident,
because glibc returns memory to the system on its own only from the top of a heap. malloc_trim
releases every whole free page inside the heaps as well. It takes a few milliseconds on a heap of
this size, and costs nothing when there is nothing to release.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import threading
from typing import Any

M_ARENA_MAX = -8  # from glibc's malloc.h
DEFAULT_ARENAS = 2
TRIM_INTERVAL = 30.0


@functools.cache
def _glibc() -> Any | None:
    """The C library when it is glibc (it has mallopt and malloc_trim), else None."""
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        libc = ctypes.CDLL(name)
        libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
        libc.mallopt.restype = ctypes.c_int
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
        libc.malloc_trim.restype = ctypes.c_int
    except (OSError, AttributeError):  # not glibc (musl has neither)
        return None
    return libc


def limit_malloc_arenas(arenas: int = DEFAULT_ARENAS, environ: dict[str, str] | None = None) -> bool:
    """Ask glibc for at most `arenas` malloc arenas; True when the setting took effect."""
    if "MALLOC_ARENA_MAX" in (os.environ if environ is None else environ):
        return False
    libc = _glibc()
    return libc is not None and bool(libc.mallopt(M_ARENA_MAX, arenas))


def trim() -> bool:
    """Hand whole free pages back to the system; True when some memory was released."""
    libc = _glibc()
    return libc is not None and bool(libc.malloc_trim(0))


def start_trimming(stop: threading.Event, interval: float = TRIM_INTERVAL) -> threading.Thread | None:
    """A daemon thread that trims every `interval` seconds until `stop` is set (None off glibc)."""
    if _glibc() is None:
        return None

    def loop() -> None:
        while not stop.wait(interval):
            trim()

    thread = threading.Thread(target=loop, name="malloc-trim", daemon=True)
    thread.start()
    return thread
