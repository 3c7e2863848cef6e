"""Fixtures for the tests on real nodes: one local cluster for them whose only node is real (a
kubelet with containerd, real containers, a pod network, cluster DNS, kube-proxy and a NetworkPolicy
engine), the TensorFlow image imported into it, the CRD installed and the operator running against it.

With no fake node in the cluster, every pod lands on the real node and the examples run exactly as a
user applies them. Real containers are slow on two cores (a TensorFlow process takes seconds to
import), so the waits here are minutes, and each test says what it waited for when it fails.

Everything under tests/real is marked `real`; `make test-real` runs all of it, and `make test` runs
the scenarios marked `real_ci` (see the Makefile).
"""

from __future__ import annotations

import atexit
import os
import re
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devcluster.cluster import Cluster
from devcluster.images import build_images
from devcluster.realnodes import wait_until_free
from tests.real.costs import COSTS, record
from tests.real.kubectl import Kubectl, wait_for
from tests.support.operator import Operator

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CRD = ROOT / "manifests" / "crd.yaml"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.real)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call" and HERE in Path(report.fspath).resolve().parents:
        record(f"{report.nodeid.split('::', 1)[1]} ({report.outcome})", report.duration)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if COSTS:
        terminalreporter.section("what the real-node tests cost (wall seconds)")
        for what, seconds in COSTS:
            terminalreporter.write_line(f"{seconds:8.1f}  {what}")


# The real-node cluster and its operator live as long as the tests under tests/real ("package" scope),
# not as long as the pytest process: on parallel workers (tests/conftest.py keeps those tests together,
# on one worker) the worker goes on with other tests, and the machine's only real node is free again.
@pytest.fixture(scope="package")
def real_cluster() -> Iterator[Cluster]:
    """A cluster with one real node and no fake one, the TensorFlow image loaded, the CRD installed."""
    reuse = os.environ.get("TFJOB_REAL_DEVCLUSTER_DIR")  # a cluster started with `up --real-nodes 1 --nodes 0`
    if reuse:
        cluster = Cluster(reuse)
        prepare(cluster)
        yield cluster
        return
    yield from started_real_cluster(short_folder("real-devcluster"), real_nodes=1)


def short_folder(name: str) -> Path:
    """A fresh folder for a real cluster, directly under the temporary folder: the kubelet's unix sockets
    live below it, and a socket's path may be at most 107 bytes, which pytest's own folders (deeper
    still under parallel workers, `.../popen-gw2/...`) exceed."""
    return Path(tempfile.mkdtemp(prefix=f"{name}-"))


REAL_NODES_WAIT_S = 1800
"""How long a session queues behind another cluster's real nodes (one such cluster per machine) before
it fails naming that cluster: someone's experiment beside the suite delays it rather than failing it."""


def started_real_cluster(folder: Path, real_nodes: int) -> Iterator[Cluster]:
    """A cluster of `real_nodes` real nodes and no fake one in `folder`, prepared, stopped afterwards;
    started once no other cluster's real nodes run on this machine."""
    started = time.monotonic()
    wait_until_free(REAL_NODES_WAIT_S)
    record("waited for another cluster's real nodes to stop", time.monotonic() - started)
    cluster = Cluster(folder)
    atexit.register(cluster.down)
    try:
        started = time.monotonic()
        cluster.up(nodes=0, real_nodes=real_nodes, pod_logs=False, timeout=600)
        record(f"cluster up with {real_nodes} real node(s) (binaries built or reused)", time.monotonic() - started)
        prepare(cluster)
        yield cluster
    finally:
        cluster.down()
        atexit.unregister(cluster.down)


def prepare(cluster: Cluster) -> None:
    """The TensorFlow image imported (built on first use), the CRD installed and Established."""
    started = time.monotonic()
    cluster.load_images(build_images(which=("tensorflow",)).values())
    record("TensorFlow image built or reused, and imported", time.monotonic() - started)
    cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(CRD))
    wait_for(lambda: "Established" in cluster.kubectl(
        "get", "crd", "tensorflowjobs.kubeflow.org", "-o",
        "jsonpath={.status.conditions[?(@.status=='True')].type}", check=False).stdout, 60,
        "the CRD to be Established")


@pytest.fixture(scope="package")
def operator(real_cluster: Cluster) -> Iterator[Operator]:
    """The operator, out of cluster (a host process), with NetworkPolicies on as in production."""
    process = Operator(str(real_cluster.kubeconfig), "operator-real").start()
    yield process
    process.stop()


def _namespace_name(test_name: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", test_name.lower()).strip("-")[:40].strip("-")
    return f"{slug or 'test'}-{uuid.uuid4().hex[:6]}"


@pytest.fixture
def namespace(real_cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace; deleted afterwards, waiting for its pods to go so that the next test has the
    node's CPUs to itself."""
    name = _namespace_name(request.node.name)
    real_cluster.kubectl("create", "namespace", name)
    wait_for(lambda: real_cluster.kubectl("get", "serviceaccount", "default", "-n", name, check=False).returncode == 0,
             30, f"ServiceAccount default in namespace {name}")
    yield name
    real_cluster.kubectl("delete", "namespace", name, "--wait=true", "--timeout=120s", check=False, timeout=150)
    real_cluster.kubectl("delete", "persistentvolume", f"{name}-mnist-data", "--ignore-not-found", check=False)


@pytest.fixture
def kubectl(real_cluster: Cluster, namespace: str) -> Kubectl:
    return Kubectl(real_cluster, namespace)
