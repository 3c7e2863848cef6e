"""Fixtures for tests against a real Kueue running on the session's devcluster.

* `kueue` (session): builds or reuses the Kueue binary and CRDs (`build-binaries.sh kueue`, ~10 min
  cold, instant when cached), installs the CRDs and runs the manager (devcluster/kueue.py) until the
  session ends. With TFJOB_DEVCLUSTER_DIR, a manager already running there is reused and left running.
* `kueue_flavors` (session): ResourceFlavors `pool-a` (nodeLabels `tfjob-test/pool=a`, set here on
  the first two KWOK nodes, plus a toleration) and `default-flavor` (no labels).
* `kueue_priority_classes` (session): WorkloadPriorityClasses `high` (1000) and `low` (100).
* `kueue_queue` (per test): a ClusterQueue of its own with 8 CPUs and 64Gi in `pool-a`
  (namespaceSelector {}, preemption withinClusterQueue LowerPriority) and the LocalQueue `lq` in the
  test's namespace, both Active. A ClusterQueue per test keeps tests from sharing quota. At the end
  every Workload of the namespace is finished (else the quota would stay held until the namespace
  is gone), and both queues are deleted.
* `tensorflowjob_crd` (session) and `workloads` (per test, a small driver for the namespace's Workloads).
* `kind_jobs` (per test, the driver of the test's kind, `job_kind`, with the cluster's CRDs set for it)
  and `kueue_operator`: the session operator (default flags), started again first if it last started
  before Kueue's Configuration was written, since it discovers Kueue's API and reads that
  Configuration once, at start. It then serves every Kueue test that follows, as it serves the other
  tests; an operator per test cost each test two starts and two stops of an operator.
"""

from __future__ import annotations

import atexit
import contextlib
import pathlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from controller.kueue import protocol as kq
from devcluster.cluster import Cluster
from devcluster.kueue import Kueue
from kube import ApiError, Kube, resource_path
from tests.integration.controller.conftest import CrdScheme, TfJobs, jobs_driver
from tests.support.operator import Operator
from tests.support.polling import wait_for
from tfjob_api.timeutil import format_time, utcnow

CRD = pathlib.Path(__file__).resolve().parents[4] / "manifests" / "crd.yaml"
LOG_TAIL_LINES = 40

POOL_LABEL = "tfjob-test/pool"
POOL_TOLERATION = {"key": POOL_LABEL, "operator": "Equal", "value": "a", "effect": "NoSchedule"}
CPU_QUOTA = "8"


def kueue_path(plural: str, namespace: str | None = None, name: str | None = None, sub: str | None = None) -> str:
    return resource_path(kq.GROUP, kq.VERSION, plural, namespace, name, sub)


def _create_or_keep(api: Kube, path: str, body: dict[str, Any]) -> dict[str, Any]:
    try:
        return api.create(path, body)
    except ApiError as error:
        if not error.already_exists:
            raise
        return api.get(f"{path}/{body['metadata']['name']}")


def _active(api: Kube, path: str) -> bool:
    conditions = (api.get(path).get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Active" and c.get("status") == "True" for c in conditions)


@pytest.fixture(scope="session")
def kueue(cluster: Cluster) -> Iterator[Kueue]:
    """Kueue's manager running against the session cluster (see devcluster/kueue.py)."""
    manager = Kueue(cluster)
    if manager.is_running():  # a reused cluster (TFJOB_DEVCLUSTER_DIR) that already runs Kueue
        yield manager
        return
    atexit.register(manager.stop)
    try:
        start_with_retries(manager)
        yield manager
    finally:
        manager.stop()
        atexit.unregister(manager.stop)


def start_with_retries(manager: Kueue, attempts: int = 3) -> None:
    """Start Kueue, again (on new ports) when a start fails: a session fixture that fails fails every
    test that uses it, so a passing failure at start (a busy host) must not end the session's Kueue."""
    for attempt in range(1, attempts + 1):
        try:
            manager.start()
            return
        except Exception:
            if attempt == attempts:
                raise


@pytest.fixture(scope="session")
def kueue_api(cluster: Cluster) -> Iterator[Kube]:
    client = Kube.from_kubeconfig(str(cluster.kubeconfig))
    yield client
    client.close()


@pytest.fixture(scope="session")
def tensorflowjob_crd(cluster: Cluster, kueue_api: Kube) -> None:
    """The TensorFlowJob CRD, Established (Workloads are owned by real jobs, so garbage collection
    does not delete them as orphans)."""
    cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(CRD))
    wait_for(lambda: _crd_established(kueue_api, "tensorflowjobs.kubeflow.org"), 60,
             "the TensorFlowJob CRD to be Established")


def _crd_established(api: Kube, name: str) -> bool:
    crd = api.get(resource_path("apiextensions.k8s.io", "v1", "customresourcedefinitions", None, name))
    return any(c["type"] == "Established" and c["status"] == "True" for c in (crd.get("status") or {}).get("conditions") or [])


@dataclass(frozen=True)
class Flavors:
    labelled: str  # "pool-a": nodeLabels {POOL_LABEL: "a"} and POOL_TOLERATION
    plain: str  # "default-flavor": no node labels
    labelled_nodes: tuple[str, ...]  # the nodes carrying POOL_LABEL=a


@pytest.fixture(scope="session")
def kueue_flavors(cluster: Cluster, kueue: Kueue, kueue_api: Kube) -> Flavors:
    nodes = tuple(cluster.nodes[:2])
    for node in nodes:
        kueue_api.patch(resource_path("", "v1", "nodes", None, node), {"metadata": {"labels": {POOL_LABEL: "a"}}})
    _create_or_keep(kueue_api, kueue_path("resourceflavors"), {
        "apiVersion": kq.API_VERSION, "kind": "ResourceFlavor", "metadata": {"name": "pool-a"},
        "spec": {"nodeLabels": {POOL_LABEL: "a"}, "tolerations": [POOL_TOLERATION]}})
    _create_or_keep(kueue_api, kueue_path("resourceflavors"), {
        "apiVersion": kq.API_VERSION, "kind": "ResourceFlavor", "metadata": {"name": "default-flavor"}, "spec": {}})
    return Flavors(labelled="pool-a", plain="default-flavor", labelled_nodes=nodes)


@pytest.fixture(scope="session")
def kueue_priority_classes(kueue: Kueue, kueue_api: Kube) -> dict[str, int]:
    """WorkloadPriorityClass name → value."""
    values = {"high": 1000, "low": 100}
    for name, value in values.items():
        _create_or_keep(kueue_api, kueue_path("workloadpriorityclasses"), {
            "apiVersion": kq.API_VERSION, "kind": "WorkloadPriorityClass", "metadata": {"name": name}, "value": value})
    return values


class Workloads:
    """Create, read and patch the Workloads of one namespace, with the protocol's pure functions."""

    def __init__(self, api: Kube, namespace: str) -> None:
        self.api = api
        self.namespace = namespace

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        return self.api.create(kq.workload_path(self.namespace), body)

    def get(self, name: str) -> dict[str, Any]:
        return self.api.get(kq.workload_path(self.namespace, name))

    def list(self) -> list[dict[str, Any]]:
        return self.api.list(kq.workload_path(self.namespace))["items"]

    def wait(self, name: str, check: Callable[[kq.Admission], bool], what: str, timeout: float = 30) -> dict[str, Any]:
        """Poll until check(admission(workload)) holds; return the Workload."""
        def ready() -> dict[str, Any] | None:
            workload = self.get(name)
            return workload if check(kq.admission(workload)) else None
        try:
            return wait_for(ready, timeout, f"Workload {name} {what}")
        except AssertionError as error:
            raise AssertionError(f"{error}; status: {self.get(name).get('status')}") from None

    def patch_status(self, name: str, make_patch: Callable[[dict[str, Any]], dict[str, Any] | None]) -> bool:
        """GET, compute a status merge patch, PATCH it (resourceVersion-guarded); on 409 Conflict
        re-read and recompute. False when make_patch says there is nothing to do."""
        for _ in range(10):
            patch = make_patch(self.get(name))
            if patch is None:
                return False
            try:
                self.api.patch(kq.workload_path(self.namespace, name, "status"), patch)
                return True
            except ApiError as error:
                if not error.conflict:
                    raise
        raise AssertionError(f"Workload {name}: status patch kept conflicting")

    def finish(self, name: str, succeeded: bool = True, message: str = "job finished") -> None:
        """What the operator does when the job finished: Finished=True, which releases the quota."""
        self.patch_status(name, lambda w: kq.finish_status(w, succeeded, message, format_time(utcnow())))

    def release_all(self) -> None:
        """Finish every Workload of the namespace (test clean-up)."""
        for workload in self.list():
            with contextlib.suppress(ApiError):
                self.finish(workload["metadata"]["name"], True, "test clean-up")


@pytest.fixture
def workloads(kueue_api: Kube, namespace: str) -> Workloads:
    return Workloads(kueue_api, namespace)


@dataclass(frozen=True)
class Queue:
    cluster_queue: str
    local_queue: str
    namespace: str
    flavor: str


@pytest.fixture
def kueue_queue(kueue: Kueue, kueue_api: Kube, kueue_flavors: Flavors, tensorflowjob_crd: None, namespace: str,
                workloads: Workloads) -> Iterator[Queue]:
    cluster_queue = f"cq-{namespace}"
    _create_or_keep(kueue_api, kueue_path("clusterqueues"), {
        "apiVersion": kq.API_VERSION, "kind": "ClusterQueue", "metadata": {"name": cluster_queue},
        "spec": {"namespaceSelector": {},  # nil would match no namespace at all
                 "preemption": {"withinClusterQueue": "LowerPriority"},
                 "resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [
                     {"name": kueue_flavors.labelled, "resources": [{"name": "cpu", "nominalQuota": CPU_QUOTA},
                                                                    {"name": "memory", "nominalQuota": "64Gi"}]}]}]}})
    _create_or_keep(kueue_api, kueue_path("localqueues", namespace), {
        "apiVersion": kq.API_VERSION, "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": namespace},
        "spec": {"clusterQueue": cluster_queue}})
    wait_for(lambda: _active(kueue_api, kueue_path("clusterqueues", name=cluster_queue)), 30,
             f"ClusterQueue {cluster_queue} to be Active")
    wait_for(lambda: _active(kueue_api, kueue_path("localqueues", namespace, "lq")), 30, "LocalQueue lq to be Active")
    yield Queue(cluster_queue=cluster_queue, local_queue="lq", namespace=namespace, flavor=kueue_flavors.labelled)
    workloads.release_all()
    for path in (kueue_path("localqueues", namespace, "lq"), kueue_path("clusterqueues", name=cluster_queue)):
        with contextlib.suppress(ApiError):
            kueue_api.delete(path)


@pytest.fixture
def kind_jobs(api: Kube, namespace: str, cluster: Any, crd_scheme: CrdScheme, job_kind: str) -> TfJobs:
    """The driver of the test's kind, the cluster's CRDs set for it (before the operators are arranged)."""
    return jobs_driver(api, namespace, cluster, crd_scheme, job_kind)


def kueue_configured_at(kueue: Kueue) -> float:
    """When a Kueue manager of this cluster was last configured: the modification time of its
    Configuration file, written (by whichever `Kueue` started it) after its CRDs were installed and
    just before the Configuration was published in the cluster."""
    return kueue.config_file.stat().st_mtime


@pytest.fixture
def kueue_operator(kueue: Kueue, kueue_flavors: Any, kueue_priority_classes: Any, operator: Operator) -> Operator:
    """The session operator, started after Kueue's current Configuration (started again if it is
    older: Kueue came up after it, or a Kueue with other integrations replaced the session's)."""
    if not operator.running() or (operator.started_at or 0.0) <= kueue_configured_at(kueue):
        operator.stop()
        operator.start()
    return operator



@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call" and report.failed:
        manager = getattr(item, "funcargs", {}).get("kueue")
        if isinstance(manager, Kueue):
            report.sections.append((f"kueue log (last {LOG_TAIL_LINES} lines)", manager.logs(tail=LOG_TAIL_LINES)))
    return report
