"""What every operator benchmark scenario shares: the knobs, the targets and the small helpers.

`Config` (sizes, scenarios, operator flags, read from argv and TFJOB_BENCH_* variables), the targets
the summary judges against, and the helpers each scenario uses: a logged fresh cluster, the operator
under test with its log file, bounded timeouts, the objects the operator would create for a job,
raw creation, waits and reconcile counts. It is a module of its own so that the scenario modules
(bench/_operator_bursts.py and bench/bench_operator.py) can share it without importing each other:
bench_operator.py is also run as `python -m bench.bench_operator`, and a scenario module importing
it would load it a second time under its package name. Split out of bench_operator.py when that file
passed the project's 600-line limit; nothing here changed on the way.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench._harness import (
    RESULTS,
    BenchCluster,
    CountRecorder,
    PodRecorder,
    log,
    running_operator,
)
from bench._harness import (
    fresh_cluster as _fresh_cluster,
)
from bench._measure import (
    metric_value,
)
from controller.job.builders import build_pods, build_service
from controller.job.kinds import TENSORFLOWJOB
from kube import Kube, resource_path
from tfjob_api.defaults import apply_defaults

SCENARIOS = ("b0", "b1", "b2", "b3", "b4", "b5", "b6", "b8")
# B8: 10 000 jobs x 5 pods on 50 KWOK nodes x 1 200 pods (room for 60 000). One KWOK process on two
# loaded cores renews the nodes' leases late: fewer nodes, and ten minutes' grace before a node is
# NotReady, so that the run measures the operator rather than evictions of healthy fake nodes.
SCALE_CLUSTER_SHAPE: dict[str, Any] = {"nodes": 50, "pods": "1200", "node_grace_seconds": 600}
DEFAULT_OPERATOR_ARGS = "--workers 32 --qps 500 --burst 1000"
LOGS = RESULTS / "logs"

TARGET_EFFICIENCY = 0.85
TARGET_RUNNING_VS_IDEAL = 1.05
SUBMIT_THREADS = 16  # as many concurrent job submissions as submit_jobs makes in the operator's runs
TARGET_RECOVERY_P50 = 0.200
TARGET_RECOVERY_P99 = 1.0
TARGET_RSS = 100e6
TARGET_SYNC = 10.0
TARGET_SCALING = 1.2
STATUS_WRITES_BUDGET = 3


@dataclass
class Config:
    quick: bool = False
    scenarios: tuple[str, ...] = SCENARIOS
    operator_args: list[str] = field(default_factory=lambda: shlex.split(DEFAULT_OPERATOR_ARGS))
    profile_dir: Path | None = None
    concurrency: tuple[int, ...] = (1, 4, 16, 64)
    ceiling_jobs: int = 200
    burst_sizes: tuple[int, ...] = (100, 300, 1000)
    wide_workers: int = 1000
    recovery_jobs: int = 200
    recovery_deletions: int = 100
    recovery_interval: float = 1.0
    steady_jobs: int = 1000
    steady_workers: int = 9
    steady_idle: float = 30.0
    scale_jobs: int = 10000
    scale_workers: int = 4
    scale_namespaces: int = 1
    api_jobs: int = 10
    paired: bool = True

    @classmethod
    def load(cls, argv: Sequence[str], env: dict[str, str]) -> Config:
        quick = "--quick" in argv or env.get("TFJOB_BENCH_QUICK", "").lower() in ("1", "true", "yes")
        cfg = cls(quick=quick)
        if quick:
            cfg.ceiling_jobs, cfg.burst_sizes, cfg.wide_workers = 40, (20, 60, 200), 200
            cfg.recovery_jobs, cfg.recovery_deletions = 40, 20
            cfg.steady_jobs, cfg.steady_workers, cfg.steady_idle, cfg.api_jobs = 100, 9, 10.0, 3
            cfg.scale_jobs = 1000
        wanted = [a.lower() for a in argv if a.lower() in SCENARIOS]
        wanted += [s.strip().lower() for s in env.get("TFJOB_BENCH_SCENARIOS", "").split(",") if s.strip()]
        if wanted:
            cfg.scenarios = tuple(s for s in SCENARIOS if s in wanted)
        if env.get("TFJOB_BENCH_OPERATOR_ARGS"):
            cfg.operator_args = shlex.split(env["TFJOB_BENCH_OPERATOR_ARGS"])
        if env.get("TFJOB_BENCH_BURST_SIZES"):
            cfg.burst_sizes = tuple(int(x) for x in env["TFJOB_BENCH_BURST_SIZES"].split(","))
        if env.get("TFJOB_BENCH_PAIRED", "1").lower() in ("0", "false", "no"):
            cfg.paired = False
        if env.get("TFJOB_BENCH_SCALE_JOBS"):
            cfg.scale_jobs = int(env["TFJOB_BENCH_SCALE_JOBS"])
        if env.get("TFJOB_BENCH_SCALE_NAMESPACES"):
            cfg.scale_namespaces = int(env["TFJOB_BENCH_SCALE_NAMESPACES"])
        if env.get("TFJOB_BENCH_PROFILE"):
            cfg.profile_dir = Path(env["TFJOB_BENCH_PROFILE"]).resolve()
        return cfg


def fresh_cluster(pool_size: int = 96, shape: dict[str, Any] | None = None) -> Any:
    log(f"starting a fresh devcluster{' of ' + str(shape) if shape else ''}")
    return _fresh_cluster(pool_size, shape=shape)


def operator(bench: BenchCluster, cfg: Config, name: str) -> Any:
    return running_operator(bench, cfg.operator_args, LOGS / f"{name}.log", cfg.profile_dir, name)


def bounded(count: int, per_item: float = 0.25, base: float = 60.0, cap: float = 1800.0) -> float:
    """A wait's timeout: generous, proportional to the work, and never unbounded."""
    return min(cap, base + per_item * count)


def job_objects(job: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The Service and Pods the operator would create for a stored job, as (plural, body)."""
    defaulted = apply_defaults(job)
    return [("services", build_service(defaulted, TENSORFLOWJOB)),
            *(("pods", pod) for pod in build_pods(defaulted, "", (), TENSORFLOWJOB))]


def create_raw(kube: Kube, namespace: str, objects: list[tuple[str, dict[str, Any]]],
               concurrency: int) -> list[float]:
    """Create the objects with `concurrency` threads; the latency of every request."""
    latencies: list[float] = []

    def create(item: tuple[str, dict[str, Any]]) -> None:
        plural, body = item
        started = time.monotonic()
        kube.create(resource_path("", "v1", plural, namespace), body)
        latencies.append(time.monotonic() - started)

    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        list(pool.map(create, objects))
    return latencies


def wait_all(pods: PodRecorder, services: CountRecorder | None, n_pods: int, n_services: int,
             timeout: float) -> bool:
    ok = pods.wait(lambda: len(pods.times.first_seen) >= n_pods, timeout)
    if services is not None:
        ok = services.wait(lambda: len(services.first_seen) >= n_services, 30 if not ok else timeout) and ok
    return ok


def reconcile_stats(metrics_text: str) -> dict[str, float]:
    """Reconciles done and seconds spent in them (wall, all results), from the operator's histogram."""
    return {"count": metric_value(metrics_text, "tfjob_reconcile_duration_seconds_count"),
            "sum": metric_value(metrics_text, "tfjob_reconcile_duration_seconds_sum")}


def last(values: Any) -> float:
    values = list(values)
    return max(values) if values else float("nan")


def cpu_ms_per_job(cpu: dict[str, float], jobs: int) -> dict[str, float]:
    """A CpuMeter reading (seconds per component) as milliseconds per job, without the wall clock."""
    return {k: round(v * 1000 / jobs, 1) for k, v in cpu.items() if k != "wall"}
