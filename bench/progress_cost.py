"""What training progress (`spec.progress`) costs per reporting job: status patches and pod-proxy reads
per minute, on a cluster with a real node (`python -m bench.progress_cost CLUSTER_DIR`).

KWOK's pods have no network, so the reads cannot be measured by the KWOK benchmarks; this runs on a
cluster started with `tfjob-devcluster up --dir CLUSTER_DIR --nodes 0 --real-nodes 1` (the TensorFlow
image imported and the CRD installed, as tests/real/conftest.py does). For each period it runs 3 jobs
whose chief reports a new step every 0.5 s (so every read sees a change: the worst case), waits until
each shows an ETA, then counts the operator's own `tfjob_api_requests_total` over a window.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import yaml

from bench._harness import OperatorProcess
from bench._measure import delta
from devcluster.cluster import Cluster

ROOT = Path(__file__).resolve().parents[1]
TRAINER = """
import time, tfheartbeat
for step in range(1, 100_000):
    tfheartbeat.report(step=step, total_steps=100_000, metrics={"loss": 1.0 / step})
    time.sleep(0.5)
"""
JOBS = 3
PHASES = ((30, 180.0), (10, 120.0))  # (periodSeconds, window in seconds)
IMAGE = "tensorflow/tensorflow:2.21.0"  # the image devcluster/images.py builds; tfheartbeat is mounted


def code() -> dict[str, Any]:
    """The trainer and the tfheartbeat package, as one ConfigMap (keys cannot hold a `/`)."""
    data = {"train.py": TRAINER}
    for source in sorted((ROOT / "tfheartbeat").glob("*.py")):
        data[f"tfheartbeat.{source.name}"] = source.read_text()
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "code"}, "data": data}


def reporting_job(name: str, period: int) -> dict[str, Any]:
    items = [{"key": key, "path": key.replace("tfheartbeat.", "tfheartbeat/", 1)} for key in code()["data"]]
    container = {"name": "tensorflow", "image": IMAGE, "imagePullPolicy": "IfNotPresent",
                 "command": ["python", "/code/train.py"], "env": [{"name": "PYTHONPATH", "value": "/code"}],
                 "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}},
                 "volumeMounts": [{"name": "code", "mountPath": "/code"}]}
    return {"apiVersion": "kubeflow.org/v1", "kind": "TensorFlowJob", "metadata": {"name": name},
            "spec": {"progress": {"periodSeconds": period}, "chief": {"replicas": 1, "template": {"spec": {
                "terminationGracePeriodSeconds": 1, "containers": [container],
                "volumes": [{"name": "code", "configMap": {"name": "code", "items": items}}]}}}}}


def measure(cluster: Cluster, operator: OperatorProcess, period: int, window: float) -> dict[str, float]:
    """Requests per job and minute over `window` seconds of `JOBS` reporting jobs read every `period`."""
    namespace = f"progress-cost-{period}"
    cluster.kubectl("create", "namespace", namespace)
    jobs = [reporting_job(f"job{index}", period) for index in range(JOBS)]
    cluster.kubectl("-n", namespace, "apply", "-f", "-", input=yaml.safe_dump_all([code(), *jobs]))
    try:
        deadline = time.monotonic() + 240
        path = "jsonpath={range .items[*]}{.status.progress.remaining}{' '}{end}"
        while len(cluster.kubectl("-n", namespace, "get", "tensorflowjobs", "-o", path).stdout.split()) < JOBS:
            if time.monotonic() > deadline:
                raise SystemExit(f"the {JOBS} jobs did not all show an ETA within 240 s")
            time.sleep(2)
        before = operator.requests()
        time.sleep(window)
        changed = delta(before, operator.requests())
    finally:
        cluster.kubectl("delete", "namespace", namespace, "--wait=true", "--timeout=120s", check=False, timeout=150)
    return {" ".join(part for part in (verb, resource, sub) if part): round(count / JOBS / (window / 60), 2)
            for (verb, _, resource, sub), count in sorted(changed.items())}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    cluster = Cluster(argv[0])
    operator = OperatorProcess(cluster.kubeconfig, ROOT / "bench" / "results" / "logs" / "progress-cost.log", [])
    operator.start().wait_ready()
    try:
        for period, window in PHASES:
            per_job = measure(cluster, operator, period, window)
            print(f"periodSeconds {period}, {JOBS} jobs, {window:.0f} s: per job and minute {per_job}", flush=True)
    finally:
        operator.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
