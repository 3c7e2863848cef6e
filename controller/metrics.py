"""The operator's Prometheus metrics (docs/design.md §6), in one registry the HTTP server exposes.

Kept separate from the reconcile logic: the reconciler calls a few plain methods and never needs
prometheus_client itself, so tests can pass `ControllerMetrics(CollectorRegistry())` and read back.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector


class ControllerMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        # process_cpu_seconds_total, process_resident_memory_bytes, ...: the dashboard's process panels.
        ProcessCollector(registry=r)
        self.jobs_created = Counter("tfjob_jobs_created_total", "TensorFlowJobs seen for the first time", registry=r)
        self.jobs_succeeded = Counter("tfjob_jobs_succeeded_total", "TensorFlowJobs that succeeded", registry=r)
        self.jobs_failed = Counter("tfjob_jobs_failed_total", "TensorFlowJobs that failed", ["reason"], registry=r)
        self.jobs_restarted = Counter("tfjob_jobs_restarted_total", "Times a job entered Restarting", ["reason"],
                                      registry=r)
        self.pods_created = Counter("tfjob_pods_created_total", "Pods created by the operator", registry=r)
        self.pods_deleted = Counter("tfjob_pods_deleted_total", "Pods deleted by the operator", ["reason"], registry=r)
        self.reconcile_duration = Histogram(
            "tfjob_reconcile_duration_seconds", "Time to reconcile one job", ["result"], registry=r,
            buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
        )
        self.api_requests = Counter("tfjob_api_requests_total", "Kubernetes API requests",
                                    ["verb", "resource", "code"], registry=r)
        self.api_latency = Histogram("tfjob_api_request_duration_seconds", "Kubernetes API request latency",
                                     ["verb", "resource"], registry=r)
        self.informer_relists = Counter("tfjob_informer_relists_total", "Informer relists (full LIST)",
                                        ["resource"], registry=r)
        self.leader = Gauge("tfjob_leader", "1 while this process holds the leader lease", registry=r)
        # Training progress (spec.progress): series per reporting job, removed when the job is deleted,
        # so the label sets are bounded by the live reporting jobs (and 8 metrics each).
        job_labels = ["namespace", "job"]
        self.progress_ratio = Gauge("tfjob_job_progress_ratio", "Fraction of the training done (0..1)", job_labels,
                                    registry=r)
        self.progress_step = Gauge("tfjob_job_progress_step", "Training steps completed", job_labels, registry=r)
        self.progress_epoch = Gauge("tfjob_job_progress_epoch", "Training epochs completed", job_labels, registry=r)
        self.progress_remaining = Gauge("tfjob_job_progress_remaining_seconds",
                                        "Estimated seconds to the end at the recent rate", job_labels, registry=r)
        self.progress_metric = Gauge("tfjob_job_progress_metric", "A training metric the trainer reported",
                                     [*job_labels, "metric"], registry=r)
        self.progress_reads = Counter("tfjob_progress_reads_total", "Reads of reporting jobs' progress", ["result"],
                                      registry=r)
        self._progress_series: dict[tuple[str, str], set[tuple[Gauge, tuple[str, ...]]]] = {}
        self._progress_lock = threading.Lock()

    def on_request(self, verb: str, resource: str, code: int, seconds: float) -> None:
        self.api_requests.labels(verb, resource or "-", str(code)).inc()
        self.api_latency.labels(verb, resource or "-").observe(seconds)

    def on_state_change(self, state: str, reason: str) -> None:
        if state == "Succeeded":
            self.jobs_succeeded.inc()
        elif state == "Failed":
            self.jobs_failed.labels(reason).inc()
        elif state == "Restarting":
            self.jobs_restarted.labels(reason).inc()

    def set_progress(self, namespace: str, job: str, report: Mapping[str, Any], fraction: float | None,
                     remaining: float | None) -> None:
        """The job's latest report; a value it no longer reports loses its series."""
        values: dict[tuple[Gauge, tuple[str, ...]], float] = {}
        for gauge, value in ((self.progress_ratio, fraction), (self.progress_step, report.get("step")),
                             (self.progress_epoch, report.get("epoch")), (self.progress_remaining, remaining)):
            if value is not None:
                values[(gauge, (namespace, job))] = float(value)
        for name, value in (report.get("metrics") or {}).items():
            values[(self.progress_metric, (namespace, job, name))] = float("nan") if value is None else float(value)
        with self._progress_lock:
            for gauge, labels in self._progress_series.get((namespace, job), set()) - set(values):
                gauge.remove(*labels)
            self._progress_series[(namespace, job)] = set(values)
            for (gauge, labels), value in values.items():
                gauge.labels(*labels).set(value)

    def forget_progress(self, namespace: str, job: str) -> None:
        """The job is gone: its series go too."""
        with self._progress_lock:
            for gauge, labels in self._progress_series.pop((namespace, job), set()):
                gauge.remove(*labels)
