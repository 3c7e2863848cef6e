"""A small in-process sampling profiler for the operator: `python -m bench._sampler OUT -- -m MODULE ARGS...`.

Runs MODULE as `__main__` (like `python -m`) while a daemon thread takes a snapshot of every
thread's Python stack (`sys._current_frames()`) every INTERVAL seconds. A sample whose innermost
frame is a known blocking call (a lock or condition wait, a socket or SSL read, `select`) counts as
idle; the others are "busy" — running Python, or waiting for the GIL or for a contended lock at
that line. At exit it writes:

* `OUT.folded`: busy stacks in the folded format flame-graph tools read
  (`thread;file:function;... count`), thread names with digits collapsed (`worker-N`);
* `OUT.cpu.folded`: the same stacks weighted by the CPU time (microseconds) each thread used since
  the previous sample, read from its own CPU clock (`pthread_getcpuclockid`). A "busy" sample may be
  a thread waiting for the GIL; a CPU-weighted one cannot, so this is the file to split CPU by;
* `OUT.json`: busy samples per thread group, the top functions by self and inclusive samples, and
  each thread's CPU seconds from /proc/self/task/<tid>/stat (exact, from the kernel).

Unlike cProfile it sees every thread and costs about 1-3 % of one core at 100 Hz; unlike py-spy it
needs nothing installed. It only reads frames, so the profiled code runs unchanged.
"""

from __future__ import annotations

import atexit
import collections
import gc
import json
import os
import re
import runpy
import sys
import threading
import time
from pathlib import Path
from types import CodeType, FrameType

INTERVAL = float(os.environ.get("TFJOB_SAMPLER_INTERVAL", "0.01"))
CLK_TCK = os.sysconf("SC_CLK_TCK")

# (file name ending, function) of innermost frames that mean "blocked, not using the CPU".
IDLE_LEAVES = {
    ("threading.py", "wait"), ("threading.py", "_wait_for_tstate_lock"), ("threading.py", "acquire"),
    ("selectors.py", "select"), ("socket.py", "readinto"), ("socket.py", "accept"), ("ssl.py", "read"),
    ("ssl.py", "recv_into"), ("queue.py", "get"), ("socketserver.py", "serve_forever"),
    ("_sampler.py", "_run"), ("thread.py", "_worker"),  # a ThreadPoolExecutor thread waiting for work
}


def _group(name: str) -> str:
    return re.sub(r"\d+", "N", name)


class Sampler:
    def __init__(self, interval: float = INTERVAL) -> None:
        self.interval = interval
        self.stacks: collections.Counter[tuple[str, ...]] = collections.Counter()
        self.cpu_stacks: collections.Counter[tuple[str, ...]] = collections.Counter()  # microseconds
        self._cpu_clocks: dict[int, int] = {}  # thread ident -> its CPU clock id
        self._cpu_seen: dict[int, int] = {}  # thread ident -> CPU nanoseconds at the previous sample
        self.busy: collections.Counter[str] = collections.Counter()
        self.total: collections.Counter[str] = collections.Counter()
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sampler", daemon=True)
        self._native: dict[int, str] = {}
        self._cpu: dict[int, float] = {}  # native thread id -> last CPU seconds read
        self._labels: dict[CodeType, str] = {}  # sampling must stay cheap with 100 threads
        self._idle_codes: dict[CodeType, bool] = {}
        self.overhead_s = 0.0

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        own = threading.get_ident()
        next_cpu_read = 0.0
        groups: dict[str, str] = {}
        while not self._stop.wait(self.interval):
            began = time.thread_time()
            names = {}
            for t in threading.enumerate():
                names[t.ident] = t.name
                if t.native_id is not None:
                    self._native[t.native_id] = t.name
            if time.monotonic() >= next_cpu_read:  # threads that end take their CPU time with them
                self._read_thread_cpu()
                next_cpu_read = time.monotonic() + 1.0
            self.samples += 1
            for ident, frame in self._current_frames().items():
                if ident == own:
                    continue
                name = names.get(ident, "?")
                group = groups.get(name)
                if group is None:
                    group = groups[name] = _group(name)
                self.total[group] += 1
                used_us = self._cpu_since_last(ident)
                stack: tuple[str, ...] | None = None
                if used_us > 0:
                    stack = (group, *self._stack(frame))
                    self.cpu_stacks[stack] += used_us
                if self._idle(frame):
                    continue
                self.busy[group] += 1
                self.stacks[stack or (group, *self._stack(frame))] += 1
            self.overhead_s += time.thread_time() - began

    @staticmethod
    def _current_frames() -> dict[int, FrameType]:
        """sys._current_frames() with the garbage collector off: on 3.11 it holds the runtime's thread
        list lock while it creates frame objects, and a collection that frees a `threading.local`
        takes that lock again and deadlocks the process (CPython gh-106883)."""
        enabled = gc.isenabled()
        gc.disable()
        try:
            return sys._current_frames()
        finally:
            if enabled:
                gc.enable()

    def _cpu_since_last(self, ident: int) -> int:
        """Microseconds of CPU the thread used since the previous sample (0 the first time)."""
        try:
            clock = self._cpu_clocks.get(ident)
            if clock is None:
                clock = self._cpu_clocks[ident] = time.pthread_getcpuclockid(ident)
            now = time.clock_gettime_ns(clock)
        except (OSError, OverflowError):  # the thread ended between the listing and the read
            self._cpu_clocks.pop(ident, None)
            return 0
        before = self._cpu_seen.get(ident)
        self._cpu_seen[ident] = now
        return (now - before) // 1000 if before is not None else 0

    def _idle(self, frame: FrameType) -> bool:
        code = frame.f_code
        idle = self._idle_codes.get(code)
        if idle is None:
            idle = self._idle_codes[code] = (Path(code.co_filename).name, code.co_name) in IDLE_LEAVES
        return idle

    def _stack(self, frame: FrameType | None) -> list[str]:
        names = []
        labels = self._labels
        while frame is not None:
            code = frame.f_code
            label = labels.get(code)
            if label is None:
                parts = Path(code.co_filename).parts
                where = "/".join(parts[-2:]) if len(parts) >= 2 else code.co_filename
                label = labels[code] = f"{where}:{code.co_name}"
            names.append(label)
            frame = frame.f_back
        names.reverse()
        return names

    def _read_thread_cpu(self) -> None:
        for tid in list(self._native):
            try:
                text = Path(f"/proc/self/task/{tid}/stat").read_text()
            except OSError:
                continue
            fields = text[text.rindex(")") + 2:].split()
            self._cpu[tid] = (int(fields[11]) + int(fields[12])) / CLK_TCK

    def thread_cpu(self) -> dict[str, float]:
        """CPU seconds per thread group, from the kernel's per-thread accounting (read every second;
        a thread's last second before it ended is lost)."""
        self._read_thread_cpu()
        cpu: collections.defaultdict[str, float] = collections.defaultdict(float)
        for tid, seconds in self._cpu.items():
            cpu[_group(self._native.get(tid, "?"))] += seconds
        return {k: round(v, 2) for k, v in sorted(cpu.items(), key=lambda item: item[1], reverse=True)}

    def dump(self, out: str) -> None:
        self._stop.set()
        self._thread.join(2)
        base = Path(out)
        base.parent.mkdir(parents=True, exist_ok=True)
        with open(f"{base}.folded", "w") as folded:
            for stack, count in self.stacks.most_common():
                folded.write(";".join(stack) + f" {count}\n")
        with open(f"{base}.cpu.folded", "w") as folded:
            for stack, used_us in self.cpu_stacks.most_common():
                folded.write(";".join(stack) + f" {used_us}\n")
        self_counts: collections.Counter[str] = collections.Counter()
        inclusive: collections.Counter[str] = collections.Counter()
        for stack, count in self.stacks.items():
            self_counts[stack[-1]] += count
            for name in set(stack[1:]):
                inclusive[name] += count
        busy_total = sum(self.busy.values()) or 1
        summary = {
            "interval_s": self.interval,
            "samples": self.samples,
            "sampler_cpu_s": round(self.overhead_s, 2),
            "process_cpu_s": round(sum(os.times()[:2]), 2),
            "thread_cpu_s": self.thread_cpu(),
            "busy_samples_by_thread": dict(self.busy.most_common()),
            "top_self": [(name, count, round(count / busy_total, 3)) for name, count in self_counts.most_common(40)],
            "top_inclusive": [(name, count, round(count / busy_total, 3))
                              for name, count in inclusive.most_common(60)],
        }
        Path(f"{base}.json").write_text(json.dumps(summary, indent=1) + "\n")


def main() -> None:
    args = sys.argv[1:]
    if len(args) < 4 or args[1] != "--" or args[2] != "-m":
        raise SystemExit("usage: python -m bench._sampler OUT -- -m MODULE [ARGS...]")
    out, module, rest = args[0], args[3], args[4:]
    sampler = Sampler()
    atexit.register(sampler.dump, out)
    sampler.start()
    sys.argv = [module, *rest]
    time.sleep(0)
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
