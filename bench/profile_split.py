"""Where the operator's CPU goes: `python -m bench.profile_split PROFILE.cpu.folded [...]`.

Reads the stacks that `bench/_sampler.py` wrote (`TFJOB_BENCH_PROFILE=DIR`), weighted by the CPU
time each thread used (`.cpu.folded`, microseconds; a plain `.folded` file counts busy samples, which
include threads waiting for the GIL, so it overstates code that blocks), and splits them two ways at
once, printing a Markdown table of CPU seconds and shares:

* rows, **what the work was for**: reading watches into the caches, the reconcile's own decisions,
  creating and deleting children, writing status, posting events, serving metrics and health;
* columns, **what kind of code ran**: JSON encoding/decoding, TLS and sockets, urllib3 and
  http.client, the client pipeline (the `kubernetes` client's generic request path and
  `kube/client.py` around it), or the operator's own Python. CPU that a thread used before it
  blocked (it is found waiting for an answer when sampled) cannot be given a kind and is shown as
  "blocked at the sample", in its row.

The two axes are kept apart because the levers differ: a faster JSON codec helps every row's JSON
column, HTTP/2 the TLS and HTTP columns, a thinner request path the client pipeline, and fewer events or smaller status
patches only their rows. A sample is classified by its thread and the frames on its stack only, so
the split needs no instrumentation in the operator and works on any earlier profile.
"""

from __future__ import annotations

import collections
import sys
from pathlib import Path

PURPOSES = ("watch → cache", "reconcile", "create/delete children", "status", "events", "metrics/health",
            "other")
MECHANISMS = ("JSON", "TLS + sockets", "urllib3 + http.client", "client pipeline", "operator Python",
              "blocked at the sample")

# Innermost frames that wait (for an answer, a lock, work): a thread found there was not running, so
# the CPU it used since the previous sample was spent on the way in (encoding, sending) and cannot be
# given to a kind of code; it stays in its row, in the last column.
_BLOCKING_LEAVES = (
    "ssl.py:read", "ssl.py:recv_into", "socket.py:readinto", "socket.py:accept", "threading.py:wait",
    "threading.py:_wait_for_tstate_lock", "selectors.py:select", "queue.py:get", "thread.py:_worker",
    "socketserver.py:serve_forever",
)

_JSON_FILES = ("json/decoder.py", "json/encoder.py", "json/__init__.py")
# (marker in the frame's file, mechanism), looked up from the innermost frame outwards.
_LIBRARY_MARKERS = (
    ("/ssl.py", "TLS + sockets"), ("/socket.py", "TLS + sockets"), ("util/wait.py", "TLS + sockets"),
    ("urllib3/", "urllib3 + http.client"), ("http/client.py", "urllib3 + http.client"),
    ("email/", "urllib3 + http.client"), ("util/ssl_.py", "TLS + sockets"),
    # The `kubernetes` client's generic request path and this project's one module around it.
    ("client/api_client.py", "client pipeline"), ("client/rest.py", "client pipeline"),
    ("client/configuration.py", "client pipeline"), ("kube/client.py", "client pipeline"),
    ("kube/watch.py", "client pipeline"), ("kube/throttle.py", "client pipeline"),
)
_OWN_PACKAGES = ("controller/", "informers/", "workqueue/", "tfconfig/", "kube/", "job/", "kueue/",
                 "process/", "kubeflow/")
# The reconciler's functions that write children; `_write_owned` carries out the owned types'
# writes (NetworkPolicy, PodGroup) through controller/companions.py.
_CHILD_WRITES = ("reconciler.py:_create_pods", "reconciler.py:_create_pod", "reconciler.py:_create_service",
                 "reconciler.py:_delete_pods", "reconciler.py:_delete_pod", "reconciler.py:_delete_service",
                 "reconciler.py:_write_owned", "reconciler.py:_delete_job")


def _file(frame: str) -> str:
    return frame.rsplit(":", 1)[0]


def mechanism(frames: list[str]) -> str:
    """The kind of code at the top of the stack: the first recognised frame from the leaf up."""
    if frames and frames[-1].endswith(_BLOCKING_LEAVES):
        return "blocked at the sample"
    for frame in reversed(frames):
        where = _file(frame)
        if any(where.endswith(name) for name in _JSON_FILES):
            return "JSON"
        for marker, kind in _LIBRARY_MARKERS:
            if marker in f"/{where}":
                return kind
        if where.startswith(_OWN_PACKAGES):
            return "operator Python"
    return "operator Python"


def purpose(thread: str, frames: list[str]) -> str:
    """What the sampled work was for, from the thread it ran on and the frames below it."""
    if thread.startswith("informer-"):
        return "watch → cache"
    if thread.startswith("create"):  # the pool that runs a reconcile's creates and deletes
        return "create/delete children"
    if thread == "event-recorder" or any(f.startswith("controller/events.py") for f in frames):
        return "events"
    if thread in ("health", "MainThread") and any("metrics" in f or "health" in f for f in frames):
        return "metrics/health"
    if any(f.endswith("reconciler.py:_write_status") for f in frames):
        return "status"
    if any(f.endswith(name) for f in frames for name in _CHILD_WRITES):
        return "create/delete children"
    if thread.startswith(("worker-", "workqueue-")):
        return "reconcile"
    return "other"


def split(folded_lines: list[str]) -> tuple[collections.Counter[tuple[str, str]], int]:
    """The weight (CPU microseconds, or samples) per (purpose, mechanism), and the total."""
    cells: collections.Counter[tuple[str, str]] = collections.Counter()
    total = 0
    for line in folded_lines:
        stack, _, count_text = line.rstrip("\n").rpartition(" ")
        if not stack:
            continue
        thread, *frames = stack.split(";")
        count = int(count_text)
        cells[(purpose(thread, frames), mechanism(frames))] += count
        total += count
    return cells, total


def table(cells: collections.Counter[tuple[str, str]], total: int, unit: float) -> str:
    """Each cell as an amount (`unit` converts a weight to seconds, or 1 for samples) and a share."""
    def cell(n: int) -> str:
        amount = f"{n * unit:.2f} s" if unit != 1 else f"{n}"
        return f"{amount} ({100 * n / max(total, 1):.0f} %)"

    rows = ["| work | " + " | ".join(MECHANISMS) + " | all |", "|---" * (len(MECHANISMS) + 2) + "|"]
    for what in PURPOSES:
        values = [cells[(what, how)] for how in MECHANISMS]
        if sum(values):
            rows.append(f"| {what} | " + " | ".join(cell(v) for v in values) + f" | {cell(sum(values))} |")
    columns = [sum(cells[(what, how)] for what in PURPOSES) for how in MECHANISMS]
    rows.append("| all | " + " | ".join(cell(v) for v in columns) + f" | {cell(total)} |")
    return "\n".join(rows)


def main(paths: list[str]) -> int:
    if not paths:
        print("usage: python -m bench.profile_split PROFILE.cpu.folded [...]", file=sys.stderr)
        return 2
    for path in paths:
        folded = Path(path)
        cells, total = split(folded.read_text().splitlines())
        cpu_weighted = folded.name.endswith(".cpu.folded")
        print(f"{folded.name}: {'CPU-weighted' if cpu_weighted else 'busy samples'}, total "
              f"{total / 1e6 if cpu_weighted else total:.2f}{' s' if cpu_weighted else ''}")
        print(table(cells, total, 1e-6 if cpu_weighted else 1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
