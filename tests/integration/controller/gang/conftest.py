"""Fixtures for tests against a real gang scheduler (kubernetes-sigs scheduler-plugins' Coscheduling).

* `scheduler_plugins` (session): builds or reuses the scheduler, its controller and the PodGroup and
  ElasticQuota CRDs (`build-binaries.sh scheduler-plugins`), installs the CRDs and runs both beside
  the devcluster's kube-scheduler (devcluster/schedulerplugins.py) until the session ends. Pods
  reach it with `spec.schedulerName: SCHEDULER_NAME` and join a PodGroup with the label
  `POD_GROUP_LABEL: <group>`. With TFJOB_DEVCLUSTER_DIR, one already running there (`tfjob-devcluster
  up --gang-scheduler scheduler-plugins`) is reused and left running.
* `volcano` (session): builds or reuses the Volcano scheduler and its CRDs (`build-binaries.sh
  volcano`), installs the CRDs and the Queue `default` and runs it beside the devcluster's
  kube-scheduler (devcluster/volcano.py) until the session ends. Pods reach it with
  `spec.schedulerName: volcano` and join a scheduling.volcano.sh PodGroup with the annotation
  `scheduling.k8s.io/group-name: <group>`. With TFJOB_DEVCLUSTER_DIR, one already running there
  (`tfjob-devcluster up --gang-scheduler volcano`) is reused and left running.
* `pod_group_api` (session): only the CRDs, downloaded with the module (no build): the PodGroup API
  served without the scheduler, for `make test`.
* `gang_pool` (per test): a factory, `gang_pool(cpus=5, nodes=2, memory="64Gi", pods=110, gpus=0) ->
  GangPool`, that adds KWOK nodes of exactly that capacity (nvidia.com/gpu only when gpus > 0) for the test alone: each carries the label and the
  NoSchedule taint `tfjob-test/gang-pool=<pool id>`, so pods land there only when they select and
  tolerate it (`GangPool.placement()`: a nodeSelector and tolerations to merge into a pod spec),
  and pods of other tests, which tolerate no such taint, never do. The nodes are Ready and free of
  the node lifecycle's start-up taints when the factory returns, and are deleted after the test,
  right after the pods of the test's namespace.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from devcluster.cluster import Cluster
from devcluster.components import KUBELET_ADDRESS, KWOK_NODE_ANNOTATION
from devcluster.schedulerplugins import CONTROLLER, SCHEDULER, SchedulerPlugins, fetch_crds
from devcluster.volcano import SCHEDULER as VOLCANO_SCHEDULER
from devcluster.volcano import Volcano
from kube import ApiError, Kube, resource_path
from tests.support.polling import wait_for

LOG_TAIL_LINES = 40
POOL_KEY = "tfjob-test/gang-pool"
# Pool nodes' InternalIPs: apart from the devcluster's (10.240.x.y) and add_node's (10.241.x.y).
POOL_IP_PREFIX = "10.242"


@pytest.fixture(scope="session")
def pod_group_api(cluster: Cluster) -> None:
    """The PodGroup and ElasticQuota CRDs served, without the scheduler (`fetch_crds`: seconds, nothing
    built): for the operator's PodGroups in `make test`, whose budget has no room for the scheduler's
    build."""
    SchedulerPlugins(cluster, bin_dir=fetch_crds()).install_crds()


@pytest.fixture(scope="session")
def scheduler_plugins(cluster: Cluster) -> Iterator[SchedulerPlugins]:
    """The scheduler-plugins scheduler and controller running against the session cluster."""
    gang = SchedulerPlugins(cluster)
    if gang.is_running():  # a reused cluster (TFJOB_DEVCLUSTER_DIR) that already runs it
        yield gang
        return
    atexit.register(gang.stop)
    try:
        gang.start()
        yield gang
    finally:
        gang.stop()
        atexit.unregister(gang.stop)


@pytest.fixture(scope="session")
def volcano(cluster: Cluster) -> Iterator[Volcano]:
    """The Volcano scheduler running against the session cluster."""
    scheduler = Volcano(cluster)
    if scheduler.is_running():  # a reused cluster (TFJOB_DEVCLUSTER_DIR) that already runs it
        yield scheduler
        return
    atexit.register(scheduler.stop)
    try:
        scheduler.start()
        yield scheduler
    finally:
        scheduler.stop()
        atexit.unregister(scheduler.stop)


@dataclass(frozen=True)
class GangPool:
    """KWOK nodes of one test: `nodes` nodes of `cpus` CPUs each, usable only by pods given `placement()`."""

    id: str
    nodes: tuple[str, ...]
    cpus: int  # per node
    memory: str  # per node
    pods: int  # per node
    gpus: int  # per node (nvidia.com/gpu)

    @property
    def node_selector(self) -> dict[str, str]:
        return {POOL_KEY: self.id}

    @property
    def tolerations(self) -> list[dict[str, str]]:
        return [{"key": POOL_KEY, "operator": "Equal", "value": self.id, "effect": "NoSchedule"}]

    def placement(self) -> dict[str, Any]:
        """The pod-spec fields that put a pod on this pool (and only here): nodeSelector, tolerations."""
        return {"nodeSelector": self.node_selector, "tolerations": self.tolerations}


def _pool_node(name: str, pool_id: str, ip: str, cpus: int, memory: str, pods: int, gpus: int) -> dict[str, Any]:
    """A KWOK-managed node like the devcluster's own (devcluster.cluster), of the given capacity,
    labelled and tainted for one pool."""
    key, value = KWOK_NODE_ANNOTATION
    resources = {"cpu": str(cpus), "memory": memory, "pods": str(pods), "ephemeral-storage": "1Ti",
                 **({"nvidia.com/gpu": str(gpus)} if gpus else {})}
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "annotations": {key: value, "node.alpha.kubernetes.io/ttl": "0"},
                     "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                "kubernetes.io/arch": "amd64", "type": "kwok", POOL_KEY: pool_id}},
        "spec": {"taints": [{"key": POOL_KEY, "value": pool_id, "effect": "NoSchedule"}]},
        "status": {"allocatable": resources, "capacity": resources,
                   "addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": name},
                                 {"type": "InternalDNS", "address": KUBELET_ADDRESS}]},
    }


def _usable(node: dict[str, Any]) -> bool:
    """Ready, and without the node lifecycle's not-ready/unreachable taints (only the pool's own)."""
    ready = any(c["type"] == "Ready" and c["status"] == "True" for c in node.get("status", {}).get("conditions") or [])
    taints = node.get("spec", {}).get("taints") or []
    return ready and not any(t["key"].startswith("node.kubernetes.io/") for t in taints)


_pool_numbers = itertools.count(1)


@pytest.fixture
def gang_pool(cluster: Cluster, api: Kube, namespace: str) -> Iterator[Callable[..., GangPool]]:
    """A factory of node pools for this test alone (see the module docstring). At the end the pods of
    the test's namespace are deleted, then the nodes (the namespace itself goes later)."""
    created: list[str] = []

    def make(cpus: int = 5, nodes: int = 2, memory: str = "64Gi", pods: int = 110, gpus: int = 0) -> GangPool:
        number = next(_pool_numbers)
        pool_id = f"pool-{uuid.uuid4().hex[:8]}"
        names = tuple(f"gang-{pool_id[5:]}-{i}" for i in range(nodes))
        for i, name in enumerate(names):
            ip = f"{POOL_IP_PREFIX}.{number % 250}.{i % 250 + 1}"
            api.create(resource_path("", "v1", "nodes"), _pool_node(name, pool_id, ip, cpus, memory, pods, gpus))
            created.append(name)
        wait_for(lambda: all(_usable(api.get(resource_path("", "v1", "nodes", None, n))) for n in names), 60,
                 f"pool nodes {', '.join(names)} Ready and without start-up taints")
        return GangPool(id=pool_id, nodes=names, cpus=cpus, memory=memory, pods=pods, gpus=gpus)

    yield make
    # The namespace fixture deletes the namespace only after this teardown: delete its pods first
    # (at once: grace 0), so that no pod outlives its node.
    with contextlib.suppress(ApiError):
        api.request("DELETE", resource_path("", "v1", "pods", namespace), query={"gracePeriodSeconds": 0})
    for name in created:
        with contextlib.suppress(ApiError):
            api.delete(resource_path("", "v1", "nodes", None, name))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call" and report.failed:
        gang = getattr(item, "funcargs", {}).get("scheduler_plugins")
        if isinstance(gang, SchedulerPlugins):
            for binary in (SCHEDULER, CONTROLLER):
                report.sections.append((f"{binary} log (last {LOG_TAIL_LINES} lines)",
                                        gang.logs(binary, tail=LOG_TAIL_LINES)))
        volcano = getattr(item, "funcargs", {}).get("volcano")
        if isinstance(volcano, Volcano):
            report.sections.append((f"{VOLCANO_SCHEDULER} log (last {LOG_TAIL_LINES} lines)",
                                    volcano.logs(tail=LOG_TAIL_LINES)))
    return report
