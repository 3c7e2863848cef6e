"""Two local control planes, a real Kueue on each, the operator on both: MultiKueue end to end.

* `multikueue` (session): a manager and a worker devcluster side by side (folders of their own, ports
  picked free), each serving both kinds with a Kueue (batch/job and Kueue's TFJob integration) and an
  operator; the manager's Kueue is configured for MultiKueue and connected to the worker
  (devcluster/multikueue.py). Everything is stopped at the end of the session.
* `mk` (per test): a namespace of its own on both clusters, with on each a ClusterQueue and the
  LocalQueue `lq` -- on the manager carrying the MultiKueue admission check, on the worker the quota.
* `tfjob_off_worker` (session) and `mk_off` (per test): a worker whose Kueue runs without its TFJob
  integration (the operator queues TFJobs there), the manager dispatching to it alone through the
  admission check `tfjob-off`.
* `second_worker` (session) and `mk2` (per test): a third cluster, and the manager dispatching to
  both workers through the admission check `two-workers`, each worker with quota for one job.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from devcluster import multikueue
from devcluster.cluster import Cluster
from devcluster.kueue import Kueue
from kube import ApiError, Kube, resource_path
from tests.support.operator import Operator
from tests.support.polling import wait_for

LOG_TAIL_LINES = 40
TWO_WORKERS = "two-workers"
TFJOB_OFF = "tfjob-off"


@dataclass
class Side:
    """One cluster of the pair: the cluster, its Kueue, its operator and a client."""

    name: str
    cluster: Cluster
    kueue: Kueue
    operator: Operator
    api: Kube

    def pods(self, namespace: str) -> list[dict[str, Any]]:
        return self.api.list(resource_path("", "v1", "pods", namespace))["items"]

    def get(self, path: str) -> dict[str, Any] | None:
        try:
            return self.api.get(path)
        except ApiError as error:
            if error.not_found:
                return None
            raise


@dataclass
class Pair:
    manager: Side
    worker: Side


def _start(name: str, folder: Path, manager: bool, stack: contextlib.ExitStack,
           frameworks: tuple[str, ...] = multikueue.FRAMEWORKS) -> Side:
    cluster = Cluster(folder)
    atexit.register(cluster.down)
    stack.callback(atexit.unregister, cluster.down)
    stack.callback(cluster.down)
    cluster.up(nodes=2, pod_logs=not manager)  # no pod on a manager: no logs to write there
    kueue = multikueue.start_kueue(cluster, manager=manager, frameworks=frameworks)
    stack.callback(kueue.stop)
    operator = Operator(str(cluster.kubeconfig), f"multikueue-{name}").start()
    stack.callback(operator.stop)
    api = Kube.from_kubeconfig(str(cluster.kubeconfig))
    stack.callback(api.close)
    return Side(name, cluster, kueue, operator, api)


@pytest.fixture(scope="session")
def multikueue_pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    with contextlib.ExitStack() as stack:
        worker = _start("worker", tmp_path_factory.mktemp("mk-worker"), False, stack)
        manager = _start("manager", tmp_path_factory.mktemp("mk-manager"), True, stack)
        multikueue.connect(manager.cluster, {"worker": worker.cluster})
        wait_for(lambda: _active(manager, "multikueueclusters", "worker"), 60, "MultiKueueCluster worker Active")
        wait_for(lambda: _active(manager, "admissionchecks", multikueue.ADMISSION_CHECK), 60,
                 "AdmissionCheck multikueue Active")
        yield Pair(manager, worker)


def _active(side: Side, plural: str, name: str) -> bool:
    return multikueue.cluster_active(side.cluster, plural, name)


@dataclass
class Mk:
    """A test's namespace on the manager and its workers (the first worker is the pair's)."""

    manager: Side
    workers: list[Side]
    namespace: str

    @property
    def worker(self) -> Side:
        return self.workers[0]

    def side(self, name: str) -> Side:
        return next(side for side in (self.manager, *self.workers) if side.name == name)


def _namespace(request: pytest.FixtureRequest, manager: Side, workers: list[Side], worker_cpu: str,
               check: str) -> Iterator[Mk]:
    """A namespace on every side, with a ClusterQueue and the LocalQueue `lq`: `worker_cpu` CPUs on
    each worker, 4 on the manager (where the ClusterQueue carries the admission check `check`)."""
    slug = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")[:30].strip("-")
    namespace = f"{slug}-{uuid.uuid4().hex[:6]}"
    cluster_queue = f"cq-{namespace}"
    for side in (*workers, manager):
        cpu, admission_check = ("4", check) if side is manager else (worker_cpu, None)
        multikueue.create_all(side.cluster, multikueue.queue_objects(cluster_queue, namespace, "lq", cpu, "16Gi",
                                                                     admission_check))
        wait_for(functools.partial(_active, side, "clusterqueues", cluster_queue), 60,
                 f"ClusterQueue {cluster_queue} Active on the {side.name}")
    yield Mk(manager, workers, namespace)
    for side in (manager, *workers):
        with contextlib.suppress(ApiError, OSError):
            side.api.delete(resource_path("", "v1", "namespaces", None, namespace))


@pytest.fixture
def mk(multikueue_pair: Pair, request: pytest.FixtureRequest) -> Iterator[Mk]:
    """The manager and one worker with quota for four one-CPU jobs."""
    yield from _namespace(request, multikueue_pair.manager, [multikueue_pair.worker], "4",
                          multikueue.ADMISSION_CHECK)


@pytest.fixture(scope="session")
def second_worker(multikueue_pair: Pair, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Side]:
    """A second worker, and the manager's MultiKueueConfig and AdmissionCheck `two-workers` naming both."""
    with contextlib.ExitStack() as stack:
        worker = _start("worker-2", tmp_path_factory.mktemp("mk-worker-2"), False, stack)
        workers = {"worker": multikueue_pair.worker.cluster, "worker-2": worker.cluster}
        multikueue.connect(multikueue_pair.manager.cluster, workers, TWO_WORKERS)
        wait_for(lambda: _active(multikueue_pair.manager, "admissionchecks", TWO_WORKERS), 60,
                 f"AdmissionCheck {TWO_WORKERS} Active")
        yield worker


@pytest.fixture
def mk2(multikueue_pair: Pair, second_worker: Side, request: pytest.FixtureRequest) -> Iterator[Mk]:
    """The manager and two workers with quota for one one-CPU job each."""
    yield from _namespace(request, multikueue_pair.manager, [multikueue_pair.worker, second_worker], "1",
                          TWO_WORKERS)


@pytest.fixture(scope="session")
def tfjob_off_worker(multikueue_pair: Pair, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Side]:
    """A worker whose Kueue has its TFJob integration off (its operator, on `--kueue-tfjob=auto`, queues
    TFJobs itself), and the manager's MultiKueueConfig and AdmissionCheck `tfjob-off` naming it alone."""
    with contextlib.ExitStack() as stack:
        worker = _start(TFJOB_OFF, tmp_path_factory.mktemp("mk-tfjob-off"), False, stack,
                        frameworks=multikueue.WORKER_FRAMEWORKS_TFJOB_OFF)
        multikueue.connect(multikueue_pair.manager.cluster, {TFJOB_OFF: worker.cluster}, TFJOB_OFF)
        wait_for(lambda: _active(multikueue_pair.manager, "admissionchecks", TFJOB_OFF), 60,
                 f"AdmissionCheck {TFJOB_OFF} Active")
        yield worker


@pytest.fixture
def mk_off(multikueue_pair: Pair, tfjob_off_worker: Side, request: pytest.FixtureRequest) -> Iterator[Mk]:
    """The manager and the worker without Kueue's TFJob integration, with quota for four one-CPU jobs."""
    yield from _namespace(request, multikueue_pair.manager, [tfjob_off_worker], "4", TFJOB_OFF)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call" and report.failed:
        funcargs = getattr(item, "funcargs", {})
        pair = funcargs.get("mk") or funcargs.get("mk2") or funcargs.get("mk_off")
        if isinstance(pair, Mk):
            for side in (pair.manager, *pair.workers):
                report.sections.append((f"{side.name} kueue log", side.kueue.logs(tail=LOG_TAIL_LINES)))
                report.sections.append((f"{side.name} operator log", side.operator.tail()))
    return report
