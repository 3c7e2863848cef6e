"""`tfjob-operator run`: assemble the controller from flags and run it until a signal.

Order matters: logging first; the API client (kubeconfig or in-cluster, chosen explicitly);
metrics and health endpoints (so /readyz can say "not ready" while caches fill); the informers;
then the workers once caches have synced. SIGTERM and SIGINT stop everything cleanly.
"""

from __future__ import annotations

import argparse
import signal
import threading
from types import FrameType

import structlog
from prometheus_client import start_http_server

from controller import logs
from controller.controller import Controller
from controller.events import EventRecorder
from controller.health import HealthServer, parse_address
from controller.kube import ConfigError, Kube, resource_path
from controller.metrics import ControllerMetrics
from workqueue.metrics import PrometheusMetricsProvider

log = structlog.get_logger(__name__)


def run(args: argparse.Namespace) -> int:
    logs.configure(args.log_format, args.log_level)
    metrics = ControllerMetrics()
    try:
        kube = Kube.load(args.kubeconfig, context=args.context, pool_size=max(16, args.workers * 4 + 8),
                         qps=args.qps, burst=args.burst, on_request=metrics.on_request)
    except ConfigError as error:
        log.error("no usable Kubernetes credentials", error=str(error))
        return 2
    recorder = EventRecorder(lambda ns, body: kube.create(resource_path("", "v1", "events", ns), body))
    controller = Controller(
        kube, namespaces=args.namespace, workers=args.workers, cluster_domain=args.cluster_domain,
        resync_period=args.resync, watch_nodes=not args.namespace, metrics=metrics,
        queue_metrics=PrometheusMetricsProvider(registry=metrics.registry), recorder=recorder,
    )
    stop = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("signal received; stopping", signal=signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    metrics_address = parse_address(args.metrics_addr)
    if metrics_address is not None:
        start_http_server(metrics_address[1], addr=metrics_address[0], registry=metrics.registry)
    health_address = parse_address(args.health_addr)
    health = HealthServer(health_address, controller.caches_synced) if health_address else None
    if health is not None:
        health.start()

    recorder.start()
    log.info("starting", namespaces=args.namespace or "all", workers=args.workers, server=kube.host)
    controller.start_informers()
    while not stop.is_set() and not controller.wait_for_sync(timeout=1.0):
        pass
    if not stop.is_set():
        log.info("caches synced; starting workers")
        controller.start_workers()
        stop.wait()
    controller.stop()
    recorder.stop()
    if health is not None:
        health.stop()
    kube.close()
    log.info("stopped")
    return 0
