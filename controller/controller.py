"""The control loop: informers → rate-limited work queue → worker threads → reconciler.

Shaped like client-go's sample-controller, and cut by reason to change into five pieces that
`Controller` assembles from one `ControllerOptions` (`controller.options`, production's defaults):

* the read side, `controller.caches.JobCaches`: which informers run and the lookups made in their
  caches; the `Reconciler` reads the cluster only through it;
* the event handlers, `controller.handlers.JobEventHandlers`: an event becomes a job key on the
  queue (owner mapping, batching), nothing more;
* the reconciler, `controller.reconciler.Reconciler`: one job's plan carried out, the only writer;
* the progress poller, `controller.progress.poller.ProgressPoller`: reads the progress of jobs with
  `spec.progress` on its own thread and enqueues those whose status should change (leader only);
* and this module, the loop itself: the queue, the worker threads, start and stop.

N worker threads `get` keys, reconcile, and `forget` on success or `add_rate_limited` on failure
(no sooner than a Retry-After the API server asked for); a catch-all per item keeps a bug from
killing a worker. A plan's `requeue_after` (deadlines, TTLs, the force-delete bound) becomes
`add_after`, so timers fire on time without relying on a periodic resync -- which exists only as a
safety net. Leader election stays outside (`controller.process.app`): every replica runs its
informers, and only the leader calls `start_workers`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import structlog

from controller.caches import JobCaches
from controller.events import EventRecorder
from controller.handlers import JobEventHandlers
from controller.kueue.gate import decide_tfjobs
from controller.kueue.multikueue import MultiKueueGate
from controller.memory import JobMemory
from controller.metrics import ControllerMetrics
from controller.options import DEFAULTS, ControllerOptions
from controller.owned import OwnedType
from controller.progress.book import ProgressBook
from controller.progress.poller import MAX_ANSWER_BYTES, READ_DEADLINE, ProgressPoller
from controller.reconciler import Reconciler, RequeueError
from kube import ApiError, Kube
from kube.clock import REAL_CLOCK, Clock
from workqueue import RateLimitingQueue, default_controller_rate_limiter
from workqueue.metrics import PrometheusMetricsProvider

log = structlog.get_logger(__name__)


class Controller:
    """One controller: its caches, memory, queue, handlers and reconciler, and the workers that run
    them. With `auto` options it asks the API server which APIs are served, so building one raises
    ApiError when the server cannot be reached. `owned` are the object types its jobs own
    (`controller.owned`; by default those `options` call for, the Kueue Workload when Kueue is used)."""

    def __init__(
        self,
        kube: Kube,
        options: ControllerOptions = DEFAULTS,
        *,
        metrics: ControllerMetrics | None = None,
        recorder: EventRecorder | None = None,
        clock: Clock = REAL_CLOCK,
        owned: Sequence[OwnedType] | None = None,
    ) -> None:
        self.options = options
        self.metrics = metrics
        self.memory = JobMemory(clock, ProgressBook(clock, metrics))
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(
            default_controller_rate_limiter(clock=clock), name="tensorflowjobs", clock=clock,
            metrics_provider=PrometheusMetricsProvider(registry=metrics.registry) if metrics else None)
        on_relist = (lambda name: metrics.informer_relists.labels(name.split("[")[0]).inc()) if metrics else None
        self.caches = JobCaches(kube, options, clock=clock, on_relist=on_relist, owned=owned)
        gate = (MultiKueueGate(kube, self.caches.workload_of, self.caches.flavor, clock, self.caches.workload_named,
                               queues_tfjobs=decide_tfjobs(kube, options.kueue_tfjob))
                if self.caches.workloads is not None else None)
        self.reconciler = Reconciler(kube, self.caches, options, memory=self.memory, recorder=recorder,
                                     metrics=metrics, clock=clock, kueue_gate=gate,
                                     owned_cache=self.caches.owned_cache, owned=self.caches.owned)
        self.handlers = JobEventHandlers(self.caches, self.queue, self.memory, options.pod_batch_period,
                                         options.first_status_wait)
        self.handlers.wire()
        # Reads the progress of jobs with spec.progress through the API server's pod proxy (none: idle).
        self.progress_poller = ProgressPoller(
            self.memory.progress, lambda target: kube.request("GET", target.proxy_path, timeout=READ_DEADLINE,
                                                          max_bytes=MAX_ANSWER_BYTES, deadline=READ_DEADLINE),
            self.queue.add, clock=clock,
            on_read=(lambda result: metrics.progress_reads.labels(result).inc()) if metrics else None)
        self._threads: list[threading.Thread] = []
        if metrics is not None:  # show every informer's relist count from the start, zeros included
            for informer in self.caches.informers():
                metrics.informer_relists.labels(informer.name)

    # ---- running -------------------------------------------------------------------------------

    def start_informers(self) -> None:
        self.caches.start()

    def caches_synced(self) -> bool:
        return self.caches.synced()

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        return self.caches.wait_for_sync(timeout)

    def start_workers(self) -> None:
        self.progress_poller.start()
        for number in range(self.options.workers):
            thread = threading.Thread(target=self._worker, name=f"worker-{number}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def start(self, sync_timeout: float | None = None) -> bool:
        """Start informers, wait for their first lists, then start the workers."""
        self.start_informers()
        if not self.wait_for_sync(sync_timeout):
            return False
        self.start_workers()
        return True

    def stop(self, timeout: float = 30.0) -> None:
        self.progress_poller.stop()
        self.queue.shut_down()
        for thread in self._threads:
            thread.join(timeout)
        self.caches.stop(timeout)
        self.reconciler.close()

    # ---- one worker ----------------------------------------------------------------------------

    def _worker(self) -> None:
        while True:
            key, shutdown = self.queue.get()
            if shutdown:
                return
            assert key is not None  # the queue hands out None only with shutdown
            try:
                self.process(key)
            finally:
                self.queue.done(key)

    def process(self, key: str) -> None:
        """Reconcile one key as a worker does, and requeue it as the outcome says: after the plan's
        `requeue_after`, or rate-limited (no sooner than a Retry-After) when it did not complete."""
        started = time.monotonic()
        result = "success"
        outcome = None
        try:
            outcome = self.reconciler.reconcile(key)
            self.queue.forget(key)
            if outcome.requeue_after is not None:
                self.queue.add_after(key, outcome.requeue_after)
        except (RequeueError, ApiError) as error:
            result = "requeue" if isinstance(error, RequeueError) else "error"
            log.warning("reconcile incomplete; retrying with back-off", job=key, error=str(error),
                        retries=self.queue.num_requeues(key), retry_after=error.retry_after)
            self.queue.add_rate_limited(key, min_delay=error.retry_after or 0.0)
        except Exception:  # a bug must never kill a worker
            result = "error"
            log.exception("reconcile crashed; retrying with back-off", job=key)
            self.queue.add_rate_limited(key)
        finally:
            seconds = time.monotonic() - started
            if self.metrics is not None:
                self.metrics.reconcile_duration.labels(result).observe(seconds)
            if outcome is not None and (outcome.created or outcome.deleted or outcome.updated
                                        or outcome.status_written or outcome.job_deleted):
                log.info("reconciled", job=key, duration_ms=round(seconds * 1000, 1), created=len(outcome.created),
                         deleted=len(outcome.deleted), updated=len(outcome.updated),
                         status_written=outcome.status_written,
                         status_deferred=outcome.status_deferred,
                         job_deleted=outcome.job_deleted, requeue_after=outcome.requeue_after)
            elif outcome is not None:
                log.debug("reconciled", job=key, duration_ms=round(seconds * 1000, 1), actions=0)
