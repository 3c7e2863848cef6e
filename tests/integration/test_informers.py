"""Integration tests of `kube/client.py` and the informers against the local control plane.

Scope: the client boundary on a real API server over TLS (CRUD, UID preconditions, error
classification, discovery, closing a watch from another thread), and informers that must end with
a cache identical to a fresh list, with every delete delivered to the handlers, under heavy churn,
across an API server restart, and across an etcd compaction that forces `410 Gone` and a relist.

Pods are made inert with a scheduler name no scheduler serves: they stay Pending and only the test
writes to them. Every wait polls with a deadline; nothing sleeps for synchronisation.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml

from informers.factory import InformerFactory
from informers.informer import SharedInformer
from informers.listwatch import PathListerWatcher, WatchLike
from informers.store import DeletedFinalStateUnknown, object_key, slim
from kube import ApiError, Kube, resource_path
from kube.retry import retry_transient
from tests.support.jobs import pod_manifest
from tests.support.polling import wait_for
from tfjob_api.names import JOB_NAME_LABEL

ROOT = Path(__file__).resolve().parents[2]
CRD_FILE = ROOT / "manifests" / "crd.yaml"
EXAMPLE_JOB = ROOT / "manifests" / "examples" / "allreduce.yaml"
THREADS = 32
CONVERGE_TIMEOUT = 120.0

Obj = dict[str, Any]


# --- helpers -----------------------------------------------------------------------------------------


def eventually(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll `predicate` until it holds; fail naming `what` after `timeout` seconds."""
    wait_for(predicate, timeout, what, interval=0.05)


def inert_pod(name: str, job: str) -> Obj:
    """A pod no scheduler will ever bind: only the test changes it."""
    return pod_manifest(name, labels={JOB_NAME_LABEL: job, "step": "created"}, schedulerName="nobody",
                        terminationGracePeriodSeconds=0)


class Recorder:
    """Thread-safe event handler that remembers what reached it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.added: dict[str, int] = {}
        self.updated = 0
        self.deleted: dict[str, int] = {}
        self.tombstones: set[str] = set()

    def on_add(self, obj: Obj) -> None:
        with self.lock:
            uid = obj["metadata"]["uid"]
            self.added[uid] = self.added.get(uid, 0) + 1

    def on_update(self, old: Obj, new: Obj) -> None:
        with self.lock:
            self.updated += 1

    def on_delete(self, obj: Obj) -> None:
        with self.lock:
            uid = obj["metadata"]["uid"]
            self.deleted[uid] = self.deleted.get(uid, 0) + 1
            if isinstance(obj, DeletedFinalStateUnknown):
                self.tombstones.add(uid)

    def attach(self, informer: SharedInformer) -> Recorder:
        informer.add_event_handler(on_add=self.on_add, on_update=self.on_update, on_delete=self.on_delete)
        return self


def fresh_list(kube: Kube, path: str, selector: str) -> dict[str, Obj]:
    """The server's current objects, shaped like cached ones (kind/apiVersion set, slimmed)."""
    listed = kube.list(path, label_selector=selector)
    kind = listed["kind"].removesuffix("List")
    result = {}
    for item in listed["items"]:
        item.setdefault("kind", kind)
        item.setdefault("apiVersion", listed["apiVersion"])
        result[object_key(item)] = slim(item)
    return result


def cache_matches_server(informer: SharedInformer, kube: Kube, path: str, selector: str) -> bool:
    server = fresh_list(kube, path, selector)
    cached = {object_key(o): o["metadata"]["resourceVersion"] for o in informer.list()}
    return cached == {k: o["metadata"]["resourceVersion"] for k, o in server.items()}


def assert_cache_identical(informer: SharedInformer, kube: Kube, path: str, selector: str) -> None:
    server = fresh_list(kube, path, selector)
    cached = {object_key(o): o for o in informer.list()}
    assert sorted(cached) == sorted(server)
    for key, obj in server.items():
        assert cached[key] == obj, key
    informer.store.check_mutations()


def parallel(fn: Callable[[Any], Any], items: list[Any]) -> list[Any]:
    with ThreadPoolExecutor(THREADS) as pool:
        return list(pool.map(fn, items))


class Writer:
    """Creates, patches and deletes pods with transient-error retries, as the controller would."""

    def __init__(self, kube: Kube, namespace: str, job: str) -> None:
        self.kube = kube
        self.namespace = namespace
        self.job = job
        self.collection = resource_path("", "v1", "pods", namespace)
        self._create = retry_transient(kube.create)
        self._patch = retry_transient(kube.patch)
        self._delete = retry_transient(kube.delete)

    def create(self, name: str) -> Obj:
        try:
            return self._create(self.collection, inert_pod(name, self.job))
        except ApiError as exc:
            if not exc.already_exists:  # a retried create whose first attempt went through
                raise
            return self.kube.get(f"{self.collection}/{name}")

    def patch(self, name: str) -> Obj:
        return self._patch(f"{self.collection}/{name}", {"metadata": {"labels": {"step": "patched"}}})

    def delete(self, pod: Obj) -> str:
        try:
            self._delete(f"{self.collection}/{pod['metadata']['name']}", uid=pod["metadata"]["uid"], grace_seconds=0)
        except ApiError as exc:
            if not exc.not_found:
                raise
        return str(pod["metadata"]["uid"])


class GatedListerWatcher:
    """A PathListerWatcher whose new watches can be held back, to keep an informer disconnected."""

    def __init__(self, inner: PathListerWatcher) -> None:
        self.inner = inner
        self.namespace = inner.namespace
        self.description = inner.description
        self.open = threading.Event()
        self.open.set()
        self.waiting = threading.Event()
        self.streams: list[WatchLike] = []
        self.lock = threading.Lock()

    def list(self, *, limit: int, continue_token: str | None) -> Obj:
        return self.inner.list(limit=limit, continue_token=continue_token)

    def watch(self, *, resource_version: str, timeout_seconds: int, read_timeout: float) -> WatchLike:
        if not self.open.is_set():
            self.waiting.set()
            self.open.wait(300)
            self.waiting.clear()
        stream = self.inner.watch(
            resource_version=resource_version, timeout_seconds=timeout_seconds, read_timeout=read_timeout
        )
        with self.lock:
            self.streams.append(stream)
        return stream

    def disconnect(self) -> None:
        """Hold back new watches and close the open ones."""
        self.open.clear()
        with self.lock:
            streams = list(self.streams)
        for stream in streams:
            stream.close()


# --- fixtures ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def kube(cluster: Any) -> Iterator[Kube]:
    client = Kube.from_kubeconfig(str(cluster.kubeconfig), pool_size=THREADS * 2)
    yield client
    client.close()


@pytest.fixture
def stop_after() -> Iterator[list[SharedInformer | InformerFactory]]:
    running: list[SharedInformer | InformerFactory] = []
    yield running
    for item in running:
        item.stop()


@pytest.fixture
def settle(cluster: Any, kube: Kube) -> Iterator[None]:
    """After a test that restarts the API server, wait until the controller-manager works again.

    Its informers reconnect with their own back-off, so for a while after a restart it may not yet
    create the `default` ServiceAccount of new namespaces, which the next test's pods need.
    """
    yield
    name = f"settle-{uuid.uuid4().hex[:8]}"
    kube.create("/api/v1/namespaces", {"metadata": {"name": name}})
    try:
        eventually(
            lambda: _exists(kube, f"/api/v1/namespaces/{name}/serviceaccounts/default"),
            180,
            "the controller-manager to serve new namespaces again",
        )
    finally:
        kube.delete(f"/api/v1/namespaces/{name}")


def _exists(kube: Kube, path: str) -> bool:
    try:
        kube.get(path)
    except ApiError as exc:
        if exc.not_found or exc.transient:
            return False
        raise
    return True


@pytest.fixture(scope="module")
def tfjob_crd(cluster: Any, kube: Kube) -> None:
    """The TensorFlowJob CRD, installed and Established (polled: `kubectl wait` can race a new CRD)."""
    cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(CRD_FILE))
    path = resource_path("apiextensions.k8s.io", "v1", "customresourcedefinitions", None, "tensorflowjobs.kubeflow.org")

    def established() -> bool:
        conditions = kube.get(path).get("status", {}).get("conditions") or []
        return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)

    eventually(established, 60, "the TensorFlowJob CRD to be Established")
    kube.invalidate_discovery()


# --- kube/client.py basics ---------------------------------------------------------------------------


def test_create_get_patch_and_delete_round_trip(kube: Kube, namespace: str) -> None:
    collection = resource_path("", "v1", "configmaps", namespace)
    created = kube.create(collection, {"metadata": {"name": "cm", "labels": {"a": "1"}}, "data": {"k": "v"}})
    path = f"{collection}/cm"
    assert kube.get(path)["metadata"]["uid"] == created["metadata"]["uid"]
    merged = kube.patch(path, {"data": {"merge": "yes"}})
    assert merged["data"] == {"k": "v", "merge": "yes"}
    strategic = kube.patch(path, {"metadata": {"labels": {"b": "2"}}}, patch_type="strategic")
    assert strategic["metadata"]["labels"] == {"a": "1", "b": "2"}
    json_patched = kube.patch(path, [{"op": "remove", "path": "/data/k"}], patch_type="json")
    assert json_patched["data"] == {"merge": "yes"}
    applied = kube.patch(
        path,
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"owned": "by-apply"}},
        patch_type="apply",
        field_manager="tfjob-test",
        force=True,
    )
    assert applied["data"]["owned"] == "by-apply"
    assert any(m["manager"] == "tfjob-test" for m in applied["metadata"]["managedFields"])
    assert kube.list(collection)["items"][0]["metadata"]["name"] == "cm"
    kube.delete(path, uid=created["metadata"]["uid"])
    with pytest.raises(ApiError) as info:
        kube.get(path)
    assert info.value.not_found


def test_delete_with_a_wrong_uid_is_a_conflict(kube: Kube, namespace: str) -> None:
    collection = resource_path("", "v1", "configmaps", namespace)
    kube.create(collection, {"metadata": {"name": "cm"}})
    with pytest.raises(ApiError) as info:
        kube.delete(f"{collection}/cm", uid="00000000-0000-0000-0000-000000000000")
    assert info.value.status == 409 and info.value.conflict and not info.value.already_exists
    assert "UID in the precondition" in info.value.message
    assert kube.get(f"{collection}/cm")  # still there


def test_delete_of_a_missing_object_is_not_found(kube: Kube, namespace: str) -> None:
    with pytest.raises(ApiError) as info:
        kube.delete(resource_path("", "v1", "pods", namespace, "ghost"))
    assert info.value.not_found and info.value.reason == "NotFound" and not info.value.transient


def test_an_invalid_object_surfaces_as_invalid(kube: Kube, namespace: str) -> None:
    with pytest.raises(ApiError) as info:
        kube.create(resource_path("", "v1", "pods", namespace), {"metadata": {"name": "bad"}, "spec": {"containers": []}})
    assert info.value.invalid and info.value.status == 422
    assert "spec.containers" in info.value.message


def test_creating_twice_is_already_exists(kube: Kube, namespace: str) -> None:
    collection = resource_path("", "v1", "configmaps", namespace)
    kube.create(collection, {"metadata": {"name": "cm"}})
    with pytest.raises(ApiError) as info:
        kube.create(collection, {"metadata": {"name": "cm"}})
    assert info.value.already_exists and not info.value.conflict


def test_has_api_discovers_core_and_custom_resources(kube: Kube, tfjob_crd: None) -> None:
    assert kube.has_api("", "v1", "Pod")
    assert kube.has_api("kubeflow.org", "v1", "TensorFlowJob")
    assert not kube.has_api("kubeflow.org", "v1", "PyTorchJob")
    assert not kube.has_api("no-such-group.example.com", "v1")


def test_list_pages_with_limit_and_continue(kube: Kube, namespace: str) -> None:
    collection = resource_path("", "v1", "configmaps", namespace)
    parallel(lambda i: kube.create(collection, {"metadata": {"name": f"cm-{i:02d}"}}), list(range(25)))
    names, token, pages = [], None, 0
    while True:
        page = kube.list(collection, limit=10, continue_=token)
        pages += 1
        names += [i["metadata"]["name"] for i in page["items"]]
        token = page["metadata"].get("continue")
        if not token:
            break
    assert pages >= 3 and sorted(n for n in names if n.startswith("cm-")) == [f"cm-{i:02d}" for i in range(25)]


def test_closing_a_watch_from_another_thread_unblocks_it_over_tls(kube: Kube, namespace: str) -> None:
    collection = resource_path("", "v1", "configmaps", namespace)
    rv = kube.list(collection)["metadata"]["resourceVersion"]
    stream = kube.watch(collection, resource_version=rv, timeout_seconds=300, read_timeout=90)
    seen: list[str] = []
    ended = threading.Event()

    def read() -> None:
        for event in stream:
            seen.append(event["type"])
        ended.set()

    reader = threading.Thread(target=read)
    reader.start()
    kube.create(collection, {"metadata": {"name": "cm"}})
    eventually(lambda: "ADDED" in seen, 30, "the ADDED event")
    started = time.monotonic()
    stream.close()
    assert ended.wait(5), "close() did not unblock the reader"
    reader.join(5)
    assert time.monotonic() - started < 5


def test_requests_are_reported_to_on_request(cluster: Any, namespace: str) -> None:
    seen: list[tuple[str, str, int, float]] = []
    with Kube.from_kubeconfig(str(cluster.kubeconfig), on_request=lambda *a: seen.append(a)) as client:
        client.get(resource_path("", "v1", "namespaces", None, namespace))
        with pytest.raises(ApiError):
            client.get(resource_path("", "v1", "pods", namespace, "ghost"))
    assert [s[:3] for s in seen] == [("get", "namespaces", 200), ("get", "pods", 404)]


# --- informers ---------------------------------------------------------------------------------------


def test_tfjob_informer_follows_custom_resources_through_the_custom_objects_path(
    kube: Kube, namespace: str, tfjob_crd: None, stop_after: list[Any]
) -> None:
    factory = InformerFactory(kube, namespaces=[namespace])
    stop_after.append(factory)
    jobs = factory.for_resource("tensorflowjobs", "kubeflow.org", "v1", "tensorflowjobs")
    recorder = Recorder().attach(jobs)
    # The session's operator (tests/integration/controller) watches every namespace and moves the
    # job on to Running at its own pace, so the cache's *latest* state is not ours to predict: look
    # for the version our own status write produced among everything the handlers received.
    delivered: dict[str, Obj] = {}
    jobs.add_event_handler(on_add=lambda obj: delivered.setdefault(obj["metadata"]["resourceVersion"], obj),
                           on_update=lambda _old, new: delivered.setdefault(new["metadata"]["resourceVersion"], new))
    factory.start()
    assert factory.wait_for_sync(30)
    # The example file holds the ConfigMap with the training program first, then the job.
    manifest = next(doc for doc in yaml.safe_load_all(EXAMPLE_JOB.read_text()) if doc and doc["kind"] == "TensorFlowJob")
    manifest["metadata"] = {"name": "mnist", "namespace": namespace}
    collection = resource_path("kubeflow.org", "v1", "tensorflowjobs", namespace)
    created = kube.create(collection, manifest)
    written = kube.patch(f"{collection}/mnist/status", {"status": {"state": "Created"}})
    version = written["metadata"]["resourceVersion"]
    eventually(lambda: version in delivered, 30, "the status write to reach the handlers")
    assert delivered[version]["status"]["state"] == "Created"
    cached = jobs.get(f"{namespace}/mnist")
    assert cached is not None and (cached["kind"], cached["apiVersion"]) == ("TensorFlowJob", "kubeflow.org/v1")
    assert "managedFields" not in cached["metadata"]
    kube.delete(f"{collection}/mnist", uid=created["metadata"]["uid"])
    eventually(lambda: created["metadata"]["uid"] in recorder.deleted, 30, "the delete event")
    assert recorder.added == {created["metadata"]["uid"]: 1} and recorder.updated >= 1


def test_a_thousand_pods_churned_leave_the_cache_identical_to_a_fresh_list(
    kube: Kube, namespace: str, stop_after: list[Any]
) -> None:
    factory = InformerFactory(kube, namespaces=[namespace])
    stop_after.append(factory)
    pods = factory.for_resource("pods", "", "v1", "pods", label_selector=JOB_NAME_LABEL)
    recorder = Recorder().attach(pods)
    factory.start()
    assert factory.wait_for_sync(30)
    writer = Writer(kube, namespace, "churn")
    names = [f"churn-{i:04d}" for i in range(1000)]

    created = parallel(writer.create, names)
    parallel(writer.patch, names)
    doomed = [pod for i, pod in enumerate(created) if i % 10 < 7]
    deleted_uids = set(parallel(writer.delete, doomed))
    parallel(writer.patch, [n for i, n in enumerate(names) if i % 10 >= 7])

    path = resource_path("", "v1", "pods", namespace)
    eventually(lambda: cache_matches_server(pods, kube, path, JOB_NAME_LABEL), CONVERGE_TIMEOUT, "the cache to converge")
    assert_cache_identical(pods, kube, path, JOB_NAME_LABEL)
    assert len(pods.list()) == 300
    with recorder.lock:
        assert set(recorder.added) == {p["metadata"]["uid"] for p in created}
        assert all(count == 1 for count in recorder.added.values())
        assert set(recorder.deleted) == deleted_uids
        assert recorder.updated >= 1000


def test_the_informer_recovers_from_an_api_server_restart_without_missing_deletes(
    cluster: Any, kube: Kube, namespace: str, settle: None, stop_after: list[Any]
) -> None:
    factory = InformerFactory(kube, namespaces=[namespace])
    stop_after.append(factory)
    pods = factory.for_resource("pods", "", "v1", "pods", label_selector=JOB_NAME_LABEL)
    recorder = Recorder().attach(pods)
    factory.start()
    assert factory.wait_for_sync(30)
    writer = Writer(kube, namespace, "restart")
    path = resource_path("", "v1", "pods", namespace)
    created = parallel(writer.create, [f"before-{i:03d}" for i in range(200)])
    eventually(lambda: cache_matches_server(pods, kube, path, JOB_NAME_LABEL), CONVERGE_TIMEOUT, "the first sync")
    watches_before = pods.reflectors[0].watch_count

    cluster.restart_apiserver()
    # Straight after the restart, while the informer is still reconnecting (backing off).
    deleted_uids = set(parallel(writer.delete, created[:100]))
    parallel(writer.patch, [p["metadata"]["name"] for p in created[100:150]])
    added = parallel(writer.create, [f"after-{i:03d}" for i in range(50)])

    eventually(lambda: cache_matches_server(pods, kube, path, JOB_NAME_LABEL), CONVERGE_TIMEOUT, "the cache to converge")
    assert_cache_identical(pods, kube, path, JOB_NAME_LABEL)
    assert pods.reflectors[0].watch_count > watches_before
    with recorder.lock:
        assert deleted_uids <= set(recorder.deleted)
        assert {p["metadata"]["uid"] for p in added} <= set(recorder.added)


def test_an_etcd_compaction_forces_a_relist_that_converges_with_tombstones(
    cluster: Any, kube: Kube, namespace: str, settle: None, stop_after: list[Any]
) -> None:
    path = resource_path("", "v1", "pods", namespace)
    gate = GatedListerWatcher(PathListerWatcher(kube, path, namespace=namespace, label_selector=JOB_NAME_LABEL))
    relists: list[str] = []
    pods = SharedInformer(gate, name="pods", on_relist=relists.append, reflector_options={"page_size": 25})
    stop_after.append(pods)
    recorder = Recorder().attach(pods)
    pods.start()
    assert pods.wait_for_sync(30)
    writer = Writer(kube, namespace, "compaction")
    created = parallel(writer.create, [f"pod-{i:03d}" for i in range(100)])
    eventually(lambda: cache_matches_server(pods, kube, path, JOB_NAME_LABEL), CONVERGE_TIMEOUT, "the first sync")

    gate.disconnect()
    eventually(gate.waiting.is_set, 60, "the informer to wait for a new watch")
    deleted_uids = set(parallel(writer.delete, created[:40]))
    parallel(writer.patch, [p["metadata"]["name"] for p in created[40:60]])
    added = parallel(writer.create, [f"new-{i:03d}" for i in range(20)])
    cluster.compact_etcd()  # compacts, and restarts the API server so its watch cache forgets too
    gate.open.set()

    eventually(lambda: pods.relist_count >= 1, 60, "a relist after 410 Gone")
    eventually(lambda: cache_matches_server(pods, kube, path, JOB_NAME_LABEL), CONVERGE_TIMEOUT, "the cache to converge")
    assert_cache_identical(pods, kube, path, JOB_NAME_LABEL)
    assert relists and relists[0] == "pods"
    with recorder.lock:
        assert set(recorder.deleted) == deleted_uids
        assert recorder.tombstones == deleted_uids  # learnt from the relist, not from watch events
        assert {p["metadata"]["uid"] for p in added} <= set(recorder.added)
