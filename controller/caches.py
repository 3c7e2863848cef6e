"""The controller's read side: the informers it runs and the lookups a reconcile makes in their caches.

`JobCaches` decides which resources are watched (from `ControllerOptions` and, for `auto`, API
discovery) and answers from their in-memory caches, never from the API server: a job by its key,
its pods (by the controlling job's UID), its Service and NetworkPolicy (by name), whether a node is
Ready, a Kueue Workload and ResourceFlavor. The `Reconciler` receives this object as its `Caches`,
the event handlers (`controller.handlers`) read owners and nodes' pods from it, and the loop
(`controller.controller`) starts, syncs and stops it. Nothing here writes or enqueues.

What is watched, and why:

* TensorFlowJobs, and Kubeflow's TFJobs when served (`--kubeflow-tfjob`; auto: when this project's
  TFJob CRD is installed, `tfjob_crd_is_ours`). TFJobs another controller runs
  (`runPolicy.managedBy`, `controller.job.kubeflow.ownership`) are cached but never read as jobs.
* Pods, Services and NetworkPolicies carrying the job-name label. Pods are cached as the pod cache
  keeps them (`controller.job.podcache`) and indexed by node; jobs and Services share their repeated
  strings (thousands of them repeat the same labels). NetworkPolicies are always watched, so one
  deleted or edited by hand is put back at once, whatever `--network-policy` says.
* Nodes, only cluster-wide (they are cluster-scoped): a pod on a lost node is repaired.
* Kueue's Workloads and ResourceFlavors when Kueue is used (`--kueue`; auto: when its API is served,
  checked once at start: install Kueue first).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from controller.job import podcache
from controller.job.kinds import TENSORFLOWJOB, TFJOB, JobKind, parse_key
from controller.kueue import protocol as kueue
from controller.options import ControllerOptions
from informers.factory import InformerFactory
from informers.informer import SharedInformer
from informers.store import CONTROLLER_UID_INDEX, Store, default_indexers, slim_and_share
from kube import ApiError, Kube
from kube.clock import REAL_CLOCK, Clock
from tfjob_api import kubeflow
from tfjob_api.names import GROUP, JOB_NAME_LABEL, PLURAL, VERSION

NODE_INDEX = "node"


def _index_by_node(obj: Mapping[str, Any]) -> list[str]:
    node = (obj.get("spec") or {}).get("nodeName")
    return [node] if node else []


def node_is_ready(node: Mapping[str, Any]) -> bool:
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return condition.get("status") == "True"
    return False


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


class JobCaches:
    """The informers of one controller and the reads made from their caches (never mutated).

    With `auto` options the constructor asks the API server which APIs are served (Kueue, this
    project's TFJob CRD), so it raises ApiError when the server cannot be reached."""

    def __init__(self, kube: Kube, options: ControllerOptions, *, clock: Clock = REAL_CLOCK,
                 on_relist: Callable[[str], None] | None = None) -> None:
        self.serve_unmanaged_tfjobs = options.serve_unmanaged_tfjobs
        self.factory = InformerFactory(kube, namespaces=list(options.namespaces), on_relist=on_relist, clock=clock)
        build = self.factory.for_resource

        def shared() -> Store:  # thousands of jobs and Services repeat the same strings: cache one copy
            return Store(default_indexers(), transform=slim_and_share)

        self.jobs = build("tensorflowjobs", GROUP, VERSION, PLURAL, resync_period=options.resync, store=shared())
        self.pods = build("pods", "", "v1", "pods", label_selector=JOB_NAME_LABEL,
                          store=Store({**default_indexers(), NODE_INDEX: _index_by_node}, transform=podcache.project))
        self.services = build("services", "", "v1", "services", label_selector=JOB_NAME_LABEL, store=shared())
        self.network_policies = build("networkpolicies", "networking.k8s.io", "v1", "networkpolicies",
                                      label_selector=JOB_NAME_LABEL)
        self.nodes = build("nodes", "", "v1", "nodes", namespaced=False) if options.watch_nodes else None
        serve_tfjobs = options.serve_tfjobs
        if serve_tfjobs is None:
            serve_tfjobs = tfjob_crd_is_ours(kube)
        self.tfjobs = (build("tfjobs", TFJOB.group, TFJOB.version, TFJOB.plural, resync_period=options.resync,
                             store=shared()) if serve_tfjobs else None)
        self._informers: dict[JobKind, SharedInformer | None] = {TENSORFLOWJOB: self.jobs, TFJOB: self.tfjobs}
        use_kueue = options.use_kueue
        if use_kueue is None:
            use_kueue = kube.has_api(kueue.GROUP, kueue.VERSION, kueue.WORKLOAD_KIND)
        self.workloads = (build("workloads", kueue.GROUP, kueue.VERSION, kueue.WORKLOAD_PLURAL,
                                label_selector=kueue.JOB_UID_LABEL) if use_kueue else None)
        self.flavors = (build("resourceflavors", kueue.GROUP, kueue.VERSION, "resourceflavors", namespaced=False)
                        if use_kueue else None)

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

    def get_network_policy(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self.network_policies.get(f"{namespace}/{name}")

    def node_ready(self, name: str) -> bool | None:
        if self.nodes is None:
            return None  # not watching nodes (namespaced mode): never force-delete
        node = self.nodes.get(name)
        return False if node is None else node_is_ready(node)

    def workload_of(self, job_uid: str) -> Mapping[str, Any] | None:
        assert self.workloads is not None
        found = self.workloads.by_index(CONTROLLER_UID_INDEX, job_uid)
        return found[0] if found else None

    def flavor(self, name: str) -> Mapping[str, Any] | None:
        assert self.flavors is not None
        return self.flavors.get(name)

    # ---- running ---------------------------------------------------------------------------------

    def informers(self) -> list[SharedInformer]:
        return list(self.factory.informers.values())

    def start(self) -> None:
        self.factory.start()

    def synced(self) -> bool:
        return self.factory.has_synced()

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        return self.factory.wait_for_sync(timeout)

    def stop(self, timeout: float) -> None:
        self.factory.stop(timeout)
