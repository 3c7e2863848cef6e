"""SharedInformer: store-then-handlers delivery, relist tombstones, resync, namespaces, threads.

The informer runs its real threads against scripted `FakeListerWatcher`s. Tests synchronise on the
fake's `exhausted` event (set once every scripted event has been delivered) or on `wait_for_sync`,
never on time. Back-off sleeps are injected and return at once. Every store is built with the
mutation detector on, so any test would fail if the informer mutated a cached object.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from informers.informer import EventHandler, SharedInformer
from informers.listwatch import ListerWatcher
from informers.store import CONTROLLER_UID_INDEX, DeletedFinalStateUnknown, Store
from informers.testing import (
    FakeListerWatcher,
    FakeWatch,
    added,
    bookmark,
    deleted,
    error_event,
    modified,
    page,
    pod,
    wait_until,
)
from kube import ApiError
from kube.clock import FakeClock

Obj = dict[str, Any]


class Recorder:
    """Handlers that record each call and what the store held for that key at that moment."""

    def __init__(self, informer: SharedInformer) -> None:
        self.informer = informer
        self.calls: list[tuple[str, str, str | None, str | None]] = []
        self.objects: list[tuple[str, Obj, Obj | None]] = []
        self.lock = threading.Lock()

    def _cached_rv(self, obj: Obj) -> str | None:
        cached = self.informer.store.get_object(obj)
        return cached["metadata"]["resourceVersion"] if cached is not None else None

    def on_add(self, obj: Obj) -> None:
        with self.lock:
            self.calls.append(("add", obj["metadata"]["name"], obj["metadata"]["resourceVersion"], self._cached_rv(obj)))
            self.objects.append(("add", obj, None))

    def on_update(self, old: Obj, new: Obj) -> None:
        with self.lock:
            self.calls.append(("update", new["metadata"]["name"], new["metadata"]["resourceVersion"], self._cached_rv(new)))
            self.objects.append(("update", new, old))

    def on_delete(self, obj: Obj) -> None:
        with self.lock:
            self.calls.append(("delete", obj["metadata"]["name"], obj["metadata"]["resourceVersion"], self._cached_rv(obj)))
            self.objects.append(("delete", obj, None))

    def handler(self) -> EventHandler:
        return EventHandler(on_add=self.on_add, on_update=self.on_update, on_delete=self.on_delete)


@pytest.fixture
def time() -> FakeClock:
    return FakeClock(start=1000.0)


@pytest.fixture
def started() -> Iterator[list[SharedInformer]]:
    """Informers to stop after the test, whatever happened."""
    informers: list[SharedInformer] = []
    yield informers
    for informer in informers:
        informer.stop()


def make(
    sources: ListerWatcher | list[ListerWatcher],
    time: FakeClock,
    started: list[SharedInformer],
    **options: Any,
) -> tuple[SharedInformer, Recorder]:
    informer = SharedInformer(
        sources, name="pods", store=Store(detect_mutations=True), clock=time, **options
    )
    recorder = Recorder(informer)
    informer.add_event_handler(recorder.handler())
    started.append(informer)
    return informer, recorder


def run_script(informer: SharedInformer, *sources: FakeListerWatcher) -> None:
    informer.start()
    for source in sources:
        assert source.exhausted.wait(10), "the script was not consumed"
    informer.store.check_mutations()


def test_handlers_see_add_update_delete_in_order_after_the_store_is_updated(time: FakeClock, started: list[SharedInformer]) -> None:
    lw = FakeListerWatcher(
        lists=[page([pod("a", "1")], "10")],
        watches=[FakeWatch([added(pod("b", "11")), modified(pod("a", "12")), deleted(pod("b", "13")), modified(pod("b", "14"))])],
    )
    informer, recorder = make(lw, time, started)
    run_script(informer, lw)
    assert recorder.calls == [
        # (call, name, rv delivered, rv in the store when the handler ran)
        ("add", "a", "1", "1"),
        ("add", "b", "11", "11"),
        ("update", "a", "12", "12"),
        ("delete", "b", "13", None),
        ("add", "b", "14", "14"),  # a MODIFIED for an unknown key is an add
    ]


def test_an_update_carries_the_previous_cached_object(time: FakeClock, started: list[SharedInformer]) -> None:
    lw = FakeListerWatcher(lists=[page([pod("a", "1", phase="Pending")], "10")], watches=[FakeWatch([modified(pod("a", "11", phase="Running"))])])
    informer, recorder = make(lw, time, started)
    run_script(informer, lw)
    kind, new, old = recorder.objects[-1]
    assert kind == "update" and old is not None
    assert (old["status"]["phase"], new["status"]["phase"]) == ("Pending", "Running")


def test_410_relists_and_emits_tombstone_deletes_for_objects_deleted_while_disconnected(
    time: FakeClock, started: list[SharedInformer]
) -> None:
    relists: list[str] = []
    lw = FakeListerWatcher(
        lists=[
            page([pod("a", "1"), pod("b", "2"), pod("c", "3")], "10"),
            page([pod("a", "1"), pod("c", "20"), pod("d", "21")], "30"),  # b deleted, c changed, d new
        ],
        watches=[FakeWatch([bookmark("15"), error_event(410, "Expired", "too old resource version")])],
    )
    informer, recorder = make(lw, time, started, on_relist=relists.append)
    run_script(informer, lw)
    assert recorder.calls[3:] == [("delete", "b", "2", None), ("update", "c", "20", "20"), ("add", "d", "21", "21")]
    tombstone = recorder.objects[3][1]
    assert isinstance(tombstone, DeletedFinalStateUnknown) and tombstone.key == "default/b"
    assert sorted(informer.store.list_keys()) == ["default/a", "default/c", "default/d"]
    assert informer.relist_count == 1 and relists == ["pods"]
    assert lw.watch_versions() == ["10", "30"]


def test_stream_end_rewatches_from_the_last_version_without_duplicate_adds(time: FakeClock, started: list[SharedInformer]) -> None:
    lw = FakeListerWatcher(
        lists=[page([pod("a", "1")], "10")],
        watches=[FakeWatch([added(pod("b", "11"))]), FakeWatch([bookmark("12")]), FakeWatch([modified(pod("b", "13"))])],
    )
    informer, recorder = make(lw, time, started)
    run_script(informer, lw)
    assert [c[:2] for c in recorder.calls] == [("add", "a"), ("add", "b"), ("update", "b")]
    assert lw.count("list") == 1 and lw.watch_versions() == ["10", "11", "12", "13"]


def test_connection_error_backs_off_then_recovers(time: FakeClock, started: list[SharedInformer]) -> None:
    refused = ApiError(0, "NewConnectionError", "Connection refused")
    lw = FakeListerWatcher(
        lists=[page([], "10")],
        watches=[
            FakeWatch([added(pod("a", "11"))], then=ApiError(0, "ProtocolError", "Connection reset by peer")),
            refused,
            refused,
            FakeWatch([deleted(pod("a", "12"))]),
        ],
    )
    informer, recorder = make(lw, time, started)
    run_script(informer, lw)
    assert len(time.sleeps) == 3 and time.sleeps == sorted(time.sleeps)
    assert [c[:2] for c in recorder.calls] == [("add", "a"), ("delete", "a")]
    assert lw.watch_versions() == ["10", "11", "11", "11", "12"]
    assert informer.relist_count == 0


def test_resync_redelivers_cached_objects_as_updates_without_api_calls(time: FakeClock, started: list[SharedInformer]) -> None:
    lw = FakeListerWatcher(lists=[page([pod("a", "1"), pod("b", "2")], "10")])
    informer, recorder = make(lw, time, started)
    run_script(informer, lw)
    calls_before = list(lw.calls)
    recorder.calls.clear()
    recorder.objects.clear()
    assert informer.resync() == 2
    assert sorted(c[:2] for c in recorder.calls) == [("update", "a"), ("update", "b")]
    assert all(new is old for _, new, old in recorder.objects)  # same instance: a resync
    assert lw.calls == calls_before


def test_the_resync_thread_redelivers_periodically(time: FakeClock, started: list[SharedInformer]) -> None:
    lw = FakeListerWatcher(lists=[page([pod("a", "1")], "10")])
    informer, recorder = make(lw, time, started, resync_period=0.01)
    run_script(informer, lw)
    assert wait_until(lambda: informer.resync_count >= 2)
    assert ("update", "a", "1", "1") in recorder.calls
    assert lw.count("list") == 1 and lw.count("watch") == 1


def test_resync_period_zero_starts_no_resync_thread(time: FakeClock, started: list[SharedInformer]) -> None:
    lw = FakeListerWatcher(lists=[page([], "10")])
    informer, _ = make(lw, time, started)
    run_script(informer, lw)
    assert [t.name for t in informer.threads] == ["informer-pods-0"]


def test_stop_joins_every_thread_and_closes_every_watch(time: FakeClock, started: list[SharedInformer]) -> None:
    sources = [FakeListerWatcher(lists=[page([], "10")], namespace=ns) for ns in ("x", "y", "z")]
    informer, _ = make(sources, time, started, resync_period=3600)  # type: ignore[arg-type]
    run_script(informer, *sources)
    assert len(informer.threads) == 4 and all(t.is_alive() for t in informer.threads)
    informer.stop()
    assert not any(t.is_alive() for t in informer.threads)
    assert all(s.idle[0].closed.is_set() for s in sources)


def test_wait_for_sync_returns_once_every_reflector_listed(time: FakeClock, started: list[SharedInformer]) -> None:
    gate = threading.Event()

    class SlowList(FakeListerWatcher):
        def list(self, *, limit: int, continue_token: str | None) -> Obj:
            gate.wait(10)
            return super().list(limit=limit, continue_token=continue_token)

    fast = FakeListerWatcher(lists=[page([], "10")], namespace="x")
    slow = SlowList(lists=[page([], "10")], namespace="y")
    informer, _ = make([fast, slow], time, started)
    informer.start()
    assert fast.exhausted.wait(10)
    assert not informer.has_synced()
    assert not informer.wait_for_sync(timeout=0.01)
    gate.set()
    assert informer.wait_for_sync(timeout=10)
    assert informer.has_synced()


def test_wait_for_sync_gives_up_when_stopped(time: FakeClock, started: list[SharedInformer]) -> None:
    lw = FakeListerWatcher(lists=[ApiError(503)] * 3 + [page([], "1")])
    informer = SharedInformer(lw, name="pods", clock=time)
    started.append(informer)
    # Not started at all: stop() wakes any waiter, and wait_for_sync reports "not synced".
    informer.stop()
    assert informer.wait_for_sync(timeout=10) is False


def test_namespaces_share_one_store_and_a_relist_replaces_only_its_namespace(time: FakeClock, started: list[SharedInformer]) -> None:
    x = FakeListerWatcher(
        lists=[page([pod("a", "1", namespace="x")], "10"), page([], "20")],
        watches=[FakeWatch([error_event(410, "Gone")])],
        namespace="x",
    )
    y = FakeListerWatcher(lists=[page([pod("b", "2", namespace="y")], "10")], namespace="y")
    informer, recorder = make([x, y], time, started)
    run_script(informer, x, y)
    assert informer.store.list_keys() == ["y/b"]
    assert ("delete", "a", "1", None) in recorder.calls
    assert [r.name for r in informer.reflectors] == ["pods[x]", "pods[y]"]


def test_a_failing_handler_does_not_stop_delivery_to_others(time: FakeClock, started: list[SharedInformer]) -> None:
    lw = FakeListerWatcher(lists=[page([], "10")], watches=[FakeWatch([added(pod("a", "11")), added(pod("b", "12"))])])
    informer, recorder = make(lw, time, started)

    def broken(obj: Obj) -> None:
        raise RuntimeError("bug in a handler")

    informer.add_event_handler(on_add=broken)
    run_script(informer, lw)
    assert [c[1] for c in recorder.calls] == ["a", "b"]
    assert informer.relist_count == 0


def test_a_handler_added_late_first_receives_the_cached_objects(time: FakeClock, started: list[SharedInformer]) -> None:
    lw = FakeListerWatcher(lists=[page([pod("a", "1"), pod("b", "2")], "10")])
    informer, _ = make(lw, time, started)
    run_script(informer, lw)
    late: list[str] = []
    informer.add_event_handler(on_add=lambda o: late.append(o["metadata"]["name"]))
    assert sorted(late) == ["a", "b"]


def test_a_removed_handler_gets_nothing_more(time: FakeClock, started: list[SharedInformer]) -> None:
    lw = FakeListerWatcher(lists=[page([pod("a", "1")], "10")])
    informer, _ = make(lw, time, started)
    run_script(informer, lw)
    seen: list[Obj] = []
    handler = informer.add_event_handler(on_update=lambda old, new: seen.append(new))
    informer.remove_event_handler(handler)
    informer.resync()
    assert seen == []


def test_cached_objects_are_slimmed_and_indexed(time: FakeClock, started: list[SharedInformer]) -> None:
    lw = FakeListerWatcher(
        lists=[page([pod("a", "1", owner_uid="job-1", managed_fields=True)], "10")],
        watches=[FakeWatch([added(pod("b", "11", owner_uid="job-1", managed_fields=True))])],
    )
    informer, _ = make(lw, time, started)
    run_script(informer, lw)
    owned = informer.by_index(CONTROLLER_UID_INDEX, "job-1")
    assert [o["metadata"]["name"] for o in owned] == ["a", "b"]
    assert all("managedFields" not in o["metadata"] for o in informer.list())
    assert informer.get("default/a") is owned[0]


def test_start_twice_is_an_error(time: FakeClock, started: list[SharedInformer]) -> None:
    lw = FakeListerWatcher(lists=[page([], "10")])
    informer, _ = make(lw, time, started)
    run_script(informer, lw)
    with pytest.raises(RuntimeError):
        informer.start()


def test_an_informer_needs_a_source() -> None:
    with pytest.raises(ValueError):
        SharedInformer([], name="none")


def test_watched_objects_reach_the_handlers_as_the_store_keeps_them(time: FakeClock, started: list[SharedInformer]) -> None:
    """An update filter compares old and new: both must be the store's version (here without the
    spec), never the cached one against the watch's full object."""
    def without_spec(obj: Obj) -> Obj:
        return {k: v for k, v in obj.items() if k != "spec"}

    full = pod("a", "11", phase="Running")
    full["spec"] = {"containers": [{"name": "tensorflow", "image": "tf"}]}
    added_full = pod("b", "12")
    added_full["spec"] = {"containers": [{"name": "tensorflow", "image": "tf"}]}
    lw = FakeListerWatcher(lists=[page([pod("a", "1", phase="Pending")], "10")],
                           watches=[FakeWatch([modified(full), added(added_full)])])
    informer = SharedInformer(lw, name="pods", store=Store(transform=without_spec, detect_mutations=True), clock=time)
    recorder = Recorder(informer)
    informer.add_event_handler(recorder.handler())
    started.append(informer)
    run_script(informer, lw)
    (update, new, old), (add, obj, _) = recorder.objects[-2:]
    assert (update, add) == ("update", "add")
    assert old is not None and "spec" not in old and "spec" not in new and "spec" not in obj
    assert new is informer.store.get("default/a")
