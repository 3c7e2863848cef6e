"""Fixtures for the real-node scenarios that need two real nodes: the session's cluster has two
(`real-node-0` and `real-node-1`, each a kubelet with its own containerd, one pod network between
them) and no fake node; everything else (namespace, kubectl, the operator) is tests/real/conftest.py's,
built on this `real_cluster` instead of the one-node one. The two nodes share the host's network
namespace, so one CoreDNS, one kube-proxy and one kube-router serve both; kube-router enforces
NetworkPolicies for `real-node-0`'s pods only (it polices the pods of the node it is started for).

Only one cluster with real nodes can run on a machine at a time (devcluster/realnodes.py `claim`), so
these tests never share a pytest session with the one-node tests: they are marked `real_two_nodes`, and
`make test-real` runs them in a pytest run of their own after the others.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from devcluster.cluster import Cluster
from tests.real.conftest import prepare, short_folder, started_real_cluster

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.real_two_nodes)


@pytest.fixture(scope="session")
def real_cluster() -> Iterator[Cluster]:
    """A cluster with two real nodes and no fake one, the TensorFlow image in both, the CRD installed."""
    reuse = os.environ.get("TFJOB_REAL_TWO_NODES_DEVCLUSTER_DIR")  # started with `up --real-nodes 2 --nodes 0`
    if reuse:
        cluster = Cluster(reuse)
        prepare(cluster)
        yield cluster
        return
    yield from started_real_cluster(short_folder("real-2nodes"), real_nodes=2)
