"""Unit tests of the glibc malloc settings: the arena limit reaches mallopt (an explicit environment
wins), and malloc_trim hands freed pages back."""

from __future__ import annotations

import subprocess
import sys
import threading

from controller.process.malloc import limit_malloc_arenas, start_trimming


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


def test_trim_hands_back_pages_freed_between_survivors() -> None:
    # Blocks of 4 kB come from malloc (not Python's small-object pools); every tenth survives, so
    # the freed ones sit between survivors and glibc keeps them resident until trimmed.
    code = """
from controller.process.malloc import trim
def rss():
    return int(open("/proc/self/statm").read().split()[1]) * 4096
blocks = [bytearray(4096) for _ in range(50000)]
survivors = blocks[::10]
del blocks
before = rss()
released = trim()
print(released, before - rss())
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[0] == "True"
    assert int(out[1]) > 50e6, "most of the ~180 MB freed between survivors goes back to the system"


def test_the_trimming_thread_ends_when_told_to_stop() -> None:
    stop = threading.Event()
    thread = start_trimming(stop, interval=0.01)
    assert thread is not None and thread.is_alive()
    stop.set()
    thread.join(5)
    assert not thread.is_alive()
