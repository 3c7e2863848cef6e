"""Unit tests of the malloc arena limit: it reaches glibc's mallopt, and an explicit environment wins."""

from __future__ import annotations

import subprocess
import sys

from controller.process.malloc import limit_malloc_arenas


def test_an_explicit_malloc_arena_max_in_the_environment_is_left_to_glibc() -> None:
    assert limit_malloc_arenas(environ={"MALLOC_ARENA_MAX": "4"}) is False


def test_the_limit_takes_effect_in_glibc() -> None:
    # In a child process: mallopt changes the whole process, and the test runner should stay as it is.
    code = ("from controller.process.malloc import limit_malloc_arenas; "
            "print(limit_malloc_arenas(environ={}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "True"


def test_threads_started_after_the_limit_share_the_two_arenas() -> None:
    # glibc's malloc_info lists one <heap nr=...> per arena: with the limit, many allocating threads
    # leave at most two; without it, glibc would make one per contending thread up to 8 per core.
    code = """
import ctypes, ctypes.util, os, tempfile, threading
from controller.process.malloc import limit_malloc_arenas
limited = os.environ.get("LIMIT") == "1"
if limited:
    limit_malloc_arenas(environ={})
barrier = threading.Barrier(16)
def work():
    barrier.wait()
    blocks = [bytearray(4096) for _ in range(2000)]
    barrier.wait()
    del blocks
threads = [threading.Thread(target=work) for _ in range(16)]
[t.start() for t in threads]; [t.join() for t in threads]
libc = ctypes.CDLL(ctypes.util.find_library("c"))
libc.fopen.restype = ctypes.c_void_p
with tempfile.NamedTemporaryFile() as f:
    stream = libc.fopen(f.name.encode(), b"w")
    libc.malloc_info(0, ctypes.c_void_p(stream)); libc.fclose(ctypes.c_void_p(stream))
    print(open(f.name).read().count("<heap nr="))
"""
    counts = {}
    for limited in ("1", "0"):
        env = {"LIMIT": limited, "PATH": "", "PYTHONPATH": ":".join(sys.path)}
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
        counts[limited] = int(out.strip())
    assert counts["1"] <= 2 < counts["0"]
