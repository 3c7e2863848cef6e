"""The informers' event handlers: turn each event into the key of the job it concerns, and enqueue it.

Nothing else happens here -- no API call, no planning -- so an informer's thread is never held up.
The rules of the routing, as client-go's sample-controller and Job controller have them:

* A child (each owned type `controller.owned` declares: Pod, Service, NetworkPolicy, PodGroup, Kueue
  Workload, ...) maps to its controlling job by the owner reference's kind *and* UID (`owner_key`),
  so a leftover pod of a deleted job with the same name never wakes the new one, and one reconciler
  serves TensorFlowJobs and TFJobs alike: a TFJob's key names its kind (`TFJob:namespace/name`,
  `controller.job.kinds`). TFJobs another controller runs (`runPolicy.managedBy`) are never queued.
* Each type's events are handled as its declaration's `routing` says. Pod additions and routine pod
  updates are batched per job for the options' `pod_batch_period`
  (client-go's Job controller does the same): the delaying queue keeps one entry per key, so every
  event of the job within the period folds into one reconcile. A job's Service, NetworkPolicy or
  PodGroup arriving (almost always the one its reconcile just created) joins that batch; every event
  of a Kueue Workload goes in at once.
* A pod the controller created arriving as created (still expected, Pending, no problem) wakes
  nothing: the pass that created it counted it, and either wrote the status or left it for the
  reconcile it asked for after the options' `first_status_wait` (`controller.reconciler`), which the
  batch of the pods' last start brings forward -- so if they start by then, "Created" and "Running"
  go out in one status write. The job's Service arriving while that status waits (or will: its pass
  is still creating) waits as long, so that reconcile sees it.
* Updates that change nothing the pod cache keeps, or only bind the pod, are dropped, as is the
  echo of our own status write (`JobMemory.wrote`); deletions, failures and disruptions go straight
  in, so repairs stay immediate. A node turning (not) Ready or going away enqueues the jobs with
  pods on it, and an event on a PodGroup (Volcano's reason for holding it) the job owning the group.
  A Kueue ResourceFlavor created after the cache's first list enqueues the jobs whose Workloads
  Kueue admitted with it (they wait for it: `controller.kueue.gate`).
* So are the steps of a pod on its way to running that change nothing its job's status says
  (`podcache.changes_nothing_yet`: its containers being created; its start while a sibling is still
  Pending -- the job cannot turn Running before the last one starts --), unless the job reads its
  progress from a pod: the last start, or a problem, brings the one reconcile the starts need.
* Handlers keep the job's memory in step: a pod seen lowers the creation expectation, a deletion
  seen lowers the deletion expectation, and a deleted job is forgotten (`JobMemory.forget`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from controller.caches import TFJOB_INFORMER, JobCaches, node_is_ready
from controller.job import podcache, progress
from controller.job.gang_schedulers import GangScheduler
from controller.job.kinds import TFJOB, kind_of_owner
from controller.kueue import protocol as kueue
from controller.memory import JobMemory
from controller.owned import OwnedType, Routing
from informers.informer import SharedInformer
from informers.store import controller_of, object_key
from tfjob_api import podstate
from workqueue import RateLimitingQueue


class JobEventHandlers:
    """The handlers of one controller's informers (`wire` registers them); the methods are the
    handlers themselves, so a test can deliver an event by calling one."""

    def __init__(self, caches: JobCaches, queue: RateLimitingQueue[str], memory: JobMemory,
                 pod_batch_period: float, first_status_wait: float = 0.0) -> None:
        """The waits are `controller.options.ControllerOptions`' (the first status's no shorter than the batch)."""
        self.caches = caches
        self.queue = queue
        self.memory = memory
        self.pod_batch_period = pod_batch_period
        self.first_status_wait = max(first_status_wait, pod_batch_period)

    def wire(self) -> None:
        """Register the handlers on every informer the caches run, and on those they start later
        (`JobCaches.on_informer`: TFJobs when their CRD appears, NetworkPolicies when first asked for).
        Every owned type declared in `controller.owned` gets the handlers its routing names."""
        caches = self.caches
        caches.jobs.add_event_handler(on_add=self.job_added, on_update=self.job_updated, on_delete=self.job_deleted)
        if caches.tfjobs is not None:
            self.wire_informer(TFJOB_INFORMER, caches.tfjobs)
        for declared in caches.owned:  # controller.owned: Pod, Service, NetworkPolicy, PodGroup, ...
            informer = caches.owned_informer(declared.kind)
            if informer is not None:
                self.wire_informer(declared.informer, informer)
        if caches.nodes is not None:
            caches.nodes.add_event_handler(on_update=self.node_updated, on_delete=self.node_gone)
        if caches.flavors is not None:
            caches.flavors.add_event_handler(on_add=self.flavor_added)
        if caches.gang_events is not None:
            caches.gang_events.add_event_handler(on_add=self.pod_group_event,
                                                 on_update=lambda _old, new: self.pod_group_event(new))
        caches.on_informer = self.wire_informer

    def wire_informer(self, name: str, informer: SharedInformer) -> None:
        """Register the handlers of an informer the caches may start after the others."""
        if name == TFJOB_INFORMER:
            informer.add_event_handler(on_add=self.tfjob_added, on_update=self.tfjob_updated,
                                       on_delete=self.tfjob_deleted)
            return
        declared = next((d for d in self.caches.owned if d.informer == name), None)
        if declared is None:
            raise ValueError(f"no handlers for informer {name!r}")
        on_add, on_update = self._routed(declared)
        informer.add_event_handler(on_add=on_add, on_update=on_update, on_delete=self.child_deleted)

    def _routed(self, declared: OwnedType) -> tuple[Callable[[Mapping[str, Any]], None],
                                                     Callable[[Mapping[str, Any], Mapping[str, Any]], None]]:
        """The add and update handlers of an owned type's routing (a deletion is always `child_deleted`)."""
        if declared.routing is Routing.PODS:
            return self.pod_added, self.pod_updated
        if declared.routing is Routing.AT_ONCE:
            return self.child_added, self.child_updated
        return self.child_created, self.child_updated

    # ---- jobs ------------------------------------------------------------------------------------

    def job_added(self, job: Mapping[str, Any]) -> None:
        self.queue.add(object_key(job))

    def job_updated(self, old: Mapping[str, Any], new: Mapping[str, Any], prefix: str = "") -> None:
        key = prefix + object_key(new)
        if old is not new and self.memory.wrote(key, new["metadata"].get("resourceVersion"),
                                                old["metadata"].get("resourceVersion")):
            return  # the echo of our own status write: the reconcile that wrote it saw everything else
        self.queue.add(key)

    def job_deleted(self, job: Mapping[str, Any], prefix: str = "") -> None:
        key = prefix + object_key(job)
        self.memory.forget(key)
        self.queue.add(key)

    # A TFJob's key names its kind; only TFJobs this operator runs are queued.

    def tfjob_added(self, tfjob: Mapping[str, Any]) -> None:
        if self.caches.serves(tfjob):
            self.queue.add(TFJOB.key_prefix + object_key(tfjob))

    def tfjob_updated(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        if self.caches.serves(new):
            self.job_updated(old, new, TFJOB.key_prefix)

    def tfjob_deleted(self, tfjob: Mapping[str, Any]) -> None:
        if self.caches.serves(tfjob):
            self.job_deleted(tfjob, TFJOB.key_prefix)

    # ---- children --------------------------------------------------------------------------------

    def owner_key(self, obj: Mapping[str, Any]) -> str | None:
        """The key of the job that controls `obj` (a TensorFlowJob or a TFJob, by kind and UID)."""
        ref = controller_of(obj)
        kind = kind_of_owner(ref) if ref is not None else None
        if kind is None or ref is None:
            return None
        if not self.caches.serves_kind(kind):
            return None  # a TFJob's, while TFJobs are not served
        name = f"{obj['metadata'].get('namespace')}/{ref.get('name')}"
        job = self.caches.cached_job(kind, name)
        if job is not None and job["metadata"].get("uid") != ref.get("uid"):
            return None  # left over from an earlier job of the same name
        return kind.key_prefix + name

    def pod_added(self, pod: Mapping[str, Any]) -> None:
        key = self.owner_key(pod)
        if key is None:
            return
        name = pod["metadata"]["name"]
        # Our own create's pod, as created: the reconcile that created it counted it already, and wrote
        # the status or comes back for it (`first_status_wait`). Any other arrival is batched.
        echo = (name in self.memory.expectations.pending_creations(key) and podstate.phase(pod) == "Pending"
                and not podstate.why_not_running(pod))
        self.memory.expectations.creation_observed(key, name)
        if not echo:
            self._enqueue_batched(key)

    def pod_updated(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        if old is new or podcache.same_projection(old, new) or podcache.only_bound(old, new):
            return  # a resync, a change to fields the controller does not keep, or a binding
        key = self.owner_key(new)
        if key is None:
            return
        if podcache.is_urgent_change(old, new):
            if podstate.is_terminating(new):
                self.memory.expectations.deletion_observed(key, new["metadata"].get("uid", ""))
            self.queue.add(key)
        elif not (podcache.changes_nothing_yet(old, new, self._siblings(new)) and not self._reports_progress(key)):
            self._enqueue_batched(key)

    def _siblings(self, pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        ref = controller_of(pod)
        return self.caches.pods_of(str(ref.get("uid"))) if ref is not None else []

    def _reports_progress(self, key: str) -> bool:
        """Whether the job reads its training progress from a pod (`spec.progress`): where it is read
        from changes when that pod starts, whatever its siblings do."""
        job = self.caches.get_job(key)
        return job is not None and progress.settings(job) is not None

    def child_created(self, obj: Mapping[str, Any]) -> None:
        """A job's Service or other owned object arriving is routine (almost always the one its reconcile
        just created): it joins the pods' batch instead of costing a reconcile of its own."""
        key = self.owner_key(obj)
        if key is None:
            return
        if self._status_may_wait(key):
            self.queue.add_after(key, self.first_status_wait)
        else:
            self._enqueue_batched(key)

    def _status_may_wait(self, key: str) -> bool:
        """Whether the job's status waits unwritten for its next reconcile, or will: its reconcile is
        still creating pods (their creation is expected), and a pass that only creates defers it."""
        return self.memory.has_deferred(key) or bool(self.memory.expectations.pending_creations(key))

    def child_added(self, obj: Mapping[str, Any]) -> None:
        key = self.owner_key(obj)
        if key is not None:
            self.queue.add(key)

    def child_updated(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        key = self.owner_key(new)
        if key is None:
            return
        if old is new:  # a resync: only the job's own resync matters
            return
        if new["metadata"].get("deletionTimestamp"):
            self.memory.expectations.deletion_observed(key, new["metadata"].get("uid", ""))
        self.queue.add(key)

    def child_deleted(self, obj: Mapping[str, Any]) -> None:
        key = self.owner_key(obj)
        if key is None:
            return
        self.memory.expectations.deletion_observed(key, obj["metadata"].get("uid", ""))
        self.queue.add(key)

    def pod_group_event(self, event: Mapping[str, Any]) -> None:
        """An event on a PodGroup (Volcano saying why it waits) concerns the job that owns the group."""
        involved = event.get("involvedObject") or {}
        group = self.caches.get_owned(GangScheduler.kind, str(involved.get("namespace")), str(involved.get("name")))
        key = self.owner_key(group) if group is not None else None
        if key is not None:
            self.queue.add(key)

    def _enqueue_batched(self, key: str) -> None:
        """Pod additions and routine updates wait `pod_batch_period`, and every event of the job
        within it is folded into one reconcile (the delaying queue keeps one entry per key)."""
        self.queue.add_after(key, self.pod_batch_period)

    # ---- Kueue's ResourceFlavors ----------------------------------------------------------------

    def flavor_added(self, flavor: Mapping[str, Any]) -> None:
        """A flavor created after Kueue admitted a Workload naming it (a cluster set up in the same
        breath as its jobs) would otherwise leave that job waiting for the next resync. The cache's
        first list is skipped: every job is reconciled after it anyway."""
        workloads = self.caches.workloads
        if workloads is None or self.caches.flavors is None or not self.caches.flavors.has_synced():
            return
        name = flavor["metadata"]["name"]
        for workload in workloads.list():
            if name in kueue.admission(workload).flavor_names:
                key = self.owner_key(workload)
                if key is not None:
                    self.queue.add(key)

    # ---- nodes -----------------------------------------------------------------------------------

    def node_updated(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        if old is not new and node_is_ready(old) != node_is_ready(new):
            self._enqueue_jobs_on_node(new["metadata"]["name"])

    def node_gone(self, node: Mapping[str, Any]) -> None:
        self._enqueue_jobs_on_node(node["metadata"]["name"])

    def _enqueue_jobs_on_node(self, node_name: str) -> None:
        for pod in self.caches.pods_on_node(node_name):
            key = self.owner_key(pod)
            if key is not None:
                self.queue.add(key)
