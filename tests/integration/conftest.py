"""Fixtures for integration tests: one local control plane per session, one namespace per test.

Starting a control plane costs seconds, so the `cluster` fixture starts one per test session
(4 KWOK nodes with 32 CPUs, 256Gi, 110 pods and 8 GPUs each) and always stops it, also after a
failure or Ctrl-C. Tests isolate themselves with the function-scoped `namespace` fixture
instead. When a test fails, the tail of every component's log is attached to its report, since
the cause is often on the server side.

Everything under tests/integration is marked `integration` automatically, so
`pytest -m "not integration"` runs without a control plane.

Set TFJOB_DEVCLUSTER_DIR to the folder of a cluster already started with
`tfjob-devcluster up --dir ...` to reuse it (it is then left running).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import uuid
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

from devcluster.api import ApiError
from devcluster.cluster import Cluster
from devcluster.components import COMPONENTS
from tests.support.polling import wait_for

HERE = Path(__file__).resolve().parent
LOG_TAIL_LINES = 40


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A running devcluster shared by the whole session (see devcluster.cluster.Cluster)."""
    reuse = os.environ.get("TFJOB_DEVCLUSTER_DIR")
    if reuse:
        existing = Cluster(reuse)
        stopped = [c for c in COMPONENTS if not existing.is_running(c)]
        if stopped:
            raise RuntimeError(f"TFJOB_DEVCLUSTER_DIR={reuse}: {', '.join(stopped)} not running "
                               f"(start it with `tfjob-devcluster up --dir {reuse}`)")
        yield existing
        return
    c = Cluster(tmp_path_factory.mktemp("devcluster"))
    atexit.register(c.down)  # a safety net in case the session dies before teardown
    try:
        c.up(nodes=4, cpus="32", memory="256Gi", pods="110", gpus=8)
        yield c
    finally:
        c.down()
        atexit.unregister(c.down)


def restart_stopped_components(cluster: Cluster) -> None:
    """Start again any component of the shared cluster that is not running (a test that stopped one
    failed before starting it again, or it died): that test fails, the ones after it do not."""
    for component in cluster.components:
        if not cluster.is_running(component):
            cluster.start_component(component)


def _namespace_name(test_name: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", test_name.lower()).strip("-")[:40].strip("-")
    return f"{slug or 'test'}-{uuid.uuid4().hex[:6]}"


@pytest.fixture
def namespace(cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[str]:
    """The name of a fresh namespace (with its `default` ServiceAccount), deleted afterwards
    without waiting for the deletion to finish."""
    restart_stopped_components(cluster)
    name = _namespace_name(request.node.name)
    cluster.api.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    # The ServiceAccount admission plugin is on: pods need the default ServiceAccount,
    # which the controller-manager creates right after the namespace.
    wait_for(lambda: cluster.api.get(f"/api/v1/namespaces/{name}/serviceaccounts/default"), 30,
             f"ServiceAccount default in namespace {name}", ignoring=ApiError)  # 404 until it is made
    yield name
    with contextlib.suppress(ApiError, OSError):  # a test may have deleted it already
        cluster.api.delete(f"/api/v1/namespaces/{name}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.failed and "cluster" in getattr(item, "fixturenames", ()):
        cluster = getattr(item, "funcargs", {}).get("cluster")
        if isinstance(cluster, Cluster):
            for component in COMPONENTS:
                tail = cluster.logs(component, tail=LOG_TAIL_LINES)
                if tail:
                    report.sections.append((f"devcluster {component} log (last {LOG_TAIL_LINES} lines)", tail))
    return report
