"""A live view of one job and its pods, to wait on: the operator's own informers, pointed at one job.

`wait_for` and `logs(follow=True)` must react to the job's status and to its pods coming and going
without polling. The operator's `informers` package already does list + watch right (resume from
the resourceVersion, relist after `410 Gone`, back off on errors, close watches promptly), so
`JobWatch` runs two of its informers: the job (field selector on its name) and its pods (the
job-name label). Every event wakes whoever waits in `wait()`, and can also be handed to callbacks
(the log follower's), in the informer's thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from informers import PathListerWatcher, SharedInformer
from kube import Kube, resource_path
from tfjob_api.names import GROUP, JOB_NAME_LABEL, PLURAL, VERSION

__all__ = ["JobWatch", "PodEvent"]

T = TypeVar("T")

PodEvent = Callable[[str, dict[str, Any] | None, dict[str, Any]], None]
"""Called with ("ADDED" | "MODIFIED" | "DELETED", old pod or None, pod) for each pod event."""


class JobWatch:
    """Informers on one job and (with `pods`) its pods; `wait(predicate)` wakes on every event."""

    def __init__(self, kube: Kube, namespace: str, name: str, *, pods: bool = True,
                 on_pod: PodEvent | None = None, on_job: Callable[[], None] | None = None) -> None:
        self.namespace = namespace
        self.name = name
        self._cond = threading.Condition()
        self._version = 0
        self._on_pod = on_pod
        self._on_job = on_job
        self._job = SharedInformer(
            PathListerWatcher(kube, resource_path(GROUP, VERSION, PLURAL, namespace), namespace,
                              field_selector=f"metadata.name={name}"),
            name=f"tensorflowjob {namespace}/{name}")
        self._job.add_event_handler(on_add=lambda _: self._job_event(), on_update=lambda *_: self._job_event(),
                                    on_delete=lambda _: self._job_event())
        self._pods: SharedInformer | None = None
        if pods:
            self._pods = SharedInformer(
                PathListerWatcher(kube, resource_path("", "v1", "pods", namespace), namespace,
                                  label_selector=f"{JOB_NAME_LABEL}={name}"),
                name=f"pods of {namespace}/{name}")
            self._pods.add_event_handler(
                on_add=lambda pod: self._pod_event("ADDED", None, pod),
                on_update=lambda old, pod: self._pod_event("MODIFIED", old, pod),
                on_delete=lambda pod: self._pod_event("DELETED", None, pod))

    def _informers(self) -> list[SharedInformer]:
        return [self._job] + ([self._pods] if self._pods is not None else [])

    def start(self, timeout: float = 60.0) -> JobWatch:
        """Start the informers and wait until each has listed once (TimeoutError otherwise)."""
        for informer in self._informers():
            informer.start()
        deadline = time.monotonic() + timeout
        for informer in self._informers():
            if not informer.wait_for_sync(max(0.0, deadline - time.monotonic())):
                self.stop()
                raise TimeoutError(f"could not list {informer.name} within {timeout:.0f}s")
        return self

    def stop(self) -> None:
        for informer in self._informers():
            informer.stop()
        self._changed()

    def __enter__(self) -> JobWatch:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # --- reads ----------------------------------------------------------------------------------

    def job(self) -> dict[str, Any] | None:
        """The job as last seen, or None when it does not exist (any more)."""
        return self._job.get(f"{self.namespace}/{self.name}")

    def pods(self) -> list[dict[str, Any]]:
        """The job's pods as last seen, by name."""
        if self._pods is None:
            return []
        return sorted(self._pods.list(), key=lambda p: p["metadata"]["name"])

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
