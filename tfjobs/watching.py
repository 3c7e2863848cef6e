"""A live view of one job and its pods, to wait on: list + watch of the job and of its pods.

`wait_for` and `logs(follow=True)` must react to the job's status and to its pods coming and going
without polling. `JobWatch` keeps two mirrors current — the job (field selector on its name) and its
pods (the job-name label) — each a thread that lists, then watches from the list's resourceVersion,
resumes from the last event it saw when the server ends a watch, and lists again after `410 Gone`
(the reflector's rules, in the few lines one job needs). Every event wakes whoever waits in `wait()`,
and can also be handed to callbacks (the log follower's), in the mirror's thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from tfjob_api.names import JOB_NAME_LABEL
from tfjobs.connection import Connection, Events, api_path
from tfjobs.errors import ClusterApiError
from tfjobs.kinds import JobKind

__all__ = ["JobWatch", "PodEvent"]

T = TypeVar("T")

PodEvent = Callable[[str, dict[str, Any] | None, dict[str, Any]], None]
"""Called with ("ADDED" | "MODIFIED" | "DELETED", old object or None, object) for each event."""

WATCH_SECONDS = 240  # the server ends each watch after this; the mirror resumes from where it was


class _Mirror:
    """The objects of one collection path that match `selectors`, kept current by list + watch."""

    def __init__(self, connection: Connection, path: str, name: str, on_event: PodEvent, **selectors: str) -> None:
        self.name = name
        self._connection = connection
        self._path = path
        self._selectors = selectors
        self._on_event = on_event
        self._objects: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self.synced = threading.Event()
        self._events: Events | None = None  # the open watch, closed by stop()
        self._thread = threading.Thread(target=self._run, name=f"watch {name}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        events = self._events
        if events is not None:
            events.close()

    def objects(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._objects.values())

    def get(self, name: str) -> dict[str, Any] | None:
        with self._lock:
            return self._objects.get(name)

    def _run(self) -> None:
        failures = 0
        while not self._stopped.is_set():
            try:
                version = self._list()
                failures = 0
                while not self._stopped.is_set():
                    version = self._watch(version)
            except ClusterApiError as error:
                if self._stopped.is_set():
                    return
                if not error.gone:
                    failures += 1
                    self._stopped.wait(min(0.2 * 2 ** min(failures, 5), 5.0))

    def _list(self) -> str:
        answer = self._connection.list(self._path, **self._selectors)
        fresh = {item["metadata"]["name"]: item for item in answer.get("items") or []}
        with self._lock:
            old, self._objects = self._objects, dict(fresh)
        for key, item in fresh.items():
            self._on_event("MODIFIED" if key in old else "ADDED", old.get(key), item)
        for key, item in old.items():
            if key not in fresh:
                self._on_event("DELETED", None, item)
        self.synced.set()
        return str((answer.get("metadata") or {}).get("resourceVersion") or "")

    def _watch(self, version: str) -> str:
        self._events = self._connection.watch(self._path, resource_version=version, timeout_seconds=WATCH_SECONDS,
                                              **self._selectors)
        if self._stopped.is_set():  # stopped while the watch was being opened
            self._events.close()
        for event in self._events.events():
            item = event.get("object") or {}
            version = str((item.get("metadata") or {}).get("resourceVersion") or version)
            kind = event.get("type")
            if kind not in ("ADDED", "MODIFIED", "DELETED"):
                continue  # BOOKMARK: only the resourceVersion moves on
            key = item["metadata"]["name"]
            with self._lock:
                old = self._objects.pop(key, None) if kind == "DELETED" else self._objects.get(key)
                if kind != "DELETED":
                    self._objects[key] = item
            self._on_event(kind, old, item)
        return version


class JobWatch:
    """Mirrors of one job and (with `pods`) its pods; `wait(predicate)` wakes on every event."""

    def __init__(self, connection: Connection, namespace: str, name: str, *, pods: bool = True,
                 on_pod: PodEvent | None = None, on_job: Callable[[], None] | None = None,
                 kind: JobKind) -> None:
        self.namespace = namespace
        self.name = name
        self._cond = threading.Condition()
        self._version = 0
        self._on_pod = on_pod
        self._on_job = on_job
        self.kind = kind
        self._job = _Mirror(connection, kind.path(namespace), f"{kind.name.lower()} {namespace}/{name}",
                            lambda *_: self._job_event(),
                            field_selector=f"metadata.name={name}")
        self._pods: _Mirror | None = None
        if pods:
            self._pods = _Mirror(connection, api_path("", "v1", "pods", namespace), f"pods of {namespace}/{name}",
                                 self._pod_event, label_selector=f"{JOB_NAME_LABEL}={name}")

    def _mirrors(self) -> list[_Mirror]:
        return [self._job] + ([self._pods] if self._pods is not None else [])

    def start(self, timeout: float = 60.0) -> JobWatch:
        """Start the mirrors and wait until each has listed once (TimeoutError otherwise)."""
        for mirror in self._mirrors():
            mirror.start()
        deadline = time.monotonic() + timeout
        for mirror in self._mirrors():
            if not mirror.synced.wait(max(0.0, deadline - time.monotonic())):
                self.stop()
                raise TimeoutError(f"could not list {mirror.name} within {timeout:.0f}s")
        return self

    def stop(self) -> None:
        for mirror in self._mirrors():
            mirror.stop()
        self._changed()

    def __enter__(self) -> JobWatch:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # --- reads ----------------------------------------------------------------------------------

    def job(self) -> dict[str, Any] | None:
        """The job as last seen (as stored), or None when it does not exist (any more)."""
        return self._job.get(self.name)

    def model(self) -> dict[str, Any] | None:
        """The job as last seen, read as the job model (`JobKind.view`), or None."""
        job = self.job()
        return None if job is None else self.kind.view(job)

    def pods(self) -> list[dict[str, Any]]:
        """The job's pods as last seen, by name."""
        if self._pods is None:
            return []
        return sorted(self._pods.objects(), key=lambda p: p["metadata"]["name"])

    @property
    def version(self) -> int:
        """Grows by one with every event: lets a caller tell whether anything happened."""
        return self._version

    def wait(self, predicate: Callable[[], T], timeout: float | None) -> T | None:
        """Wait until `predicate()` is truthy (checked now and after every event); its value, or
        None after `timeout` seconds (None: no limit)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                value = predicate()
                if value:
                    return value
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return None
                self._cond.wait(remaining)

    def wake(self) -> None:
        """Wake every waiter (e.g. to re-check a deadline of its own)."""
        self._changed()

    # --- events ---------------------------------------------------------------------------------

    def _changed(self) -> None:
        with self._cond:
            self._version += 1
            self._cond.notify_all()

    def _job_event(self) -> None:
        if self._on_job is not None:
            self._on_job()
        self._changed()

    def _pod_event(self, kind: str, old: dict[str, Any] | None, pod: dict[str, Any]) -> None:
        if self._on_pod is not None:
            self._on_pod(kind, old, pod)
        self._changed()
