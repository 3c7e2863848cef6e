"""Benchmark: MultiKueue dispatch throughput, from submission on the manager to pods on a worker.

A manager and one worker devcluster side by side (devcluster/multikueue.py: a real Kueue on each, the
manager's configured for MultiKueue), the operator on both. `JOBS` TensorFlowJobs naming
`kueue.x-k8s.io/multikueue` are submitted on the manager at once (16 concurrent requests), each one
worker pod small enough that the worker's quota holds all of them. Measured from the benchmark
process, one monotonic clock, polling both clusters every 0.2 s:

* **dispatched**: the worker's copy of the job exists (Kueue created the remote Workload and job);
* **pod**: the worker's operator created its pod (the worker's Kueue admitted the adopted Workload);
* **running (manager)**: the manager's job shows `Running`, the worker's status copied back.

Jobs per second = jobs / (time of the last such event - first submission), beside Kueue's published
figure for MultiKueue (~1.3 workloads/s, kubernetes-sigs/kueue #8564), which is dominated by Kueue.

Run: `python -m bench.bench_multikueue` (`TFJOB_BENCH_MULTIKUEUE_JOBS=100` by default;
`TFJOB_BENCH_MULTIKUEUE_CONCURRENCY=N` gives the manager's Kueue N concurrent Workload reconciles
through `controller.groupKindConcurrency`, controller-runtime's default being 1). Prints a table
and writes `bench/results/multikueue.json`; the operators' logs go to `bench/results/logs/`.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._harness import RESULTS, OperatorProcess, log, submit_jobs, write_result
from devcluster import multikueue
from kube import Kube, resource_path

JOBS = int(os.environ.get("TFJOB_BENCH_MULTIKUEUE_JOBS", "100"))
CONCURRENCY = int(os.environ.get("TFJOB_BENCH_MULTIKUEUE_CONCURRENCY", "0")) or None  # manager's Workload reconciles
NAMESPACE = multikueue.QUEUE_NAMESPACE
TIMEOUT = 600.0
POLL = 0.2
REQUESTS = {"cpu": "50m", "memory": "64Mi"}


def job(name: str) -> dict[str, Any]:
    container = {"name": "tensorflow", "image": "tensorflow/tensorflow:2.21.0", "resources": {"requests": REQUESTS}}
    return {"apiVersion": "kubeflow.org/v1", "kind": "TensorFlowJob",
            "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
            "spec": {"managedBy": multikueue.CONTROLLER_NAME,
                     "worker": {"replicas": 1, "restartPolicy": "OnFailure",
                                "template": {"spec": {"containers": [container]}}}}}


def _names(kube: Kube, path: str, running: bool = False) -> set[str]:
    items = kube.list(path)["items"]
    if running:
        items = [j for j in items if any(c.get("type") == "Running" and c.get("status") == "True"
                                         for c in (j.get("status") or {}).get("conditions") or [])]
    return {i["metadata"]["name"] for i in items}


def _pod_jobs(kube: Kube) -> set[str]:
    pods = kube.list(resource_path("", "v1", "pods", NAMESPACE))["items"]
    return {p["metadata"]["labels"].get("tensorflowjob.kubeflow.org/job-name", "") for p in pods}


def measure(manager: Kube, worker: Kube) -> dict[str, Any]:
    path = resource_path("kubeflow.org", "v1", "tensorflowjobs", NAMESPACE)
    bodies = [job(f"mk-{index:04d}") for index in range(JOBS)]
    start = time.monotonic()
    submit_jobs(manager, bodies)
    submitted = time.monotonic() - start
    firsts: dict[str, float] = {}
    lasts: dict[str, float] = {}
    deadline = start + TIMEOUT
    while time.monotonic() < deadline:
        counts = {"dispatched": len(_names(worker, path)), "pod": len(_pod_jobs(worker)),
                  "running (manager)": len(_names(manager, path, running=True))}
        now = time.monotonic() - start
        for what, count in counts.items():
            if count and what not in firsts:
                firsts[what] = now
            if count >= JOBS and what not in lasts:
                lasts[what] = now
        if len(lasts) == len(counts):
            break
        time.sleep(POLL)
    return {"jobs": JOBS, "workload_concurrency": CONCURRENCY or 1, "submitted_s": round(submitted, 2),
            "first_s": {k: round(v, 2) for k, v in firsts.items()},
            "all_s": {k: round(v, 2) for k, v in lasts.items()},
            "jobs_per_s": {k: round(JOBS / v, 2) for k, v in lasts.items()},
            "complete": len(lasts) == 3}


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="bench-multikueue-") as base:
        log(f"starting a manager and a worker under {base}")
        clusters = multikueue.up(Path(base), workers=1, nodes=2, cpu="8", memory="32Gi",
                                 workload_concurrency=CONCURRENCY)
        operators: list[OperatorProcess] = []
        clients: list[Kube] = []
        try:
            for name, cluster in clusters.items():
                operator = OperatorProcess(cluster.kubeconfig, RESULTS / "logs" / f"multikueue-{name}.log", [])
                operators.append(operator.start())
                operator.wait_ready()
                clients.append(Kube.from_kubeconfig(str(cluster.kubeconfig)))
            log(f"submitting {JOBS} jobs on the manager")
            result = measure(clients[0], clients[1])
        finally:
            for operator in operators:
                operator.stop()
            for client in clients:
                client.close()
            multikueue.down(Path(base))
    print(f"{'event':<20} {'first (s)':>10} {'all (s)':>10} {'jobs/s':>8}")
    for what in ("dispatched", "pod", "running (manager)"):
        print(f"{what:<20} {result['first_s'].get(what, '-'):>10} {result['all_s'].get(what, '-'):>10} "
              f"{result['jobs_per_s'].get(what, '-'):>8}")
    print(f"written: {write_result('multikueue', result)}")
    return 0 if result["complete"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
