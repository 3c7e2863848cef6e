"""The burst machinery of the operator benchmarks: B0's ceiling, the fair ideal, B1'/B6 bursts, B2' wide job.

These scenarios share one shape: create many objects at once, watch them appear and run, and compare
the operator's times with a baseline measured in the same run, either the API server's own ceiling
(raw creates at several concurrencies, `raw_run`/`b0_ceiling`) or the fair ideal (`ideal_run`: the
same jobs and objects created by a perfect operator with the same budget). `burst` runs N jobs, and
`b6_scaling` fits the per-job time over the burst sizes; `b2_wide` is the burst of one 1 000-worker
job. bench/bench_operator.py (its docstring describes every scenario) runs them. Split out of
bench_operator.py when that file passed the project's 600-line limit; nothing here changed on the way.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from bench._harness import (
    CountRecorder,
    JobRecorder,
    PodRecorder,
    jobs_path,
    submit_jobs,
    tfjob,
    write_result,
)
from bench._measure import (
    delta,
    fit_line,
    fmt,
    percentile,
    writes,
)
from bench._operator_common import (
    SUBMIT_THREADS,
    Config,
    bounded,
    cpu_ms_per_job,
    create_raw,
    fresh_cluster,
    job_objects,
    last,
    operator,
    reconcile_stats,
    wait_all,
)
from controller.options import create_parallelism
from kube import resource_path

# --- B0 -----------------------------------------------------------------------------------------------


def raw_run(bodies: list[dict[str, Any]], concurrency: int) -> dict[str, Any]:
    """In a fresh cluster: create the jobs (owners only, no operator), then their Services and Pods
    with the raw client at `concurrency`; times until the watch saw them all and until all Running."""
    with fresh_cluster(pool_size=max(96, concurrency + 8)) as bench:
        ns = bench.create_namespace("bench")
        for body in bodies:
            body["metadata"]["namespace"] = ns
        _, created = submit_jobs(bench.kube, bodies)
        objects = [o for job in created for o in job_objects(job)]
        n_pods = sum(1 for plural, _ in objects if plural == "pods")
        n_services = len(objects) - n_pods
        pods = bench.watch(PodRecorder(bench.kube, ns))
        services = bench.watch(CountRecorder(bench.kube, resource_path("", "v1", "services", ns)))
        meter = bench.cpu_meter().start()
        start = time.monotonic()
        latencies = create_raw(bench.kube, ns, objects, concurrency)
        requests_done = time.monotonic() - start
        created_ok = wait_all(pods, services, n_pods, n_services, bounded(len(objects)))
        seen = max(last(pods.times.first_seen.values()), last(services.first_seen.values())) - start
        running_ok = pods.wait(lambda: len(pods.times.running) >= n_pods, bounded(n_pods))
        all_running = last(pods.times.running.values()) - start
        cpu = meter.stop()
    return {
        "concurrency": concurrency, "objects": len(objects), "pods": n_pods, "services": n_services,
        "requests_s": round(requests_done, 2), "all_seen_s": round(seen, 2),
        "objects_per_s": round(len(objects) / seen, 1), "requests_per_s": round(len(objects) / requests_done, 1),
        "create_p50_ms": round(percentile(latencies, 50) * 1000, 1),
        "create_p99_ms": round(percentile(latencies, 99) * 1000, 1),
        "all_running_s": round(all_running, 2), "pods_running_per_s": round(n_pods / all_running, 1),
        "complete": created_ok and running_ok, "cpu_s": cpu, "load": os.getloadavg()[0],
    }


def ideal_run(bodies: list[dict[str, Any]], create_threads: int,
              submit_threads: int = SUBMIT_THREADS) -> dict[str, Any]:
    """The fair ideal (B1'/B2'): what a perfect operator with the same budget would achieve.

    In a fresh cluster and inside one timed window, exactly as in the operator's run: submit the same
    TensorFlowJobs (`submit_threads` at a time) and, as soon as each job is accepted, create exactly
    the Service and Pods the operator would create for it (the same builders, owner references to the
    accepted job) with `create_threads` threads, the create parallelism the operator's defaults allow.
    No status, no events, no watches of its own, no reconcile: the difference from the operator's run
    is only the operator's own overhead. End points: every Pod and Service seen by the watch; every
    Pod Running."""
    with fresh_cluster(pool_size=max(96, create_threads + submit_threads + 8)) as bench:
        ns = bench.create_namespace("bench")
        for body in bodies:
            body["metadata"]["namespace"] = ns
        expected = [plural for body in bodies for plural, _ in job_objects(
            {**body, "metadata": {**body["metadata"], "uid": "counting"}})]
        n_pods = expected.count("pods")
        n_services = expected.count("services")
        pods = bench.watch(PodRecorder(bench.kube, ns))
        services = bench.watch(CountRecorder(bench.kube, resource_path("", "v1", "services", ns)))
        meter = bench.cpu_meter().start()
        creates: list[Future[Any]] = []
        with ThreadPoolExecutor(max_workers=create_threads) as creator:

            def submit(body: dict[str, Any]) -> float:
                submitted_at = time.monotonic()
                accepted = bench.kube.create(jobs_path(ns), body)
                creates.extend(creator.submit(bench.kube.create, resource_path("", "v1", plural, ns), obj)
                               for plural, obj in job_objects(accepted))
                return submitted_at

            with ThreadPoolExecutor(max_workers=submit_threads) as submitter:
                start = min(submitter.map(submit, bodies))
            for create in list(creates):
                create.result()
        created_ok = wait_all(pods, services, n_pods, n_services, bounded(len(expected)))
        created = max(last(pods.times.first_seen.values()), last(services.first_seen.values())) - start
        running_ok = pods.wait(lambda: len(pods.times.running) >= n_pods, bounded(n_pods))
        running = last(pods.times.running.values()) - start
        cpu = meter.stop()
    return {
        "jobs": len(bodies), "pods": n_pods, "services": n_services, "create_threads": create_threads,
        "all_created_s": round(created, 2), "all_pods_running_s": round(running, 2),
        "objects_per_s": round(len(expected) / created, 1), "complete": created_ok and running_ok, "cpu_s": cpu,
    }


def create_threads(cfg: Config) -> int:
    """The create parallelism the operator runs with under `cfg.operator_args` (its default: 32 workers)."""
    workers = 32
    for flag, value in zip(cfg.operator_args, cfg.operator_args[1:], strict=False):
        if flag == "--workers":
            workers = int(value)
    return create_parallelism(workers)


def b0_ceiling(cfg: Config) -> dict[str, Any]:
    rows = []
    for concurrency in cfg.concurrency:
        row = raw_run([tfjob(f"job-{i:04d}", "", workers=4) for i in range(cfg.ceiling_jobs)], concurrency)
        rows.append(row)
        print(f"  B0 c={concurrency:<3} {row['objects']} objects in {row['all_seen_s']:.2f} s = "
              f"{row['objects_per_s']:.0f} objects/s (create p50 {row['create_p50_ms']} ms, "
              f"p99 {row['create_p99_ms']} ms); all Running after {row['all_running_s']:.1f} s; "
              f"cpu {row['cpu_s']}", flush=True)
    best = max(rows, key=lambda r: r["objects_per_s"])
    result = {"rows": rows, "ceiling_objects_per_s": best["objects_per_s"], "best_concurrency": best["concurrency"],
              "running_pods_per_s": max(r["pods_running_per_s"] for r in rows)}
    write_result("b0_ceiling", result)
    return result


# --- B1 / B6 ------------------------------------------------------------------------------------------


def burst(cfg: Config, n: int, ceiling: dict[str, Any] | None, *, label: str = "b1",
          shape: dict[str, Any] | None = None, paired: bool | None = None) -> dict[str, Any]:
    """N jobs submitted at once into a fresh cluster (`shape`: CLUSTER_SHAPE unless given), preceded
    by the fair ideal for the same N when `paired` (default: the config's)."""
    ideal = None
    if cfg.paired if paired is None else paired:
        # The fair ideal right before the operator's run: this box is shared, so baselines drift.
        ideal = ideal_run([tfjob(f"job-{i:04d}", "", workers=4) for i in range(n)], create_threads(cfg))
        print(f"  B1' N={n:<5} ideal ({ideal['create_threads']} create threads): all objects after "
              f"{ideal['all_created_s']:.2f} s, all pods Running after {ideal['all_pods_running_s']:.2f} s",
              flush=True)
    with fresh_cluster(shape=shape) as bench:
        ns = bench.create_namespace("bench")
        pods = bench.watch(PodRecorder(bench.kube, ns))
        services = bench.watch(CountRecorder(bench.kube, resource_path("", "v1", "services", ns)))
        jobs = bench.watch(JobRecorder(bench.kube, ns))
        with operator(bench, cfg, f"{label}-burst-{n}") as op:
            api_before, op_before = bench.apiserver_requests(), op.requests()
            meter = bench.cpu_meter(op).start()
            bodies = [tfjob(f"job-{i:04d}", ns, workers=4) for i in range(n)]
            submitted, _ = submit_jobs(bench.kube, bodies)
            start = min(submitted.values())
            created_ok = wait_all(pods, services, 5 * n, n, bounded(6 * n))
            created = max(last(pods.times.first_seen.values()), last(services.first_seen.values())) - start
            running_ok = jobs.wait(lambda: len(jobs.times.running) >= n, bounded(5 * n))
            running = last(jobs.times.running.values()) - start
            # The job's Running condition follows its last pod Running; the gap is the operator's.
            pods_running = last(pods.times.running.values()) - start
            cpu = meter.stop()
            rss, hwm = op.rss(), op.hwm()
            sockets = op.open_sockets()
            api_delta = delta(api_before, bench.apiserver_requests())
            api_writes = writes(api_delta)
            # Everyone's writes (bindings, KWOK's pod status, the endpoint controllers): what the burst
            # cost the API server beyond the operator's own requests.
            cluster_writes = writes(api_delta, operator_only=False)
            op_writes = writes(delta(op_before, op.requests()))
            reconciles = reconcile_stats(op.metrics())
    per_job_created = []
    for name, t_submit in submitted.items():
        times = [t for pod, t in pods.times.first_seen.items() if pods.times.job_of.get(pod) == name]
        if len(times) == 5:
            per_job_created.append(max(times) - t_submit)
    per_job_running = [jobs.times.running[name] - t for name, t in submitted.items() if name in jobs.times.running]
    objects_per_s = 6 * n / created
    result = {
        "n": n, "pods": 5 * n, "services": n, "complete": created_ok and running_ok,
        "all_created_s": round(created, 2), "all_running_s": round(running, 2),
        "all_pods_running_s": round(pods_running, 2), "objects_per_s": round(objects_per_s, 1),
        "per_job_created_p50_s": round(percentile(per_job_created, 50), 3),
        "per_job_created_p99_s": round(percentile(per_job_created, 99), 3),
        "per_job_running_p50_s": round(percentile(per_job_running, 50), 3),
        "per_job_running_p99_s": round(percentile(per_job_running, 99), 3),
        "seconds_per_job_created": round(created / n, 4), "seconds_per_job_running": round(running / n, 4),
        "operator_cpu_s": cpu.get("operator"),
        "operator_cpu_ms_per_pod": round(1000 * cpu.get("operator", 0) / (5 * n), 2),
        "operator_rss_mb": round(rss / 1e6, 1), "operator_hwm_mb": round(hwm / 1e6, 1),
        "operator_open_sockets": sockets, "cpu_s": cpu, "operator_writes": op_writes, "apiserver_writes": api_writes,
        "cluster_writes": cluster_writes,
        "operator_cpu_ms_per_job": cpu_ms_per_job(cpu, n).get("operator", 0.0),
        "reconciles_per_job": round(reconciles["count"] / n, 1),
        "reconcile_ms_mean": round(1000 * reconciles["sum"] / max(reconciles["count"], 1), 1),
    }
    if ceiling:  # for reference: the API server's raw rate for owners that already exist
        result["ceiling_objects_per_s"] = ceiling["ceiling_objects_per_s"]
        result["efficiency_vs_b0"] = round(objects_per_s / ceiling["ceiling_objects_per_s"], 3)
    if ideal:
        result["ideal"] = ideal
        result["efficiency"] = round(ideal["all_created_s"] / created, 3)
        result["running_vs_ideal"] = round(running / ideal["all_pods_running_s"], 3)
    write_result(f"{label}_burst_{n}", result)
    print(f"  {label.upper()} N={n:<5} all {6 * n} objects after {result['all_created_s']:.2f} s "
          f"({result['objects_per_s']:.0f}/s, vs the ideal {fmt(result.get('efficiency'))}); all Running after "
          f"{result['all_running_s']:.2f} s (x{fmt(result.get('running_vs_ideal'))} the ideal's pods; its own pods "
          f"all Running {result['all_pods_running_s']:.2f} s); "
          f"per-job created p50/p99 {result['per_job_created_p50_s']}/"
          f"{result['per_job_created_p99_s']} s, Running p50/p99 {result['per_job_running_p50_s']}/"
          f"{result['per_job_running_p99_s']} s; operator cpu {result['operator_cpu_s']} s, RSS "
          f"{result['operator_rss_mb']} MB, {result['operator_cpu_ms_per_job']} ms CPU/job, "
          f"{result['reconciles_per_job']} reconciles/job, {sockets} sockets open; writes {op_writes}", flush=True)
    return result


def b6_scaling(bursts: list[dict[str, Any]]) -> dict[str, Any]:
    ns = [b["n"] for b in bursts]
    created = [b["all_created_s"] for b in bursts]
    running = [b["all_running_s"] for b in bursts]
    a_c, b_c = fit_line(ns, created)
    a_r, b_r = fit_line(ns, running)
    small, large = bursts[0], bursts[-1]
    ratio_c = large["seconds_per_job_created"] / small["seconds_per_job_created"]
    ratio_r = large["seconds_per_job_running"] / small["seconds_per_job_running"]
    result = {
        "points": [{k: b[k] for k in ("n", "all_created_s", "all_running_s", "seconds_per_job_created",
                                      "seconds_per_job_running", "per_job_running_p99_s")} for b in bursts],
        "created_fit": {"intercept_s": round(a_c, 3), "slope_s_per_job": round(b_c, 4)},
        "running_fit": {"intercept_s": round(a_r, 3), "slope_s_per_job": round(b_r, 4)},
        "per_job_ratio_created": round(ratio_c, 3), "per_job_ratio_running": round(ratio_r, 3),
    }
    write_result("b6_scaling", result)
    print(f"  B6 T_created(N) = {a_c:.2f} s + {b_c * 1000:.1f} ms·N; T_running(N) = {a_r:.2f} s + "
          f"{b_r * 1000:.1f} ms·N; per-job time N={large['n']} vs N={small['n']}: created x{ratio_c:.2f}, "
          f"Running x{ratio_r:.2f}", flush=True)
    return result


# --- B2 -----------------------------------------------------------------------------------------------


def b2_wide(cfg: Config, ceiling: dict[str, Any] | None) -> dict[str, Any]:
    workers = cfg.wide_workers
    ideal = ideal_run([tfjob("wide", "", workers=workers, ps=0)], create_threads(cfg))
    raw_ok, raw_created, raw_running = ideal["complete"], ideal["all_created_s"], ideal["all_pods_running_s"]
    with fresh_cluster() as bench:
        ns = bench.create_namespace("bench")
        pods = bench.watch(PodRecorder(bench.kube, ns))
        jobs = bench.watch(JobRecorder(bench.kube, ns))
        with operator(bench, cfg, "b2-wide") as op:
            api_before = bench.apiserver_requests()
            meter = bench.cpu_meter(op).start()
            submitted, _ = submit_jobs(bench.kube, [tfjob("wide", ns, workers=workers, ps=0)])
            start = submitted["wide"]
            ok = pods.wait(lambda: len(pods.times.first_seen) >= workers, bounded(workers, per_item=1.0))
            created = last(pods.times.first_seen.values()) - start
            running_ok = jobs.wait(lambda: "wide" in jobs.times.running, bounded(workers, per_item=0.5))
            running = jobs.times.running.get("wide", float("nan")) - start
            pods_running = (last(pods.times.running.values()) - start) if pods.times.running else float("nan")
            cpu = meter.stop()
            rss, hwm = op.rss(), op.hwm()
            api_writes = writes(delta(api_before, bench.apiserver_requests()))
    result = {
        "workers": workers, "complete": raw_ok and ok and running_ok, "ideal": ideal,
        "ideal_all_created_s": raw_created, "ideal_all_pods_running_s": raw_running,
        "operator_all_created_s": round(created, 2), "operator_all_running_s": round(running, 2),
        # The job's Running condition needs every pod Running: the difference is the operator's lag.
        "operator_pods_all_running_s": round(pods_running, 2),
        "efficiency": round(raw_created / created, 3),
        "running_vs_ideal": round(running / raw_running, 3),
        "operator_objects_per_s": round((workers + 1) / created, 1),
        "operator_cpu_s": cpu.get("operator"), "operator_rss_mb": round(rss / 1e6, 1),
        "operator_hwm_mb": round(hwm / 1e6, 1), "cpu_s": cpu, "apiserver_writes": api_writes,
    }
    if ceiling:
        result["efficiency_vs_ceiling"] = round(result["operator_objects_per_s"] / ceiling["ceiling_objects_per_s"], 3)
    write_result("b2_wide", result)
    print(f"  B2' {workers} workers: operator all pods after {created:.2f} s (the ideal: "
          f"{raw_created:.2f} s → {result['efficiency']}; vs B0 ceiling "
          f"{fmt(result.get('efficiency_vs_ceiling'))}); job Running after {running:.2f} s (its pods all Running "
          f"{pods_running:.2f} s; the ideal's pods all Running "
          f"{raw_running:.2f} s → x{result['running_vs_ideal']}); operator cpu {cpu.get('operator')} s, "
          f"HWM {result['operator_hwm_mb']} MB",
          flush=True)
    return result
