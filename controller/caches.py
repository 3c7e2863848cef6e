"""The controller's read side: the informers it runs and the lookups a reconcile makes in their caches.

`JobCaches` decides which resources are watched (from `ControllerOptions` and, for `auto`, API
discovery) and answers from their in-memory caches, never from the API server: a job by its key,
its pods (by the controlling job's UID), its Service, NetworkPolicy and PodGroup (by name), whether a node is
Ready, a Kueue Workload and ResourceFlavor. The `Reconciler` receives this object as its `Caches`,
the event handlers (`controller.handlers`) read owners and nodes' pods from it, and the loop
(`controller.controller`) starts, syncs and stops it. Nothing here writes or enqueues.

What is watched, and why:

* TensorFlowJobs, and Kubeflow's TFJobs when served (`--kubeflow-tfjob`; auto: while this project's
  TFJob CRD is served, `tfjob_crd_is_ours`). Under `auto` the answer is not fixed at start: a thread
  re-reads the kind's discovery listing every `discovery_period` seconds (`recheck_tfjobs`) and
  starts the TFJob informer when this project's CRD appears (or replaces Kubeflow's), or stops it
  when the CRD goes. Discovery, not a watch on the CRD, because every client may read discovery:
  no install (the namespaced one included) needs a grant on CustomResourceDefinitions for it, and
  a start that raced the CRD's publication in discovery is corrected by the next re-read
  (docs/kubeflow.md). TFJobs another controller runs (`runPolicy.managedBy`,
  `controller.job.kubeflow.ownership`) are cached but never read as jobs.
* Each owned type `controller.owned` declares, as it declares it (its label selector and store;
  `get_owned` reads them by kind), from the start unless it is lazy: the pods and Services carrying
  the job-name label (pods cached as the pod cache keeps them, `controller.job.podcache`, and indexed
  by node; jobs and Services share their repeated strings -- thousands of them repeat the same
  labels), the two below, the Kueue Workload (further below) and any other declared type.
* NetworkPolicies carrying the job-name label: from the start with `--network-policy=on` (so one
  deleted or edited by hand is put back at once); with `off`, only from the first job that asks
  for a policy (`owned_cache`), so an operator whose jobs ask for none needs no grant on
  NetworkPolicies at all. Once watched, they stay watched.
* The gang scheduler's PodGroups carrying the job-name label, only with `--gang-scheduler` (with
  `none`, no PodGroup is ever read or written); under Kubernetes' own, the jobs' Workloads too.
* Events on the gang scheduler's PodGroups, only under a scheduler that says why a group waits in
  events alone (Volcano: its queue's quota; `GangScheduler.reads_events`), indexed by the group's UID
  (`pod_group_events`).
* Nodes, only cluster-wide (they are cluster-scoped): a pod on a lost node is repaired.
* Kueue's Workloads (declared when Kueue is used: `uses_kueue`) and ResourceFlavors when Kueue is
  used (`--kueue`; auto: when its API is served, checked once at start: install Kueue first).

Informers started after the others (TFJobs, NetworkPolicies) are handed to `on_informer` (the
controller's handlers wire them) and count in `synced()` as soon as they exist.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import structlog

from controller.job.kinds import TENSORFLOWJOB, TFJOB, JobKind, parse_key
from controller.job.netpol import KIND as NETWORK_POLICY_KIND
from controller.kueue import protocol as kueue
from controller.options import ControllerOptions
from controller.owned import KUEUE_WORKLOAD, NODE_INDEX, POD, SERVICE, OwnedType, declarations, shared_store
from informers.factory import InformerFactory
from informers.informer import SharedInformer
from informers.store import CONTROLLER_UID_INDEX, Store
from kube import ApiError, Kube
from kube.clock import REAL_CLOCK, Clock
from tfjob_api import kubeflow
from tfjob_api.names import GROUP, PLURAL, VERSION

log = structlog.get_logger(__name__)

INVOLVED_UID_INDEX = "involved-uid"
POD_GROUP_EVENTS_INFORMER = "podgroupevents"
TFJOB_INFORMER = "tfjobs"


def _index_by_involved_uid(event: Mapping[str, Any]) -> list[str]:
    uid = (event.get("involvedObject") or {}).get("uid")
    return [uid] if uid else []


def node_is_ready(node: Mapping[str, Any]) -> bool:
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return bool(condition.get("status") == "True")
    return False


def tfjob_listing_is_ours(listing: Mapping[str, Any] | None) -> bool:
    """Whether the discovery listing of TFJob's group/version shows TFJobs served by this project's
    CRD (the one that lists the `tfjob-operator` category): what `--kubeflow-tfjob=auto` turns
    TFJobs on for. Kubeflow's own TFJob CRD means Kubeflow's operator runs them (and that CRD would
    drop the status fields this operator keeps). None (the group/version is not served): no."""
    resources = listing.get("resources") if isinstance(listing, Mapping) else None
    return any(isinstance(r, Mapping) and r.get("name") == kubeflow.PLURAL
               and kubeflow.OPERATOR_CATEGORY in (r.get("categories") or []) for r in resources or [])


def uses_kueue(kube: Kube, options: ControllerOptions) -> bool:
    """Whether jobs are queued through Kueue (`--kueue`; auto: whether its Workload API is served,
    asked once, now). Raises ApiError when discovery cannot be read."""
    if options.use_kueue is not None:
        return options.use_kueue
    # crds=False: the operator is granted nothing on CustomResourceDefinitions
    return kube.has_api(kueue.GROUP, kueue.VERSION, kueue.WORKLOAD_KIND, crds=False)


def tfjob_crd_is_ours(kube: Kube) -> bool:
    """`tfjob_listing_is_ours` of the API server's current listing, read now (never from a cache).
    Raises ApiError when discovery cannot be read (a 404 is an answer: not served)."""
    try:
        listing = kube.get(f"/apis/{kubeflow.GROUP}/{kubeflow.VERSION}")
    except ApiError as error:
        if error.not_found:
            return False
        raise
    return tfjob_listing_is_ours(listing)


class JobCaches:
    """The informers of one controller and the reads made from their caches (never mutated).

    With `auto` options the constructor asks the API server which APIs are served (Kueue, this
    project's TFJob CRD), so it raises ApiError when the server cannot be reached. `owned` are the
    declared types (`controller.owned`; by default those of `options`, with the Kueue Workload when
    Kueue is used); the Kueue Workload among them means Kueue is used."""

    def __init__(self, kube: Kube, options: ControllerOptions, *, clock: Clock = REAL_CLOCK,
                 on_relist: Callable[[str], None] | None = None, owned: Sequence[OwnedType] | None = None) -> None:
        self.serve_unmanaged_tfjobs = options.serve_unmanaged_tfjobs
        self.factory = InformerFactory(kube, namespaces=list(options.namespaces), on_relist=on_relist, clock=clock)
        self.on_informer: Callable[[str, SharedInformer], None] | None = None
        self._kube = kube
        self._resync = options.resync
        self._lock = threading.Lock()  # serialises starting and stopping the late informers
        self._stopping = threading.Event()
        self._follower: threading.Thread | None = None
        self.discovery_period = options.discovery_period
        build = self.factory.for_resource
        self.jobs = build("tensorflowjobs", GROUP, VERSION, PLURAL, resync_period=options.resync,
                          store=shared_store())
        self.owned = (tuple(owned) if owned is not None
                      else declarations(options, kueue_workloads=uses_kueue(kube, options)))
        self._owned: dict[str, SharedInformer | None] = {
            declared.kind: None if declared.lazy else self._build_owned(declared) for declared in self.owned}
        self.nodes = build("nodes", "", "v1", "nodes", namespaced=False) if options.watch_nodes else None
        self.tfjobs: SharedInformer | None = None
        self._informers: dict[JobKind, SharedInformer | None] = {TENSORFLOWJOB: self.jobs, TFJOB: None}
        self.follows_tfjob_crd = options.serve_tfjobs is None
        serve_tfjobs = options.serve_tfjobs
        if serve_tfjobs is None:
            serve_tfjobs = tfjob_crd_is_ours(kube)
        self.serve_tfjobs(serve_tfjobs)
        self.flavors = (build("resourceflavors", kueue.GROUP, kueue.VERSION, "resourceflavors", namespaced=False)
                        if self.workloads is not None else None)
        gang = options.gang
        self.gang_events = (build(POD_GROUP_EVENTS_INFORMER, "", "v1", "events",
                                  field_selector=f"involvedObject.kind={gang.kind},"
                                  f"involvedObject.apiVersion={gang.api_version}",
                                  store=Store({INVOLVED_UID_INDEX: _index_by_involved_uid}))
                            if gang is not None and gang.reads_events else None)

    # ---- the informers that start and stop while the others run --------------------------------

    def serve_tfjobs(self, serve: bool) -> bool:
        """Start (or stop) serving TFJobs: build and start (or stop and drop) the TFJob informer.
        Returns whether anything changed. A stopped TFJob informer takes its cache with it, so the
        keys of TFJobs still queued find no job and are forgotten; their pods are left alone."""
        with self._lock:
            if self._stopping.is_set() or serve == (self.tfjobs is not None):
                return False
            if serve:
                informer = self.factory.for_resource(TFJOB_INFORMER, TFJOB.group, TFJOB.version, TFJOB.plural,
                                                     resync_period=self._resync, store=shared_store())
                self.tfjobs = informer
                self._informers[TFJOB] = informer
                self._announce(TFJOB_INFORMER, informer)
            else:
                self._informers[TFJOB] = None
                self.tfjobs = None
                self.factory.remove(TFJOB_INFORMER)
            return True

    def recheck_tfjobs(self) -> bool:
        """Under `--kubeflow-tfjob=auto`: read TFJob's discovery listing now and serve TFJobs exactly
        while this project's CRD serves them. A listing that cannot be read changes nothing.
        Returns whether serving changed."""
        if not self.follows_tfjob_crd:
            return False
        try:
            ours = tfjob_crd_is_ours(self._kube)
        except ApiError as error:
            log.warning("cannot read TFJob's discovery; serving TFJobs as before", error=str(error),
                        serving=self.tfjobs is not None)
            return False
        changed = self.serve_tfjobs(ours)
        if changed:
            log.info("serving TFJobs: this project's TFJob CRD is served" if ours
                     else "no longer serving TFJobs: this project's TFJob CRD is not served")
        return changed

    def owned_cache(self, kind: str, wanted: bool) -> bool:
        """Whether the cache of the owned type `kind` can answer for a job (its informer runs and
        has listed); when `wanted` (the job asks for such an object) and a lazy type is not watched
        yet, start watching it. Not wanted and not watched: False, and nothing is started."""
        informer = self._owned.get(kind)
        if informer is None:
            if not wanted:
                return False
            with self._lock:
                if self._stopping.is_set():
                    return False
                informer = self._owned.get(kind)
                if informer is None:
                    declared = next(d for d in self.owned if d.kind == kind)
                    informer = self._owned[kind] = self._build_owned(declared)
                    self._announce(declared.informer, informer)
        return informer.has_synced()

    def network_policy_cache(self, wanted: bool) -> bool:
        """`owned_cache` of the NetworkPolicies (watched once the first job asks for a policy)."""
        return self.owned_cache(NETWORK_POLICY_KIND, wanted)

    def owned_informer(self, kind: str) -> SharedInformer | None:
        """The informer of the owned type `kind` (None: not watched, or not yet)."""
        return self._owned.get(kind)

    @property
    def pods(self) -> SharedInformer:
        informer = self._owned.get(POD.kind)
        assert informer is not None, "the pods are always declared"
        return informer

    @property
    def services(self) -> SharedInformer:
        informer = self._owned.get(SERVICE.kind)
        assert informer is not None, "the Services are always declared"
        return informer

    @property
    def network_policies(self) -> SharedInformer | None:
        return self._owned.get(NETWORK_POLICY_KIND)

    @property
    def workloads(self) -> SharedInformer | None:
        """Kueue's Workloads (None: Kueue is not used)."""
        return self._owned.get(KUEUE_WORKLOAD.kind)

    def _build_owned(self, declared: OwnedType) -> SharedInformer:
        what = declared.companion
        return self.factory.for_resource(declared.informer, what.group, what.version, what.plural,
                                         label_selector=declared.label_selector, store=declared.store())

    def _announce(self, name: str, informer: SharedInformer) -> None:
        """Hand a late informer to `on_informer` (its handlers replay what it has cached so far)."""
        if self.on_informer is not None:
            self.on_informer(name, informer)

    def _follow_tfjob_crd(self) -> None:
        # Real time even under a fake clock: a fake sleep returns at once, and this loop would spin
        # (tests call `recheck_tfjobs` themselves).
        while not self._stopping.wait(self.discovery_period):
            try:
                self.recheck_tfjobs()
            except Exception:  # a bug here must not end the re-reads
                log.exception("re-reading TFJob's discovery failed")

    # ---- jobs ------------------------------------------------------------------------------------

    def get_job(self, key: str) -> Mapping[str, Any] | None:
        """The job a key names, from its kind's cache (None for a TFJob another controller runs)."""
        kind, name = parse_key(key)
        job = self.cached_job(kind, name)
        return job if job is None or kind.serves(job, self.serve_unmanaged_tfjobs) else None

    def cached_job(self, kind: JobKind, name: str) -> Mapping[str, Any] | None:
        """The cached job of that kind and `namespace/name`, whoever runs it (None when the kind
        is not served)."""
        informer = self._informers[kind]
        return informer.get(name) if informer is not None else None

    def serves_kind(self, kind: JobKind) -> bool:
        """Whether jobs of that kind are served (read and written) at all."""
        return self._informers[kind] is not None

    def serves(self, tfjob: Mapping[str, Any]) -> bool:
        """Whether this operator runs the TFJob (`runPolicy.managedBy`)."""
        return TFJOB.serves(tfjob, self.serve_unmanaged_tfjobs)

    # ---- a job's objects, nodes, Kueue -----------------------------------------------------------

    def pods_of(self, job_uid: str) -> list[Mapping[str, Any]]:
        return list(self.pods.by_index(CONTROLLER_UID_INDEX, job_uid))  # typed as read-only

    def pods_on_node(self, node_name: str) -> list[Mapping[str, Any]]:
        return list(self.pods.by_index(NODE_INDEX, node_name))

    def get_service(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self.services.get(f"{namespace}/{name}")

    def get_owned(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        """The cached object of the owned type `kind` (`controller.owned`) and that name."""
        informer = self._owned.get(kind)
        return informer.get(f"{namespace}/{name}") if informer is not None else None

    def pod_group_events(self, pod_group: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
        """The events on a PodGroup (none when they are not watched)."""
        if self.gang_events is None or pod_group is None:
            return []
        return list(self.gang_events.by_index(INVOLVED_UID_INDEX, pod_group["metadata"].get("uid", "")))

    def node_ready(self, name: str) -> bool | None:
        if self.nodes is None:
            return None  # not watching nodes (namespaced mode): never force-delete
        node = self.nodes.get(name)
        return False if node is None else node_is_ready(node)

    def workload_of(self, job_uid: str) -> Mapping[str, Any] | None:
        assert self.workloads is not None
        found = self.workloads.by_index(CONTROLLER_UID_INDEX, job_uid)
        return found[0] if found else None

    def workload_named(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        assert self.workloads is not None
        return self.workloads.get(f"{namespace}/{name}")

    def flavor(self, name: str) -> Mapping[str, Any] | None:
        assert self.flavors is not None
        return self.flavors.get(name)

    # ---- running ---------------------------------------------------------------------------------

    def informers(self) -> list[SharedInformer]:
        return list(self.factory.informers.values())

    def start(self) -> None:
        self.factory.start()
        if self.follows_tfjob_crd and self._follower is None:
            self._follower = threading.Thread(target=self._follow_tfjob_crd, name="tfjob-crd-follower", daemon=True)
            self._follower.start()

    def synced(self) -> bool:
        return self.factory.has_synced()

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        return self.factory.wait_for_sync(timeout)

    def stop(self, timeout: float) -> None:
        with self._lock:  # no informer starts after this
            self._stopping.set()
        if self._follower is not None:
            self._follower.join(timeout)
        self.factory.stop(timeout)
