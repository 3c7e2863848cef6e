"""Benchmark: work queue add/get/done throughput against ``queue.Queue``.

The work queue does more than a FIFO on every hand-off (dirty and processing sets, a
drain-aware done), so the question is what that costs. Both queues do the same hand-offs
in the same run: one producer adds ``ITEMS`` distinct keys while four worker threads take
each one and mark it done; the clock stops when every item has been processed
(``shut_down_with_drain`` for the work queue, ``join`` for ``queue.Queue``). Runs alternate
between the two and the best of ``REPEATS`` is kept, so machine noise affects both alike.

Run: ``python -m bench.bench_workqueue``. Prints one table row and writes
``bench/results/workqueue.json``.
"""

import json
import platform
import queue
import threading
import time
from pathlib import Path
from typing import Any

from workqueue import Queue

ITEMS = 200_000
WORKERS = 4
REPEATS = 5
RESULTS = Path(__file__).resolve().parent / "results" / "workqueue.json"


def run_workqueue(items: int, workers: int) -> float:
    """Seconds for ``items`` add/get/done hand-offs through a ``workqueue.Queue``."""
    q: Queue[int] = Queue()

    def work() -> None:
        while True:
            item, shutdown = q.get()
            if shutdown:
                return
            q.done(item)  # type: ignore[arg-type]

    threads = [threading.Thread(target=work) for _ in range(workers)]
    for thread in threads:
        thread.start()
    start = time.perf_counter()
    for i in range(items):
        q.add(i)
    q.shut_down_with_drain()
    elapsed = time.perf_counter() - start
    for thread in threads:
        thread.join()
    return elapsed


def run_stdlib_queue(items: int, workers: int) -> float:
    """Seconds for the same hand-offs through ``queue.Queue`` (put/get/task_done)."""
    q: queue.Queue[int | None] = queue.Queue()

    def work() -> None:
        while True:
            item = q.get()
            q.task_done()
            if item is None:
                return

    threads = [threading.Thread(target=work) for _ in range(workers)]
    for thread in threads:
        thread.start()
    start = time.perf_counter()
    for i in range(items):
        q.put(i)
    q.join()
    elapsed = time.perf_counter() - start
    # The stop sentinels are outside the timed part, like the work queue's thread joins.
    for _ in threads:
        q.put(None)
    for thread in threads:
        thread.join()
    return elapsed


def measure(items: int = ITEMS, workers: int = WORKERS, repeats: int = REPEATS) -> dict[str, Any]:
    workqueue_times: list[float] = []
    stdlib_times: list[float] = []
    for _ in range(repeats):
        workqueue_times.append(run_workqueue(items, workers))
        stdlib_times.append(run_stdlib_queue(items, workers))
    workqueue_rate = items / min(workqueue_times)
    stdlib_rate = items / min(stdlib_times)
    return {
        "benchmark": "workqueue add/get/done",
        "items": items,
        "workers": workers,
        "repeats": repeats,
        "workqueue_ops_per_s": round(workqueue_rate),
        "queue_queue_ops_per_s": round(stdlib_rate),
        "ratio": round(workqueue_rate / stdlib_rate, 3),
        "python": platform.python_version(),
    }


def main() -> None:
    result = measure()
    header = f"{'benchmark':<26} {'items':>8} {'workers':>7} {'workqueue/s':>12} {'queue.Queue/s':>14} {'ratio':>6}"
    print(header)
    print(
        f"{result['benchmark']:<26} {result['items']:>8} {result['workers']:>7} "
        f"{result['workqueue_ops_per_s']:>12} {result['queue_queue_ops_per_s']:>14} {result['ratio']:>6.2f}"
    )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
