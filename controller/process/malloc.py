"""Fewer glibc malloc arenas for the long-running operator, to keep its resident memory flat.

glibc gives each new thread that allocates an arena of its own, up to eight per core. The
operator runs some hundred threads (reconcile workers, create threads, informers), so a burst leaves
many arenas each holding freed but unreturned memory: resident memory grows with the number of
threads that once allocated, not with what is cached. Python's own small-object allocator is not
affected (it maps its own pools); dicts' and strings' larger blocks are. Two arenas is what the
`MALLOC_ARENA_MAX=2` advice for threaded servers means; the allocations here are brief and the GIL
serialises most of them anyway, so contention costs nothing measurable (bench/RESULTS.md has the A/B).

Called once at start, before the threads exist. An explicit `MALLOC_ARENA_MAX` in the environment
wins (glibc reads it itself); on a C library other than glibc this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

M_ARENA_MAX = -8  # from glibc's malloc.h
DEFAULT_ARENAS = 2


def limit_malloc_arenas(arenas: int = DEFAULT_ARENAS, environ: dict[str, str] | None = None) -> bool:
    """Ask glibc for at most `arenas` malloc arenas; True when the setting took effect."""
    if "MALLOC_ARENA_MAX" in (os.environ if environ is None else environ):
        return False
    name = ctypes.util.find_library("c")
    if not name:
        return False
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_ARENA_MAX, arenas))
