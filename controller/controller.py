"""The TensorFlowJob controller: informers → rate-limited work queue → workers → reconciler.

Shaped like client-go's sample-controller. Informer handlers only map an event to a job key and
enqueue it (a Pod or Service maps to its controlling TensorFlowJob, checked by kind *and* UID, so
a leftover pod of a deleted job with the same name never wakes the new one). Pod additions and
routine pod updates are batched per job for `POD_BATCH_PERIOD` (client-go's Job controller does the
same), updates that change nothing the pod cache keeps (or only bind the pod) are dropped, as is
the echo of our own status write; deletions, failures and disruptions go straight in, so repairs
stay immediate. N worker threads
`get` keys, reconcile, and `forget` on success or `add_rate_limited` on failure; a catch-all per
item keeps a bug from killing a worker. A plan's `requeue_after` (deadlines, TTLs, the force-delete
bound) becomes `add_after`, so timers fire on time without relying on a periodic resync — which
exists only as a safety net. With `network_policies=True` (what `tfjob-operator run` uses) the jobs'
NetworkPolicies are watched too (selected by the job-name label, like pods and Services), so one
deleted or edited by hand is put back at once; without it they are not managed at all.

With `serve_tfjobs`, Kubeflow's TFJobs are watched too, and queued under keys that carry their kind
(`TFJob:namespace/name`, `controller.job.kinds`); a pod or Service maps to its controlling job by
the owner reference's kind and UID, so one reconciler serves both kinds. TFJobs another controller
runs (`runPolicy.managedBy`, `controller.job.kubeflow.ownership`) are never queued.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

import structlog

from api import kubeflow, podstate
from api.names import GROUP, JOB_NAME_LABEL, PLURAL, VERSION
from controller.events import EventRecorder
from controller.job import podcache
from controller.job.kinds import TENSORFLOWJOB, TFJOB, kind_of_owner, parse_key
from controller.job.kubeflow import ownership
from controller.job.profiles import Profile
from controller.kueue import protocol as kueue
from controller.kueue.gate import KueueGate
from controller.memory import JobMemory
from controller.metrics import ControllerMetrics
from controller.reconciler import Reconciler, RequeueError
from informers.factory import InformerFactory
from informers.informer import SharedInformer
from informers.store import CONTROLLER_UID_INDEX, Store, controller_of, default_indexers, object_key, slim_and_share
from kube import ApiError, Kube
from kube.clock import REAL_CLOCK, Clock
from workqueue import RateLimitingQueue, default_controller_rate_limiter
from workqueue.metrics import MetricsProvider

log = structlog.get_logger(__name__)

NODE_INDEX = "node"


def create_parallelism(workers: int) -> int:
    """Threads (and connections) for pod creates and deletes, shared by all workers: a wide job's
    slow-start batches reach 64 in flight, the API server's best concurrency in benchmark B0."""
    return max(16, workers * 2)


# How long pod additions and routine pod updates wait, so one reconcile sees a job's pods together
# (client-go's Job controller waits 1 s; half of that keeps "all Running" prompt).
POD_BATCH_PERIOD = 0.5


def _index_by_node(obj: Mapping[str, Any]) -> list[str]:
    node = (obj.get("spec") or {}).get("nodeName")
    return [node] if node else []


def tfjob_crd_is_ours(kube: Kube) -> bool:
    """Whether TFJobs are served by this project's CRD (the one that lists the `tfjob-operator`
    category): what `--kubeflow-tfjob=auto` turns TFJobs on for. Kubeflow's own TFJob CRD means
    Kubeflow's operator runs them (and that CRD would drop the status fields this operator keeps)."""
    if not kube.has_api(kubeflow.GROUP, kubeflow.VERSION, kubeflow.KIND):
        return False
    try:
        listing = kube.get(f"/apis/{kubeflow.GROUP}/{kubeflow.VERSION}")
    except ApiError:
        return False
    resources = listing.get("resources") if isinstance(listing, Mapping) else None
    return any(isinstance(r, Mapping) and r.get("name") == kubeflow.PLURAL
               and kubeflow.OPERATOR_CATEGORY in (r.get("categories") or []) for r in resources or [])


def _node_is_ready(node: Mapping[str, Any]) -> bool:
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return condition.get("status") == "True"
    return False


class Controller:
    def __init__(
        self,
        kube: Kube,
        *,
        namespaces: Sequence[str] = (),
        workers: int = 32,
        pod_batch_period: float = POD_BATCH_PERIOD,
        cluster_domain: str = "",
        resync_period: float = 300.0,
        watch_nodes: bool = True,
        use_kueue: bool | None = None,
        metrics: ControllerMetrics | None = None,
        queue_metrics: MetricsProvider | None = None,
        recorder: EventRecorder | None = None,
        clock: Clock = REAL_CLOCK,
        network_policies: bool = False,
        network_policy_default: bool = False,
        profiles: Sequence[Profile] = (),
        serve_tfjobs: bool | None = None,
        serve_unmanaged_tfjobs: bool = True,
    ) -> None:
        """`serve_tfjobs`: serve Kubeflow's TFJob kind too (None: when this project's TFJob CRD is
        served); `serve_unmanaged_tfjobs`: run the TFJobs that name no controller in
        `runPolicy.managedBy` (False while Kubeflow's operator runs them)."""
        self.kube = kube
        self.namespaces = list(namespaces)
        self.workers = workers
        self.pod_batch_period = pod_batch_period
        self.metrics = metrics
        self.recorder = recorder
        self.memory = JobMemory(clock)
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(
            default_controller_rate_limiter(clock=clock), name="tensorflowjobs", metrics_provider=queue_metrics,
            clock=clock)
        on_relist = (lambda name: metrics.informer_relists.labels(name.split("[")[0]).inc()) if metrics else None

        self.informer_factory = InformerFactory(kube, namespaces=self.namespaces, on_relist=on_relist, clock=clock)
        build = self.informer_factory.for_resource

        def shared() -> Store:  # thousands of jobs and Services repeat the same strings: cache one copy
            return Store(default_indexers(), transform=slim_and_share)

        self.jobs = build("tensorflowjobs", GROUP, VERSION, PLURAL, resync_period=resync_period, store=shared())
        self.pods = build("pods", "", "v1", "pods", label_selector=JOB_NAME_LABEL,
                          store=Store({**default_indexers(), NODE_INDEX: _index_by_node}, transform=podcache.project))
        self.services = build("services", "", "v1", "services", label_selector=JOB_NAME_LABEL, store=shared())
        self.network_policies = (build("networkpolicies", "networking.k8s.io", "v1", "networkpolicies",
                                       label_selector=JOB_NAME_LABEL) if network_policies else None)
        self.nodes = build("nodes", "", "v1", "nodes", namespaced=False) if watch_nodes else None
        if serve_tfjobs is None:
            serve_tfjobs = tfjob_crd_is_ours(kube)
        self.serve_unmanaged_tfjobs = serve_unmanaged_tfjobs
        self.tfjobs = (build("tfjobs", TFJOB.group, TFJOB.version, TFJOB.plural, resync_period=resync_period,
                             store=shared()) if serve_tfjobs else None)
        # Kueue is used when its API is served (checked once at start: install Kueue first).
        if use_kueue is None:
            use_kueue = kube.has_api(kueue.GROUP, kueue.VERSION, kueue.WORKLOAD_KIND)
        self.workloads = (build("workloads", kueue.GROUP, kueue.VERSION, kueue.WORKLOAD_PLURAL,
                                label_selector=kueue.JOB_UID_LABEL) if use_kueue else None)
        self.flavors = (build("resourceflavors", kueue.GROUP, kueue.VERSION, "resourceflavors", namespaced=False)
                        if use_kueue else None)
        gate = KueueGate(kube, self._workload_of, self._flavor, clock) if use_kueue else None
        self.reconciler = Reconciler(kube, self, memory=self.memory, recorder=recorder, metrics=metrics,
                                     cluster_domain=cluster_domain, create_parallelism=create_parallelism(workers),
                                     clock=clock, kueue_gate=gate,
                                     network_policies=self.get_network_policy if network_policies else None,
                                     network_policy_default=network_policy_default, profiles=profiles)
        self._threads: list[threading.Thread] = []
        self._wire_handlers()
        if metrics is not None:  # show every informer's relist count from the start, zeros included
            for informer in self.informers():
                metrics.informer_relists.labels(informer.name)

    # ---- the read side the reconciler uses (informer caches) -------------------------------------

    def get_job(self, key: str) -> Mapping[str, Any] | None:
        """The job a key names, from its kind's cache (None for a TFJob another controller runs)."""
        kind, name = parse_key(key)
        if kind is TENSORFLOWJOB:
            return self.jobs.get(name)
        job = self.tfjobs.get(name) if self.tfjobs is not None else None
        return job if job is not None and self._serves(job) else None

    def _serves(self, tfjob: Mapping[str, Any]) -> bool:
        return ownership.serves(tfjob, self.serve_unmanaged_tfjobs)

    def pods_of(self, job_uid: str) -> list[Mapping[str, Any]]:
        return self.pods.by_index(CONTROLLER_UID_INDEX, job_uid)

    def get_service(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self.services.get(f"{namespace}/{name}")

    def get_network_policy(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        assert self.network_policies is not None
        return self.network_policies.get(f"{namespace}/{name}")

    def node_ready(self, name: str) -> bool | None:
        if self.nodes is None:
            return None  # not watching nodes (namespaced mode): never force-delete
        node = self.nodes.get(name)
        return False if node is None else _node_is_ready(node)

    def _workload_of(self, job_uid: str) -> Mapping[str, Any] | None:
        assert self.workloads is not None
        found = self.workloads.by_index(CONTROLLER_UID_INDEX, job_uid)
        return found[0] if found else None

    def _flavor(self, name: str) -> Mapping[str, Any] | None:
        assert self.flavors is not None
        return self.flavors.get(name)

    # ---- event handlers: map to a job key and enqueue, nothing else -------------------------------

    def _wire_handlers(self) -> None:
        self.jobs.add_event_handler(on_add=self._enqueue_job, on_update=self._job_updated,
                                    on_delete=self._job_deleted)
        self.pods.add_event_handler(on_add=self._pod_added, on_update=self._pod_updated,
                                    on_delete=self._child_deleted)
        self.services.add_event_handler(on_add=self._service_added, on_update=self._child_updated,
                                        on_delete=self._child_deleted)
        if self.tfjobs is not None:
            self.tfjobs.add_event_handler(on_add=self._tfjob_added, on_update=self._tfjob_updated,
                                          on_delete=self._tfjob_deleted)
        if self.network_policies is not None:
            # A policy arriving is almost always the one a reconcile just created: it joins the batch.
            self.network_policies.add_event_handler(on_add=self._service_added, on_update=self._child_updated,
                                                    on_delete=self._child_deleted)
        if self.nodes is not None:
            self.nodes.add_event_handler(on_update=self._node_updated, on_delete=self._node_gone)
        if self.workloads is not None:
            self.workloads.add_event_handler(on_add=self._child_added, on_update=self._child_updated,
                                             on_delete=self._child_deleted)

    def _enqueue_job(self, job: Mapping[str, Any]) -> None:
        self.queue.add(object_key(job))

    def _job_updated(self, old: Mapping[str, Any], new: Mapping[str, Any], prefix: str = "") -> None:
        key = prefix + object_key(new)
        if old is not new and self.memory.wrote(key, new["metadata"].get("resourceVersion")):
            return  # the echo of our own status write: the reconcile that wrote it saw everything else
        self.queue.add(key)

    def _job_deleted(self, job: Mapping[str, Any], prefix: str = "") -> None:
        key = prefix + object_key(job)
        self.memory.forget(key)
        self.queue.add(key)

    # A TFJob's key names its kind (`TFJob:namespace/name`); only TFJobs this operator runs are queued.

    def _tfjob_added(self, tfjob: Mapping[str, Any]) -> None:
        if self._serves(tfjob):
            self.queue.add(TFJOB.key_prefix + object_key(tfjob))

    def _tfjob_updated(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        if self._serves(new):
            self._job_updated(old, new, TFJOB.key_prefix)

    def _tfjob_deleted(self, tfjob: Mapping[str, Any]) -> None:
        if self._serves(tfjob):
            self._job_deleted(tfjob, TFJOB.key_prefix)

    def _owner_key(self, obj: Mapping[str, Any]) -> str | None:
        """The key of the job that controls `obj` (a TensorFlowJob or a TFJob, by kind and UID)."""
        ref = controller_of(obj)
        kind = kind_of_owner(ref) if ref is not None else None
        if kind is None or ref is None:
            return None
        informer = self.jobs if kind is TENSORFLOWJOB else self.tfjobs
        if informer is None:
            return None  # a TFJob's, while TFJobs are not served
        name = f"{obj['metadata'].get('namespace')}/{ref.get('name')}"
        job = informer.get(name)
        if job is not None and job["metadata"].get("uid") != ref.get("uid"):
            return None  # left over from an earlier job of the same name
        return kind.key_prefix + name

    def _pod_added(self, pod: Mapping[str, Any]) -> None:
        key = self._owner_key(pod)
        if key is None:
            return
        self.memory.expectations.creation_observed(key, pod["metadata"]["name"])
        self._enqueue_batched(key)

    def _pod_updated(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        if old is new or podcache.same_projection(old, new) or podcache.only_bound(old, new):
            return  # a resync, a change to fields the controller does not keep, or a binding
        key = self._owner_key(new)
        if key is None:
            return
        if podcache.is_urgent_change(old, new):
            if podstate.is_terminating(new):
                self.memory.expectations.deletion_observed(key, new["metadata"].get("uid", ""))
            self.queue.add(key)
        else:
            self._enqueue_batched(key)

    def _enqueue_batched(self, key: str) -> None:
        """Like client-go's Job controller: pod additions and routine updates wait `pod_batch_period`,
        and every event of the job within it is folded into one reconcile (the delaying queue keeps
        one entry per key). Deletions and urgent updates go straight in."""
        self.queue.add_after(key, self.pod_batch_period)

    def _service_added(self, service: Mapping[str, Any]) -> None:
        """A job's Service arriving is routine (almost always the one its reconcile just created):
        it joins the pods' batch instead of costing a reconcile of its own."""
        key = self._owner_key(service)
        if key is not None:
            self._enqueue_batched(key)

    def _child_added(self, obj: Mapping[str, Any]) -> None:
        key = self._owner_key(obj)
        if key is not None:
            self.queue.add(key)

    def _child_updated(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        key = self._owner_key(new)
        if key is None:
            return
        if old is new:  # a resync: only the job's own resync matters
            return
        if new["metadata"].get("deletionTimestamp"):
            self.memory.expectations.deletion_observed(key, new["metadata"].get("uid", ""))
        self.queue.add(key)

    def _child_deleted(self, obj: Mapping[str, Any]) -> None:
        key = self._owner_key(obj)
        if key is None:
            return
        self.memory.expectations.deletion_observed(key, obj["metadata"].get("uid", ""))
        self.queue.add(key)

    def _node_updated(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        if old is not new and _node_is_ready(old) != _node_is_ready(new):
            self._enqueue_jobs_on_node(new["metadata"]["name"])

    def _node_gone(self, node: Mapping[str, Any]) -> None:
        self._enqueue_jobs_on_node(node["metadata"]["name"])

    def _enqueue_jobs_on_node(self, node_name: str) -> None:
        for pod in self.pods.by_index(NODE_INDEX, node_name):
            key = self._owner_key(pod)
            if key is not None:
                self.queue.add(key)

    # ---- running -------------------------------------------------------------------------------

    def informers(self) -> list[SharedInformer]:
        return list(self.informer_factory.informers.values())

    def start_informers(self) -> None:
        self.informer_factory.start()

    def caches_synced(self) -> bool:
        return self.informer_factory.has_synced()

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        return self.informer_factory.wait_for_sync(timeout)

    def start_workers(self) -> None:
        for number in range(self.workers):
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
        self.queue.shut_down()
        for thread in self._threads:
            thread.join(timeout)
        self.informer_factory.stop(timeout)
        self.reconciler.close()

    def _worker(self) -> None:
        while True:
            key, shutdown = self.queue.get()
            if shutdown:
                return
            try:
                self._process(key)
            finally:
                self.queue.done(key)

    def _process(self, key: str) -> None:
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
