"""Benchmark: the operator on a local control plane, against the API server's own ceiling.

Every measurement starts a fresh devcluster (etcd, kube-apiserver, controller-manager, scheduler,
KWOK with 20 nodes x 600 pods; see `_harness.fresh_cluster`) and runs the operator as a subprocess
(`python -m controller.process.cli run ...`). All times come from watches in this process (one monotonic
clock), never from `creationTimestamp`. Ratios are against baselines measured in the same run:

* **B0 ceiling** — no operator: a plain raw-JSON client (`kube.Kube`, no client-side
  QPS limit) creates the very Services and Pods the operator would create (built by
  `controller.job.builders` for real TensorFlowJobs) at concurrency 1, 4, 16, 64. The best objects/s
  (time until the watch has seen every object) is the ceiling; the time until every pod is Running
  (scheduler + KWOK) is the Running baseline.
* **The fair ideal** (`ideal_run`) — what a perfect operator with the same budget would do: inside
  one timed window it submits the same TensorFlowJobs and, as each is accepted, creates exactly the
  Service and Pods the operator would (same builders and bodies) with the create parallelism the
  operator's defaults allow, then waits for the same end points. It writes no status and no events
  and reconciles nothing, so a ratio against it measures only the operator's own overhead.
* **B1' burst** — N jobs of 1 ps + 4 workers submitted at once: time from the first submit until
  every pod and Service exists (efficiency = the ideal's time ÷ the operator's, target ≥ 0.85), and
  until every job is Running (÷ the ideal's all pods Running, target ≤ 1.05); per-job p50/p99; and,
  for reference, objects/s against the B0 ceiling.
* **B2' wide job** — one job with 1 000 workers (their TF_CONFIG lists 1 000 addresses, so its pods
  are far bigger than B0's): time to all pods and to the job Running, against the fair ideal for the
  same job, and objects/s against the B0 ceiling for reference.
* **B3 recovery** — with 200 jobs Running, delete a random Running pod (grace 0, so KWOK's deletion
  time is excluded) every second, 100 times: p50/p99 from the DELETE's return to the replacement's
  ADDED event (and to Running).
* **B4 steady state** — 10 000 pods cached (1 000 jobs x (1 ps + 9 workers)): operator RSS and idle
  CPU over 30 s; then a restart: seconds until /readyz (caches synced) and the writes the new process
  makes (its own `tfjob_api_requests_total`, cross-checked with the API server's `apiserver_request_total`).
* **B5 API calls per job** — jobs of 1 chief + 1 ps + 3 workers that run to success (the chief exits 0
  after 5 s; the ps and workers keep running and are cleaned up, so the cleanup is deterministic:
  4 deletes): writes per job by verb and resource (the operator's own counter, exact; the API server's
  counts are printed as a cross-check, but its pod DELETEs include KWOK's final ones), against
  pods + 1 Service + 3 status writes + cleanup deletes.
* **B8 scale** — B4 at 10 000 jobs x (1 ps + 4 workers) = 50 000 pods on 50 KWOK nodes: RSS, cache
  sync and writes after a restart (0), reconcile p99, and the time per job to fill the cluster against
  the time per job to Running of a burst of a tenth as many jobs on the same 50 nodes (target ≤ 1.2x):
  the same cluster shape on both sides, so that only the number of jobs differs.
* **B6 scaling** — the burst at N = 100, 300, 1 000 (shared with B1): per-job time and the fitted slope
  of T(N) = a + b·N; per-job time at the largest N within 1.2x of the smallest.

Run: `make bench`, `python -m bench operator`, or `python -m bench.bench_operator [--quick] [b0 b3 ...]`.
Knobs (environment):

* TFJOB_BENCH_QUICK=1: small sizes (minutes instead of about an hour);
* TFJOB_BENCH_SCENARIOS=b1,b3: run only these (B0 runs too when a ratio needs it);
* TFJOB_BENCH_OPERATOR_ARGS="--workers 32 --qps 500 --burst 1000": the operator's flags (its defaults);
* TFJOB_BENCH_BURST_SIZES=100,300,1000; TFJOB_BENCH_PAIRED=0 skips the fair ideal run before each burst;
* TFJOB_BENCH_PROFILE=DIR: run the operator under bench/_sampler.py; profiles land in DIR;
* TFJOB_BENCH_SCALE_JOBS=3000: B8's size; TFJOB_BENCH_SCALE_NAMESPACES=10 spreads its jobs over as many
  namespaces (an experiment; the reference burst stays in one);
* TFJOB_BENCH_REUSE_CEILING=1: take B0 from bench/results/b0_ceiling.json of an earlier run (experiments);
* TFJOB_BENCH_OPERATOR_ROOT=DIR: run the operator from a modified copy of the repository (experiments).

Each scenario prints table rows and writes bench/results/<scenario>.json; the summary goes to
bench/results/operator.json, operator logs to bench/results/logs/. Every wait is bounded, so a stuck
scenario ends by itself (marked incomplete in the JSON).

Where the code is: B0, the fair ideal, B1'/B6 and B2' in bench/_operator_bursts.py; `Config`, the
targets and the helpers every scenario shares in bench/_operator_common.py; B3, B4/B8, B5, the
summary and the run here.
"""

from __future__ import annotations

import functools
import json
import os
import random
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

from bench._harness import (
    RESULTS,
    JobRecorder,
    OperatorProcess,
    PodRecorder,
    log,
    machine,
    submit_jobs,
    tfjob,
    wait_until,
    write_result,
)
from bench._harness import (
    fresh_cluster as _fresh_cluster,
)
from bench._measure import (
    delta,
    fmt,
    histogram_quantile,
    markdown_table,
    percentile,
    verdict,
    writes,
)
from bench._operator_bursts import b0_ceiling, b2_wide, b6_scaling, burst
from bench._operator_common import (
    LOGS,
    SCALE_CLUSTER_SHAPE,
    STATUS_WRITES_BUDGET,
    TARGET_EFFICIENCY,
    TARGET_RECOVERY_P50,
    TARGET_RECOVERY_P99,
    TARGET_RSS,
    TARGET_RUNNING_VS_IDEAL,
    TARGET_SCALING,
    TARGET_SYNC,
    Config,
    bounded,
    cpu_ms_per_job,
    fresh_cluster,
    last,
    operator,
)
from kube import ApiError, resource_path

# --- B3 -----------------------------------------------------------------------------------------------


def b3_recovery(cfg: Config) -> dict[str, Any]:
    n = cfg.recovery_jobs
    rng = random.Random(8)
    deletions: list[tuple[str, str, float, float]] = []  # name, old uid, sent, returned
    with fresh_cluster() as bench:
        ns = bench.create_namespace("bench")
        pods = bench.watch(PodRecorder(bench.kube, ns))
        jobs = bench.watch(JobRecorder(bench.kube, ns))
        with operator(bench, cfg, "b3-recovery") as op:
            submit_jobs(bench.kube, [tfjob(f"job-{i:04d}", ns, workers=4) for i in range(n)])
            ready = jobs.wait(lambda: len(jobs.times.running) >= n, bounded(5 * n))
            log(f"{len(jobs.times.running)}/{n} jobs Running; deleting pods")
            wait_until(op.queue_idle, 30)
            meter = bench.cpu_meter(op).start()
            begin = time.monotonic()
            for i in range(cfg.recovery_deletions):
                time.sleep(max(0.0, begin + i * cfg.recovery_interval - time.monotonic()))
                with pods.cond:
                    candidates = sorted((name, uid) for name, uid in pods.times.live.items()
                                        if pods.times.phase.get(uid) == "Running")
                if not candidates:
                    continue
                name, uid = rng.choice(candidates)
                sent = time.monotonic()
                try:
                    bench.kube.delete(resource_path("", "v1", "pods", ns, name), uid=uid, grace_seconds=0)
                except ApiError as error:
                    log(f"delete {name}: {error}")
                    continue
                deletions.append((name, uid, sent, time.monotonic()))

            def replaced() -> bool:
                return all(replacement(pods, name, uid, sent) is not None for name, uid, sent, _ in deletions)

            all_replaced = pods.wait(replaced, 60)
            pods.wait(lambda: all(pods.times.running.get(replacement(pods, name, uid, sent) or "") is not None
                                  for name, uid, sent, _ in deletions), 30)
            cpu = meter.stop()
    to_created, to_running, missing = [], [], 0
    for name, uid, sent, returned in deletions:
        new = replacement(pods, name, uid, sent)
        if new is None:
            missing += 1
            continue
        to_created.append(max(0.0, pods.times.added[new][1] - returned))
        if new in pods.times.running:
            to_running.append(max(0.0, pods.times.running[new] - returned))
    result = {
        "jobs": n, "deletions": len(deletions), "missing_replacements": missing,
        "complete": ready and all_replaced,
        "created_p50_ms": round(percentile(to_created, 50) * 1000, 1),
        "created_p99_ms": round(percentile(to_created, 99) * 1000, 1),
        "created_max_ms": round(last(to_created) * 1000, 1),
        "running_p50_ms": round(percentile(to_running, 50) * 1000, 1),
        "running_p99_ms": round(percentile(to_running, 99) * 1000, 1),
        "cpu_s": cpu,
    }
    write_result("b3_recovery", result)
    print(f"  B3 {len(deletions)} deletions among {5 * n} pods: replacement exists after p50 "
          f"{result['created_p50_ms']} ms, p99 {result['created_p99_ms']} ms (max {result['created_max_ms']}); "
          f"Running p50 {result['running_p50_ms']} ms, p99 {result['running_p99_ms']} ms; missing {missing}",
          flush=True)
    return result


def replacement(pods: PodRecorder, name: str, old_uid: str, after: float) -> str | None:
    """The uid of the first pod named `name`, other than old_uid, added after `after`."""
    best: tuple[float, str] | None = None
    for uid, (pod_name, added) in list(pods.times.added.items()):
        if pod_name == name and uid != old_uid and added >= after and (best is None or added < best[0]):
            best = (added, uid)
    return best[1] if best else None


# --- B4 -----------------------------------------------------------------------------------------------


def b4_steady(cfg: Config) -> dict[str, Any]:
    return steady_state(cfg, "b4", cfg.steady_jobs, cfg.steady_workers)


def b8_scale(cfg: Config) -> dict[str, Any]:
    """B4 at ten times the jobs: RSS, sync after a restart, writes on restart, reconcile p99, and the
    time per job to fill the cluster against the time per job to Running of a burst of a tenth as
    many jobs on the same cluster shape (the same nodes, so that only the number of jobs differs)."""
    reference_n = max(cfg.scale_jobs // 10, 1)
    reference = burst(cfg, reference_n, None, label="b8_reference", shape=SCALE_CLUSTER_SHAPE, paired=False)
    result = steady_state(cfg, "b8", cfg.scale_jobs, cfg.scale_workers, SCALE_CLUSTER_SHAPE,
                          namespaces=cfg.scale_namespaces)
    result["reference_n"] = reference["n"]
    result["reference_seconds_per_job"] = reference["seconds_per_job_running"]
    result["reference_cpu_ms_per_job"] = cpu_ms_per_job(reference["cpu_s"], reference["n"])
    result["per_job_ratio"] = round(result["fill_seconds_per_job"] / reference["seconds_per_job_running"], 3)
    write_result("b8_scale", result)
    print(f"  B8 per-job time to Running {result['fill_seconds_per_job']} s at N={result['jobs']} against "
          f"{reference['seconds_per_job_running']} s at N={reference['n']} on the same cluster shape: "
          f"x{result['per_job_ratio']}; CPU per job (ms) {result['fill_cpu_ms_per_job']} against "
          f"{result['reference_cpu_ms_per_job']}", flush=True)
    return result


def steady_state(cfg: Config, name: str, n: int, workers: int,
                 shape: dict[str, Any] | None = None, namespaces: int = 1) -> dict[str, Any]:
    """`namespaces` > 1 spreads the jobs over that many namespaces, round robin (an experiment: the
    scheduler and the endpoint controllers scan a pod's namespace for the Services selecting it)."""
    per_job = workers + 1
    total = n * per_job
    log(f"starting a fresh devcluster{' of ' + str(shape) if shape else ''}")
    with _fresh_cluster(shape=shape) as bench:
        spaces = [bench.create_namespace("bench" if namespaces == 1 else f"bench-{k}") for k in range(namespaces)]
        watched = spaces[0] if namespaces == 1 else None  # None: every namespace
        pods = bench.watch(PodRecorder(bench.kube, watched))
        jobs = bench.watch(JobRecorder(bench.kube, watched))
        first = OperatorProcess(bench.cluster.kubeconfig, LOGS / f"{name}-steady.log", cfg.operator_args,
                                cfg.profile_dir, f"{name}-steady").start()
        second: OperatorProcess | None = None
        try:
            first.wait_ready()
            time.sleep(2)
            rss_empty = first.rss()
            started = time.monotonic()
            meter = bench.cpu_meter(first).start()
            submit_jobs(bench.kube, [tfjob(f"job-{i:05d}", spaces[i % namespaces], workers=workers)
                                     for i in range(n)])
            # 50 000 pods at the scheduler's ~30-50 bindings/s take longer than bounded()'s usual cap.
            created_ok = pods.wait(lambda: len(pods.times.first_seen) >= total, bounded(total, cap=3600))
            running_ok = jobs.wait(lambda: len(jobs.times.running) >= n, bounded(total, cap=3600))
            fill_s = time.monotonic() - started
            fill_cpu = meter.stop()
            reconcile_p99 = histogram_quantile(first.metrics(), "tfjob_reconcile_duration_seconds", 0.99)
            log(f"{len(pods.times.first_seen)} pods, {len(jobs.times.running)}/{n} jobs Running after {fill_s:.0f} s")
            wait_until(first.queue_idle, 120, interval=1.0)
            time.sleep(5)
            rss_before_idle = first.rss()
            cpu0, t0, req0 = first.cpu_seconds(), time.monotonic(), first.requests()
            time.sleep(cfg.steady_idle)
            idle_cpu = (first.cpu_seconds() - cpu0) / (time.monotonic() - t0)
            idle_requests = delta(req0, first.requests())
            rss, hwm = first.rss(), first.hwm()
            first.stop()
            time.sleep(1)
            api_before = bench.apiserver_requests()
            second = OperatorProcess(bench.cluster.kubeconfig, LOGS / f"{name}-restart.log", cfg.operator_args,
                                     cfg.profile_dir, f"{name}-restart").start()
            sync_s = second.wait_ready(timeout=300)
            settled = wait_until(lambda: second is not None and second.queue_idle(), 300, interval=0.5)
            first_pass_s = time.monotonic() - second.started_at
            time.sleep(5)
            restart_writes = writes(second.requests())
            restart_requests = {f"{v} {r}{'/' + s if s else ''}": c for (v, _, r, s), c in second.requests().items()}
            api_writes = writes(delta(api_before, bench.apiserver_requests()))
            rss2, hwm2 = second.rss(), second.hwm()
        finally:
            first.stop()
            if second is not None:
                second.stop()
    result = {
        "jobs": n, "namespaces": namespaces, "pods": total, "services": n,
        "complete": created_ok and running_ok and settled,
        "fill_s": round(fill_s, 1), "fill_seconds_per_job": round(fill_s / n, 4),
        # Per component: which parts of the cluster grow faster than the jobs (B8 against its reference burst).
        "fill_cpu_s": fill_cpu,
        "fill_cpu_ms_per_job": cpu_ms_per_job(fill_cpu, n),
        "reconcile_p99_ms": round(reconcile_p99 * 1000, 1),
        "rss_mb": round(rss / 1e6, 1), "hwm_mb": round(hwm / 1e6, 1),
        "rss_before_idle_mb": round(rss_before_idle / 1e6, 1),
        "rss_empty_mb": round(rss_empty / 1e6, 1),
        "rss_per_pod_kb": round((rss - rss_empty) / total / 1e3, 2),
        "idle_cpu_percent": round(idle_cpu * 100, 2), "idle_seconds": cfg.steady_idle,
        "idle_requests": {f"{v} {r}": c for (v, _, r, _s), c in idle_requests.items()},
        "restart_sync_s": round(sync_s, 2), "restart_first_pass_s": round(first_pass_s, 2),
        "restart_writes": restart_writes, "restart_writes_total": sum(restart_writes.values()),
        "restart_requests": restart_requests, "restart_apiserver_writes": api_writes,
        "restart_rss_mb": round(rss2 / 1e6, 1), "restart_hwm_mb": round(hwm2 / 1e6, 1),
    }
    write_result(f"{name}_steady", result)
    print(f"  {name.upper()} {total} pods / {n} jobs: RSS {result['rss_mb']} MB (HWM {result['hwm_mb']} MB; "
          f"{result['rss_empty_mb']} MB with no jobs, {result['rss_per_pod_kb']} kB per pod+job share), idle CPU "
          f"{result['idle_cpu_percent']} % over {cfg.steady_idle:.0f} s; restart: synced after "
          f"{result['restart_sync_s']} s, first pass done after {result['restart_first_pass_s']} s, writes "
          f"{result['restart_writes_total']:.0f} {restart_writes} (API server: {api_writes}); "
          f"restarted RSS {result['restart_rss_mb']} MB, HWM {result['restart_hwm_mb']} MB; reconcile p99 "
          f"{result['reconcile_p99_ms']} ms; fill CPU per job (ms) {result['fill_cpu_ms_per_job']}", flush=True)
    return result


# --- B5 -----------------------------------------------------------------------------------------------


def b5_api_calls(cfg: Config) -> dict[str, Any]:
    n = cfg.api_jobs
    exit_zero = {"sim.tensorflowjob.kubeflow.org/exit-code": "0", "sim.tensorflowjob.kubeflow.org/exit-after": "5s"}
    with fresh_cluster() as bench:
        ns = bench.create_namespace("bench")
        pods = bench.watch(PodRecorder(bench.kube, ns))
        jobs = bench.watch(JobRecorder(bench.kube, ns))
        with operator(bench, cfg, "b5-api-calls") as op:
            api_before, op_before = bench.apiserver_requests(), op.requests()
            submit_jobs(bench.kube, [tfjob(f"job-{i:04d}", ns, workers=3, chief=True, chief_annotations=exit_zero)
                                     for i in range(n)])
            succeeded = jobs.wait(lambda: len(jobs.times.succeeded) >= n, bounded(5 * n, base=120))

            def cleaned() -> bool:
                return not any(pods.times.phase.get(uid) in ("Pending", "Running") for uid in pods.times.live.values())

            clean = pods.wait(cleaned, 120)
            wait_until(op.queue_idle, 60)
            time.sleep(3)
            api_writes = writes(delta(api_before, bench.apiserver_requests()))
            op_writes = writes(delta(op_before, op.requests()))
    # Success is decided by the chief alone; the ps and the 3 workers run until cleaned up, so exactly
    # 4 pods per job are still active at success (cleanPodPolicy Running deletes them).
    not_succeeded = sum(1 for phase in pods.times.phase.values() if phase != "Succeeded")
    allowed = n * (5 + 1 + STATUS_WRITES_BUDGET) + not_succeeded
    total = sum(op_writes.values())
    events = sum(v for k, v in op_writes.items() if k.endswith(" events"))
    result = {
        "jobs": n, "pods_per_job": 5, "complete": succeeded and clean,
        "operator_writes": op_writes, "apiserver_writes": api_writes,
        "writes_per_job": round(total / n, 2), "writes_per_job_excl_events": round((total - events) / n, 2),
        "events_per_job": round(events / n, 2),
        "per_job": {k: round(v / n, 2) for k, v in op_writes.items()},
        "cleanup_deletes_allowed_per_job": round(not_succeeded / n, 2),
        "target_per_job": round(allowed / n, 2),
    }
    write_result("b5_api_calls", result)
    print(f"  B5 {n} jobs to success: {result['writes_per_job']} writes/job ({result['writes_per_job_excl_events']} "
          f"without {result['events_per_job']} events) vs target {result['target_per_job']}: {result['per_job']}; "
          f"API server saw {api_writes}", flush=True)
    return result


# --- the run ------------------------------------------------------------------------------------------


def summary(cfg: Config, results: dict[str, Any]) -> list[list[Any]]:
    rows: list[list[Any]] = []
    b0 = results.get("b0")
    if b0:
        best = b0["ceiling_objects_per_s"]
        for r in b0["rows"]:
            rows.append([f"B0 ceiling c={r['concurrency']}", "objects/s (raw client)", r["objects_per_s"],
                         "", "", "", "best" if r["objects_per_s"] == best else ""])
    for b in results.get("bursts", []):
        ideal = b.get("ideal") or {}
        rows.append([f"B1' burst N={b['n']}", "all pods+Services (s)", b["all_created_s"],
                     f"ideal {fmt(ideal.get('all_created_s'))} s", b.get("efficiency"), f"≥ {TARGET_EFFICIENCY}",
                     verdict(b.get("efficiency"), TARGET_EFFICIENCY, at_least=True)])
        rows.append([f"B1' burst N={b['n']}", "all jobs Running (s)", b["all_running_s"],
                     f"ideal pods {fmt(ideal.get('all_pods_running_s'))} s", b.get("running_vs_ideal"),
                     f"≤ {TARGET_RUNNING_VS_IDEAL}",
                     verdict(b.get("running_vs_ideal"), TARGET_RUNNING_VS_IDEAL)])
        rows.append([f"B1 burst N={b['n']}", "objects/s vs B0 ceiling", b["objects_per_s"],
                     fmt(b.get("ceiling_objects_per_s")), b.get("efficiency_vs_b0"), "", ""])
        rows.append([f"B1 burst N={b['n']}", "per-job created p50/p99 (s)",
                     f"{b['per_job_created_p50_s']}/{b['per_job_created_p99_s']}", "", "", "", ""])
        rows.append([f"B1 burst N={b['n']}", "per-job Running p50/p99 (s)",
                     f"{b['per_job_running_p50_s']}/{b['per_job_running_p99_s']}", "", "", "", ""])
    b2 = results.get("b2")
    if b2:
        rows.append([f"B2' wide {b2['workers']} workers", "all pods (s)", b2["operator_all_created_s"],
                     f"ideal {b2['ideal_all_created_s']} s", b2["efficiency"], f"≥ {TARGET_EFFICIENCY}",
                     verdict(b2["efficiency"], TARGET_EFFICIENCY, at_least=True)])
        rows.append([f"B2' wide {b2['workers']} workers", "job Running (s)", b2["operator_all_running_s"],
                     f"ideal pods {b2['ideal_all_pods_running_s']} s", b2["running_vs_ideal"],
                     f"≤ {TARGET_RUNNING_VS_IDEAL}", verdict(b2["running_vs_ideal"], TARGET_RUNNING_VS_IDEAL)])
        rows.append([f"B2 wide {b2['workers']} workers", "objects/s vs B0 ceiling", b2["operator_objects_per_s"],
                     fmt((results.get("b0") or {}).get("ceiling_objects_per_s")), b2.get("efficiency_vs_ceiling"),
                     "", ""])
    b3 = results.get("b3")
    if b3:
        rows.append([f"B3 recovery {b3['jobs']} jobs", "replacement p50 (ms)", b3["created_p50_ms"], "", "",
                     f"≤ {TARGET_RECOVERY_P50 * 1000:.0f}", verdict(b3["created_p50_ms"], TARGET_RECOVERY_P50 * 1000)])
        rows.append([f"B3 recovery {b3['jobs']} jobs", "replacement p99 (ms)", b3["created_p99_ms"], "", "",
                     f"≤ {TARGET_RECOVERY_P99 * 1000:.0f}", verdict(b3["created_p99_ms"], TARGET_RECOVERY_P99 * 1000)])
    b4 = results.get("b4")
    if b4:
        label = f"B4 steady {b4['pods']} pods"
        rows.append([label, "operator RSS (MB)", b4["rss_mb"], "", "", f"≤ {TARGET_RSS / 1e6:.0f}",
                     verdict(b4["rss_mb"], TARGET_RSS / 1e6)])
        rows.append([label, "idle CPU (% of a core)", b4["idle_cpu_percent"], "", "", "", ""])
        rows.append([label, "writes after restart", b4["restart_writes_total"], "", "", "0",
                     verdict(b4["restart_writes_total"], 0)])
        rows.append([label, "restart: caches synced (s)", b4["restart_sync_s"], "", "", f"≤ {TARGET_SYNC:.0f}",
                     verdict(b4["restart_sync_s"], TARGET_SYNC)])
    b8 = results.get("b8")
    if b8:
        label = f"B8 scale {b8['pods']} pods"
        rows.append([label, "operator RSS (MB)", b8["rss_mb"], "", "", "", ""])
        rows.append([label, "restart: caches synced (s)", b8["restart_sync_s"], "", "", "", ""])
        rows.append([label, "writes after restart", b8["restart_writes_total"], "", "", "0",
                     verdict(b8["restart_writes_total"], 0)])
        rows.append([label, "reconcile p99 (ms)", b8["reconcile_p99_ms"], "", "", "", ""])
        rows.append([label, "per-job time to Running (s)", b8["fill_seconds_per_job"],
                     f"N={b8.get('reference_n', '-')}: {fmt(b8.get('reference_seconds_per_job'), 4)} s",
                     b8.get("per_job_ratio"), f"≤ {TARGET_SCALING}", verdict(b8.get("per_job_ratio"), TARGET_SCALING)])
    b5 = results.get("b5")
    if b5:
        rows.append(["B5 API calls", "writes/job excl. events", b5["writes_per_job_excl_events"], "", "",
                     f"≤ {b5['target_per_job']}", verdict(b5["writes_per_job_excl_events"], b5["target_per_job"])])
        # Events are best-effort and outside the budget (as in every earlier run): shown, not judged.
        rows.append(["B5 API calls", "writes/job incl. events", b5["writes_per_job"], "", "", "", ""])
    b6 = results.get("b6")
    if b6:
        points = b6["points"]
        rows.append([f"B6 scaling N={points[0]['n']}..{points[-1]['n']}", "slope T_created (ms/job)",
                     round(b6["created_fit"]["slope_s_per_job"] * 1000, 1), "", "", "", ""])
        rows.append([f"B6 scaling N={points[0]['n']}..{points[-1]['n']}", "per-job time ratio (created)",
                     b6["per_job_ratio_created"], "", "", f"≤ {TARGET_SCALING}",
                     verdict(b6["per_job_ratio_created"], TARGET_SCALING)])
        rows.append([f"B6 scaling N={points[0]['n']}..{points[-1]['n']}", "per-job time ratio (Running)",
                     b6["per_job_ratio_running"], "", "", f"≤ {TARGET_SCALING}",
                     verdict(b6["per_job_ratio_running"], TARGET_SCALING)])
    return rows


def run(cfg: Config) -> tuple[dict[str, Any], list[str]]:
    results: dict[str, Any] = {}
    errors: list[str] = []

    def attempt(name: str, scenario: Callable[[], Any]) -> Any:
        print(f"--- {name.upper()} ---", flush=True)
        try:
            results[name] = scenario()
            return results[name]
        except Exception as error:
            errors.append(f"{name}: {error}")
            traceback.print_exc()
            return None

    needs_ceiling = {"b0", "b1", "b2", "b6"} & set(cfg.scenarios)
    ceiling = None
    if needs_ceiling and os.environ.get("TFJOB_BENCH_REUSE_CEILING") == "1" and (RESULTS / "b0_ceiling.json").exists():
        ceiling = json.loads((RESULTS / "b0_ceiling.json").read_text())  # experiments: skip B0's 2 minutes
        print(f"  reusing the B0 ceiling of an earlier run: {ceiling['ceiling_objects_per_s']} objects/s", flush=True)
    elif needs_ceiling:
        ceiling = attempt("b0", lambda: b0_ceiling(cfg))
    if {"b1", "b6"} & set(cfg.scenarios):
        sizes = cfg.burst_sizes if "b6" in cfg.scenarios else cfg.burst_sizes[:1] + cfg.burst_sizes[1:][-1:]
        bursts = [b for n in sizes if (b := attempt(f"b1_{n}", functools.partial(burst, cfg, n, ceiling))) is not None]
        results["bursts"] = bursts
        if "b6" in cfg.scenarios and len(bursts) >= 2:
            attempt("b6", lambda: b6_scaling(bursts))
    if "b2" in cfg.scenarios:
        attempt("b2", lambda: b2_wide(cfg, ceiling))
    if "b3" in cfg.scenarios:
        attempt("b3", lambda: b3_recovery(cfg))
    if "b4" in cfg.scenarios:
        attempt("b4", lambda: b4_steady(cfg))
    if "b5" in cfg.scenarios:
        attempt("b5", lambda: b5_api_calls(cfg))
    if "b8" in cfg.scenarios:
        attempt("b8", lambda: b8_scale(cfg))
    return results, errors


def main() -> int:
    cfg = Config.load(sys.argv[1:], dict(os.environ))
    info = machine()
    print(f"operator benchmarks ({'quick' if cfg.quick else 'full'} sizes): scenarios {', '.join(cfg.scenarios)}; "
          f"operator flags: {' '.join(cfg.operator_args)}; machine: {info['cpus']} cores, {info['memory_gib']} GiB, "
          f"load {info['loadavg']}", flush=True)
    started = time.monotonic()
    results, errors = run(cfg)
    rows = summary(cfg, results)
    header = ["scenario", "measure", "value", "baseline (same run)", "ratio", "target", "result"]
    print(f"\nSummary ({info['date']}, {info['cpus']} cores / {info['memory_gib']} GiB, operator "
          f"`{' '.join(cfg.operator_args)}`, {time.monotonic() - started:.0f} s):")
    print(markdown_table(header, rows))
    for error in errors:
        print(f"ERROR {error}")
    write_result("operator", {"config": {"quick": cfg.quick, "scenarios": cfg.scenarios,
                                         "operator_args": cfg.operator_args},
                              "summary": [dict(zip(header, map(str, row), strict=True)) for row in rows],
                              "errors": errors, "load_after": os.getloadavg(),
                              "results": {k: v for k, v in results.items() if k != "bursts"}})
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
