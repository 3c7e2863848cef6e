"""MultiKueue on devclusters: one manager and named workers side by side, a Kueue on each.

Kueue's MultiKueue (sigs.k8s.io/kueue v0.17.0, pkg/controller/admissionchecks/multikueue/) admits a
job on a *manager* cluster and runs it on a *worker*. Each devcluster is a folder with ports picked
free (state.py, ports.py), so several run side by side under ~/.cache/tfjob-operator/clusters/<name>.
This module starts them and wires them up as Kueue's MultiKueue set-up guide does:

* **Every cluster** serves both kinds (the operator's TensorFlowJob CRD without its short name, and
  its TFJob CRD, manifests/kubeflow/) and runs a Kueue (devcluster/kueue.py) with the frameworks
  `batch/job` and `kubeflow.org/tfjob`, started after the CRDs so Kueue sets up its TFJob controller.
* **The manager's Kueue** (`ManagerKueue`) is configured for MultiKueue: the block is spelled
  `multiKueue` (capital K; Kueue's external-frameworks page writes `multikueue`, which its strict
  decoder refuses) with `externalFrameworks: [{name: TensorFlowJob.v1.kubeflow.org}]`, the generic
  adapter for the operator's own kind (gate `MultiKueueAdaptersForCustomJobs`, on by default in
  0.17, set anyway), while TFJobs go through Kueue's built-in Kubeflow adapter. Its `gcInterval`
  and `workerLostTimeout` are short, so a deleted job's remote copy and a lost worker are dealt
  with in seconds rather than Kueue's 1 and 15 minutes.
* **Objects on the manager** (`manager_objects`): per worker a Secret in `kueue-system` holding the
  worker's admin kubeconfig (certificates embedded, as Kueue requires: no file paths) under the key
  `kubeconfig`, and a MultiKueueCluster naming it; one MultiKueueConfig listing the workers; the
  AdmissionCheck `multikueue` (controllerName `kueue.x-k8s.io/multikueue`, its parameters the
  config). `queue_objects` are the ResourceFlavor, ClusterQueue and LocalQueue each side needs: on
  the manager the ClusterQueue carries the admission check (its quota only gates dispatching), on a
  worker it has the quota the jobs really use.

What runs on a worker: MultiKueue copies the manager's Workload there, then the job (without its
`managedBy`, labelled `kueue.x-k8s.io/prebuilt-workload-name`); the worker's operator (a TensorFlowJob)
or Kueue's TFJob controller (a TFJob) adopts that Workload, and the worker's Kueue admits it. A worker
started with `frameworks=WORKER_FRAMEWORKS_TFJOB_OFF` runs Kueue without its TFJob integration, so its
operator (`--kueue-tfjob=auto` reads the published Configuration) queues TFJobs and adopts their
Workloads too; the manager always keeps the integration, where Kueue's TFJob adapter lives.
"""

from __future__ import annotations

import base64
import functools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .api import ApiError
from .cluster import Cluster
from .kueue import DEFAULT_FRAMEWORKS, NAMESPACE, Kueue
from .state import default_dir
from .waiting import wait_for

GROUP = "kueue.x-k8s.io"
API_VERSION = f"{GROUP}/v1beta2"
CONTROLLER_NAME = f"{GROUP}/multikueue"
TFJOB_FRAMEWORK = "kubeflow.org/tfjob"
FRAMEWORKS = (*DEFAULT_FRAMEWORKS, TFJOB_FRAMEWORK)
WORKER_FRAMEWORKS_TFJOB_OFF = DEFAULT_FRAMEWORKS
EXTERNAL_FRAMEWORK = "TensorFlowJob.v1.kubeflow.org"
ADMISSION_CHECK = "multikueue"
CONFIG_NAME = "multikueue"
ORIGIN = "tfjob-devcluster"
GC_INTERVAL = "5s"
WORKER_LOST_TIMEOUT = "30s"
FLAVOR = "default-flavor"
MANIFESTS = Path(__file__).resolve().parents[1] / "manifests" / "kubeflow"
CRD_FILES = ("tensorflowjob-crd.yaml", "tfjob-crd.yaml")
CRD_NAMES = ("tensorflowjobs.kubeflow.org", "tfjobs.kubeflow.org")


def manager_configuration(base: Mapping[str, Any], workload_concurrency: int | None = None) -> dict[str, Any]:
    """Kueue's Configuration for a manager: `base` (devcluster/kueue.py's) plus the MultiKueue block;
    with `workload_concurrency`, that many concurrent reconciles for the controllers of Workloads (among
    them MultiKueue's dispatcher; controller-runtime's default is 1)."""
    config = dict(base)
    if workload_concurrency:
        config["controller"] = {"groupKindConcurrency": {"Workload.kueue.x-k8s.io": workload_concurrency}}
    config["featureGates"] = {**(base.get("featureGates") or {}), "MultiKueueAdaptersForCustomJobs": True}
    config["multiKueue"] = {"gcInterval": GC_INTERVAL, "origin": ORIGIN, "workerLostTimeout": WORKER_LOST_TIMEOUT,
                            "externalFrameworks": [{"name": EXTERNAL_FRAMEWORK}]}
    return config


class ManagerKueue(Kueue):
    """Kueue on a MultiKueue manager (see the module docstring)."""

    workload_concurrency: int | None = None

    def configuration(self, ports: dict[str, int]) -> dict[str, Any]:
        return manager_configuration(super().configuration(ports), self.workload_concurrency)


def secret_name(worker: str) -> str:
    return f"multikueue-{worker}"


def manager_objects(workers: Mapping[str, str], name: str = CONFIG_NAME) -> list[dict[str, Any]]:
    """What the manager needs to dispatch to `workers` (name → kubeconfig text), in creation order: the
    MultiKueueConfig and the AdmissionCheck are both called `name` (a ClusterQueue names the check)."""
    objects: list[dict[str, Any]] = []
    for worker, kubeconfig in workers.items():
        objects.append({"apiVersion": "v1", "kind": "Secret",
                        "metadata": {"name": secret_name(worker), "namespace": NAMESPACE},
                        "data": {"kubeconfig": base64.b64encode(kubeconfig.encode()).decode()}})
        objects.append({"apiVersion": API_VERSION, "kind": "MultiKueueCluster", "metadata": {"name": worker},
                        "spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret",
                                                                  "location": secret_name(worker)}}}})
    objects.append({"apiVersion": API_VERSION, "kind": "MultiKueueConfig", "metadata": {"name": name},
                    "spec": {"clusters": list(workers)}})
    objects.append({"apiVersion": API_VERSION, "kind": "AdmissionCheck", "metadata": {"name": name},
                    "spec": {"controllerName": CONTROLLER_NAME,
                             "parameters": {"apiGroup": GROUP, "kind": "MultiKueueConfig", "name": name}}})
    return objects


def queue_objects(cluster_queue: str, namespace: str, local_queue: str, cpu: str, memory: str,
                  admission_check: str | None = None) -> list[dict[str, Any]]:
    """A ResourceFlavor, a ClusterQueue with `cpu`/`memory` of quota (with a MultiKueue admission
    check on the manager) and a LocalQueue in `namespace`."""
    spec: dict[str, Any] = {
        "namespaceSelector": {},  # nil would match no namespace at all
        "resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [
            {"name": FLAVOR, "resources": [{"name": "cpu", "nominalQuota": cpu},
                                           {"name": "memory", "nominalQuota": memory}]}]}]}
    if admission_check:
        spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": admission_check}]}
    return [
        {"apiVersion": API_VERSION, "kind": "ResourceFlavor", "metadata": {"name": FLAVOR}, "spec": {}},
        {"apiVersion": API_VERSION, "kind": "ClusterQueue", "metadata": {"name": cluster_queue}, "spec": spec},
        {"apiVersion": API_VERSION, "kind": "LocalQueue", "metadata": {"name": local_queue, "namespace": namespace},
         "spec": {"clusterQueue": cluster_queue}},
    ]


def _path(body: Mapping[str, Any]) -> str:
    """The collection path of an object of the kinds above."""
    kind, namespace = body["kind"], body["metadata"].get("namespace")
    if body["apiVersion"] == "v1":
        return f"/api/v1/namespaces/{namespace}/{kind.lower()}s"
    plural = {"ClusterQueue": "clusterqueues", "LocalQueue": "localqueues", "ResourceFlavor": "resourceflavors",
              "MultiKueueCluster": "multikueueclusters", "MultiKueueConfig": "multikueueconfigs",
              "AdmissionCheck": "admissionchecks"}[kind]
    where = f"/namespaces/{namespace}" if namespace else ""
    return f"/apis/{API_VERSION}{where}/{plural}"


def create_all(cluster: Cluster, objects: Sequence[Mapping[str, Any]]) -> None:
    """Create each object, keeping one that already exists (a rerun of `up` on the same folders)."""
    for body in objects:
        namespace = body["metadata"].get("namespace")
        if namespace:
            ensure_namespace(cluster, namespace)
        try:
            cluster.api.post(_path(body), body)
        except ApiError as error:
            if error.status != 409:
                raise


def ensure_namespace(cluster: Cluster, name: str) -> None:
    try:
        cluster.api.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    except ApiError as error:
        if error.status != 409:
            raise


def install_job_crds(cluster: Cluster) -> None:
    """Both kinds' CRDs as the operator serves them, Established (before Kueue starts)."""
    for name in CRD_FILES:
        cluster.kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=tfjob-devcluster",
                        "-f", str(MANIFESTS / name))
    for name in CRD_NAMES:
        wait_for(functools.partial(_established, cluster, name), 60, f"CRD {name} to be Established")


def _established(cluster: Cluster, name: str) -> bool:
    crd = cluster.api.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
    return any(c.get("type") == "Established" and c.get("status") == "True"
               for c in (crd.get("status") or {}).get("conditions") or [])


def start_kueue(cluster: Cluster, manager: bool, workload_concurrency: int | None = None,
                frameworks: tuple[str, ...] = FRAMEWORKS) -> Kueue:
    """Install the job CRDs and start the cluster's Kueue (a `ManagerKueue` on the manager) with the
    built-in `frameworks`: a worker started with `WORKER_FRAMEWORKS_TFJOB_OFF` leaves TFJobs to the
    operator (the manager keeps Kueue's TFJob integration, where its built-in MultiKueue adapter lives)."""
    install_job_crds(cluster)
    kueue = (ManagerKueue if manager else Kueue)(cluster, frameworks=frameworks)
    if isinstance(kueue, ManagerKueue):
        kueue.workload_concurrency = workload_concurrency
    kueue.stop()  # leftovers of a crashed run in this folder
    kueue.start()
    return kueue


def connect(manager: Cluster, workers: Mapping[str, Cluster], name: str = CONFIG_NAME) -> None:
    """Create the manager's Secrets, MultiKueueClusters, and the MultiKueueConfig and AdmissionCheck `name`."""
    create_all(manager, manager_objects({worker: cluster.kubeconfig.read_text() for worker, cluster in workers.items()},
                                        name))


def cluster_active(cluster: Cluster, plural: str, name: str) -> bool:
    """Whether a (cluster-scoped) Kueue object's `Active` condition is True."""
    try:
        found = cluster.api.get(f"/apis/{API_VERSION}/{plural}/{name}")
    except ApiError:
        return False
    conditions = (found.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Active" and c.get("status") == "True" for c in conditions)


MANAGER = "manager"
QUEUE_NAMESPACE = "default"
LOCAL_QUEUE = "lq"
CLUSTER_QUEUE = "cq"


def default_base() -> Path:
    """Where `tfjob-devcluster multikueue-up` keeps its clusters: one folder each, side by side."""
    return default_dir().parent / "multikueue"


def worker_names(workers: int) -> list[str]:
    return [f"worker-{index}" for index in range(1, workers + 1)]


def up(base: Path, workers: int, nodes: int, cpu: str, memory: str,
       workload_concurrency: int | None = None) -> dict[str, Cluster]:
    """Start the manager and `workers` workers under `base` (folders `manager`, `worker-1`, ...), a Kueue
    on each, connect them, and give each the ClusterQueue `cq` and the LocalQueue `lq` in `default`
    (`cpu`/`memory` of quota on each worker; on the manager that much per worker, behind the check)."""
    names = [MANAGER, *worker_names(workers)]
    clusters = {name: Cluster(base / name) for name in names}
    started: list[Cluster] = []
    try:
        for name in reversed(names):  # the workers first: the manager connects to them
            cluster = clusters[name]
            cluster.up(nodes=nodes)
            started.append(cluster)
            start_kueue(cluster, manager=name == MANAGER, workload_concurrency=workload_concurrency)
            dispatching = name == MANAGER
            quota = str(int(cpu) * workers) if dispatching and cpu.isdigit() else cpu
            create_all(cluster, queue_objects(CLUSTER_QUEUE, QUEUE_NAMESPACE, LOCAL_QUEUE, quota, memory,
                                              ADMISSION_CHECK if dispatching else None))
        connect(clusters[MANAGER], {name: clusters[name] for name in names[1:]})
    except BaseException:
        for cluster in started:
            down_one(cluster)
        raise
    return clusters


def down_one(cluster: Cluster) -> None:
    Kueue(cluster).stop()
    cluster.down()


def down(base: Path) -> list[str]:
    """Stop every cluster under `base` (and its Kueue); the names of the folders stopped."""
    stopped = []
    for folder in sorted(p for p in base.glob("*") if (p / "state.json").exists()):
        down_one(Cluster(folder))
        stopped.append(folder.name)
    return stopped
