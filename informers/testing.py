"""Test support for code built on informers (like client-go's tools/cache/testing): scripted fakes.

Object and watch-event builders, a scripted `FakeListerWatcher`, a recording
reflector sink and a polling helper. Used by the informer unit tests and usable by controller tests;
nothing here talks to an API server.

`FakeListerWatcher` answers `list()` and `watch()` from scripts prepared by the test. When the watch
script runs out it hands out an idle watch that blocks until closed and sets `exhausted`: by then
every scripted event has been delivered, because a reflector asks for a new watch only after the
previous one ended. Tests therefore synchronise on `exhausted`, never on time.
"""

from __future__ import annotations

import builtins
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from kube import ApiError

Obj = dict[str, Any]


def pod(
    name: str,
    rv: str,
    *,
    namespace: str = "default",
    uid: str | None = None,
    owner_uid: str | None = None,
    phase: str = "Pending",
    managed_fields: bool = False,
) -> Obj:
    metadata: Obj = {
        "name": name,
        "namespace": namespace,
        "uid": uid or f"uid-{namespace}-{name}",
        "resourceVersion": rv,
    }
    if owner_uid:
        owner = {"apiVersion": "kubeflow.org/v1", "kind": "TensorFlowJob", "name": "job", "uid": owner_uid}
        metadata["ownerReferences"] = [{**owner, "controller": True}]
    if managed_fields:
        metadata["managedFields"] = [{"manager": "kubectl", "operation": "Apply", "fieldsV1": {"f:spec": {}}}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": {}, "status": {"phase": phase}}


def page(items: list[Obj], rv: str = "", *, cont: str | None = None, kind: str = "PodList") -> Obj:
    metadata: Obj = {"resourceVersion": rv} if rv else {}
    if cont:
        metadata["continue"] = cont
    return {"apiVersion": "v1", "kind": kind, "metadata": metadata, "items": [_as_list_item(i) for i in items]}


def _as_list_item(obj: Obj) -> Obj:
    """List items carry no kind/apiVersion, like the real API."""
    return {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}


def added(obj: Obj) -> Obj:
    return {"type": "ADDED", "object": obj}


def modified(obj: Obj) -> Obj:
    return {"type": "MODIFIED", "object": obj}


def deleted(obj: Obj) -> Obj:
    return {"type": "DELETED", "object": obj}


def bookmark(rv: str) -> Obj:
    return {"type": "BOOKMARK", "object": {"kind": "Pod", "apiVersion": "v1", "metadata": {"resourceVersion": rv}}}


def error_event(code: int, reason: str, message: str = "") -> Obj:
    status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code, "reason": reason}
    return {"type": "ERROR", "object": {**status, "message": message}}


class FakeWatch:
    """Yields its events, then ends, raises `then`, or (then="block") blocks until closed."""

    def __init__(self, events: list[Obj], *, then: str | ApiError = "end") -> None:
        self.events = events
        self.then = then
        self.closed = threading.Event()

    def __iter__(self) -> Iterator[Obj]:
        for event in self.events:
            if self.closed.is_set():
                return
            yield event
        if isinstance(self.then, ApiError):
            raise self.then
        if self.then == "block":
            self.closed.wait(60)

    def close(self) -> None:
        self.closed.set()


class FakeListerWatcher:
    """A scripted ListerWatcher that records every call."""

    def __init__(
        self,
        lists: list[Obj | list[Obj] | ApiError] | None = None,
        watches: list[FakeWatch | ApiError] | None = None,
        *,
        namespace: str | None = None,
        description: str = "fake pods",
        when_exhausted: Callable[[], None] | None = None,
    ) -> None:
        self.namespace = namespace
        self.description = description
        self._lists: deque[Obj | ApiError] = deque()
        for item in lists or []:
            # a list of pages is one multi-page list; a dict is a single page
            self._lists.extend(item if isinstance(item, list) else [item])
        self._watches: deque[FakeWatch | ApiError] = deque(watches or [])
        self.when_exhausted = when_exhausted
        self.calls: list[tuple[Any, ...]] = []
        self.idle: list[FakeWatch] = []
        self.exhausted = threading.Event()
        self._lock = threading.Lock()

    def script_list(self, *pages: Obj) -> None:
        with self._lock:
            self._lists.extend(pages)

    def list(self, *, limit: int, continue_token: str | None) -> Obj:
        with self._lock:
            self.calls.append(("list", continue_token, limit))
            if not self._lists:
                raise AssertionError("unexpected list call")
            item = self._lists.popleft()
        if isinstance(item, ApiError):
            raise item
        return item

    def watch(self, *, resource_version: str, timeout_seconds: int, read_timeout: float) -> FakeWatch:
        with self._lock:
            self.calls.append(("watch", resource_version, timeout_seconds, read_timeout))
            item = self._watches.popleft() if self._watches else None
            if item is None:
                idle = FakeWatch([], then="block")
                self.idle.append(idle)
        if isinstance(item, ApiError):
            raise item
        if item is not None:
            return item
        if self.when_exhausted is not None:
            self.when_exhausted()
        self.exhausted.set()
        return idle

    def count(self, kind: str) -> int:
        with self._lock:
            return sum(1 for c in self.calls if c[0] == kind)

    def watch_versions(self) -> builtins.list[str]:
        with self._lock:
            return [c[1] for c in self.calls if c[0] == "watch"]


class RecordingSink:
    """A ReflectorSink that records what it is given."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def on_replace(self, items: list[Obj], *, namespace: str | None, resource_version: str) -> None:
        self.calls.append(("replace", [i["metadata"]["name"] for i in items], namespace, resource_version))

    def on_event(self, event_type: str, obj: Obj) -> None:
        self.calls.append((event_type, obj["metadata"]["name"], obj["metadata"]["resourceVersion"]))


def wait_until(predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
    """Poll `predicate` until it holds or `timeout` real seconds pass (for threaded tests)."""
    deadline = time.monotonic() + timeout
    pause = threading.Event()
    while not predicate():
        if time.monotonic() >= deadline:
            return predicate()
        pause.wait(0.001)
    return True
