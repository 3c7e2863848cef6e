"""InformerFactory and PathListerWatcher: one informer per name, the paths and selectors they list and watch."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from informers.factory import InformerFactory
from informers.informer import SharedInformer
from informers.listwatch import PathListerWatcher
from informers.store import Store
from informers.testing import FakeWatch, page, pod, wait_until

Obj = dict[str, Any]


class FakeClient:
    """Records list/watch calls like kube.Kube would receive them; watches idle."""

    def __init__(self) -> None:
        self.lists: list[tuple[str, dict[str, Any]]] = []
        self.watches: list[tuple[str, dict[str, Any]]] = []
        self.open: list[FakeWatch] = []
        self.lock = threading.Lock()

    def list(self, path: str, **query: Any) -> Obj:
        with self.lock:
            self.lists.append((path, query))
        items = [pod("p", "5", namespace=path.split("/")[4])] if "/namespaces/" in path else []
        return page(items, "10")

    def watch(self, path: str, *, resource_version: str, timeout_seconds: int, read_timeout: float, **query: Any) -> FakeWatch:
        stream = FakeWatch([], then="block")
        with self.lock:
            self.watches.append((path, {"resource_version": resource_version, **query}))
            self.open.append(stream)
        return stream



JOB_NAME_LABEL = "tensorflowjob.kubeflow.org/job-name"


def tfjobs_informer(factory: InformerFactory) -> SharedInformer:
    return factory.for_resource("tensorflowjobs", "kubeflow.org", "v1", "tensorflowjobs")


def pods_informer(factory: InformerFactory) -> SharedInformer:
    return factory.for_resource("pods", "", "v1", "pods", label_selector=JOB_NAME_LABEL)


def services_informer(factory: InformerFactory) -> SharedInformer:
    return factory.for_resource("services", "", "v1", "services", label_selector=JOB_NAME_LABEL)


def nodes_informer(factory: InformerFactory) -> SharedInformer:
    return factory.for_resource("nodes", "", "v1", "nodes", namespaced=False)


@pytest.fixture
def client() -> FakeClient:
    return FakeClient()


@pytest.fixture
def factory(client: FakeClient) -> Iterator[InformerFactory]:
    f = InformerFactory(client)
    yield f
    f.stop()


def test_tfjobs_are_listed_in_every_namespace_through_the_custom_resource_path(factory: InformerFactory, client: FakeClient) -> None:
    tfjobs_informer(factory)
    factory.start()
    assert factory.wait_for_sync(10)
    assert client.lists == [("/apis/kubeflow.org/v1/tensorflowjobs", {"limit": 500})]


def test_pods_and_services_are_selected_by_the_job_name_label(factory: InformerFactory, client: FakeClient) -> None:
    pods_informer(factory)
    services_informer(factory)
    factory.start()
    assert factory.wait_for_sync(10)
    assert sorted(client.lists) == [
        ("/api/v1/pods", {"labelSelector": JOB_NAME_LABEL, "limit": 500}),
        ("/api/v1/services", {"labelSelector": JOB_NAME_LABEL, "limit": 500}),
    ]


def test_the_watch_continues_from_the_list_with_the_same_selector(factory: InformerFactory, client: FakeClient) -> None:
    pods_informer(factory)
    factory.start()
    assert factory.wait_for_sync(10)
    assert wait_until(lambda: len(client.watches) == 1)
    assert client.watches[0] == ("/api/v1/pods", {"resource_version": "10", "labelSelector": JOB_NAME_LABEL})


def test_given_namespaces_get_one_reflector_each_and_one_store(client: FakeClient) -> None:
    factory = InformerFactory(client, namespaces=["team-a", "team-b", "team-a"])
    try:
        jobs = tfjobs_informer(factory)
        pods = pods_informer(factory)
        factory.start()
        assert factory.wait_for_sync(10)
        assert sorted(p for p, _ in client.lists) == [
            "/api/v1/namespaces/team-a/pods",
            "/api/v1/namespaces/team-b/pods",
            "/apis/kubeflow.org/v1/namespaces/team-a/tensorflowjobs",
            "/apis/kubeflow.org/v1/namespaces/team-b/tensorflowjobs",
        ]
        assert len(jobs.reflectors) == 2
        assert sorted(pods.store.list_keys()) == ["team-a/p", "team-b/p"]
    finally:
        factory.stop()


def test_nodes_are_cluster_scoped_even_with_namespaces(client: FakeClient) -> None:
    factory = InformerFactory(client, namespaces=["team-a"])
    try:
        nodes_informer(factory)
        factory.start()
        assert factory.wait_for_sync(10)
        assert client.lists == [("/api/v1/nodes", {"limit": 500})]
    finally:
        factory.stop()


def test_each_resource_gets_one_shared_informer(factory: InformerFactory) -> None:
    assert pods_informer(factory) is pods_informer(factory)
    assert tfjobs_informer(factory) is not pods_informer(factory)
    assert set(factory.informers) == {"pods", "tensorflowjobs"}


def test_an_informer_built_after_start_starts_at_once(factory: InformerFactory, client: FakeClient) -> None:
    factory.start()
    services = services_informer(factory)
    assert services.wait_for_sync(10)


def test_stop_stops_every_informer_and_closes_the_watches(client: FakeClient) -> None:
    factory = InformerFactory(client)
    tfjobs_informer(factory)
    pods_informer(factory)
    factory.start()
    assert factory.wait_for_sync(10)
    factory.stop()
    assert all(not t.is_alive() for i in factory.informers.values() for t in i.threads)
    assert all(w.closed.is_set() for w in client.open)


def test_for_resource_builds_any_collection(factory: InformerFactory, client: FakeClient) -> None:
    factory.for_resource("leases", "coordination.k8s.io", "v1", "leases", field_selector="metadata.name=x")
    factory.start()
    assert factory.wait_for_sync(10)
    assert client.lists == [("/apis/coordination.k8s.io/v1/leases", {"fieldSelector": "metadata.name=x", "limit": 500})]


def test_path_lister_watcher_passes_continue_and_describes_itself(client: FakeClient) -> None:
    source = PathListerWatcher(client, "/api/v1/pods", label_selector="a")
    source.list(limit=10, continue_token="tok")
    assert client.lists == [("/api/v1/pods", {"labelSelector": "a", "limit": 10, "continue": "tok"})]
    assert source.description == "/api/v1/pods (a)"


def test_a_given_store_is_the_one_the_informer_fills(factory: InformerFactory) -> None:
    store = Store()
    assert factory.for_resource("pods", "", "v1", "pods", store=store).store is store
