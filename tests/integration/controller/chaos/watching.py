"""Independent observers for the chaos tests: raw watches of pods and jobs, run in threads.

The operator's own view cannot be trusted to judge the operator, so every chaos test watches the
API server itself. `PodWatch` is the duplicate detector: it keeps, per job, role and index (the
pod's labels, not its name), the set of *live* pods — present in the API and not yet Succeeded or
Failed; a pod stuck terminating on a lost node still counts, since its container may still run —
and records every moment at which one slot has two. It also keeps each pod's story (created,
Running, Failed, terminating, gone; node; owner) for the tests' other checks.
`JobWatch` remembers the last status of every job, so a job deleted by its TTL still shows how it
ended.

A watch that breaks (API server restarted, history compacted) is resumed from the last
resourceVersion, or relisted after 410 Gone; a relist is counted in `gaps`, since a short-lived
duplicate inside such a gap could not be seen.
"""

from __future__ import annotations

import abc
import threading
import time
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kube import ApiError, Kube, resource_path
from tfjob_api.names import GROUP, JOB_NAME_LABEL, PLURAL, REPLICA_INDEX_LABEL, REPLICA_TYPE_LABEL, VERSION

LIVE_PHASES = frozenset({"Pending", "Running", "Unknown"})
WATCH_SECONDS = 120
READ_TIMEOUT = 30.0
RECONNECT_PAUSE = 0.2

Slot = tuple[str, str, int]  # job, role, index


class RawWatch(abc.ABC):
    """List, then watch one collection in a thread; subclasses handle the objects."""

    def __init__(self, api: Kube, path: str, label_selector: str | None = None) -> None:
        self.api = api
        self.path = path
        self.label_selector = label_selector
        self.lock = threading.Lock()
        self.gaps = 0
        self.events = 0
        self.failure: str | None = None  # set if the watch thread died: then it saw nothing more
        self._resource_version = ""
        self._stop = threading.Event()
        self._stream: Any = None
        self._thread = threading.Thread(target=self._run, name=f"watch {path}", daemon=True)

    def start(self, timeout: float = 60.0) -> RawWatch:
        """List (retrying transient errors, e.g. 429 while a CRD's storage initialises), then watch."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                self._relist(initial=True)
                break
            except ApiError as error:
                if not error.transient or time.monotonic() > deadline:
                    raise
                self._stop.wait(max(RECONNECT_PAUSE, error.retry_after or 0.0))
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        with self.lock:
            stream = self._stream
        if stream is not None:
            stream.close()
        self._thread.join(10)

    def _query(self) -> dict[str, str]:
        return {"label_selector": self.label_selector} if self.label_selector else {}

    def _relist(self, initial: bool = False) -> None:
        listed = self.api.list(self.path, **self._query())
        now = time.monotonic()
        with self.lock:
            self.replace(listed["items"], now)
            if not initial:
                self.gaps += 1
        self._resource_version = listed["metadata"]["resourceVersion"]

    def _run(self) -> None:
        try:
            self._loop()
        except Exception:  # recorded, so a dead observer can never pass for a quiet cluster
            self.failure = traceback.format_exc()

    def assert_healthy(self) -> None:
        assert self.failure is None, f"the watch of {self.path} died:\n{self.failure}"

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self._watch_once()
            except ApiError as error:
                if self._stop.is_set():
                    return
                if error.gone:
                    self._relist_quietly()
                else:
                    self._stop.wait(RECONNECT_PAUSE)

    def _relist_quietly(self) -> None:
        try:
            self._relist()
        except ApiError:
            self._stop.wait(RECONNECT_PAUSE)

    def _watch_once(self) -> None:
        stream = self.api.watch(self.path, resource_version=self._resource_version, timeout_seconds=WATCH_SECONDS,
                                read_timeout=READ_TIMEOUT, **self._query())
        with self.lock:
            self._stream = stream
        try:
            for event in stream:
                if self._stop.is_set():
                    return
                kind = event.get("type")
                obj = event.get("object") or {}
                if kind == "ERROR":
                    raise ApiError.from_status(obj, method="WATCH", path=self.path)
                version = (obj.get("metadata") or {}).get("resourceVersion")
                if version:
                    self._resource_version = version
                if kind in ("ADDED", "MODIFIED", "DELETED"):
                    with self.lock:
                        self.events += 1
                        self.apply(kind, obj, time.monotonic())
        finally:
            with self.lock:
                self._stream = None
            stream.close()

    # ---- for subclasses (called with self.lock held) ----------------------------------------------

    @abc.abstractmethod
    def apply(self, kind: str, obj: Mapping[str, Any], now: float) -> None:
        """One watch event."""

    @abc.abstractmethod
    def replace(self, items: list[Mapping[str, Any]], now: float) -> None:
        """A complete (re)list."""


@dataclass
class PodStory:
    """What the watch saw of one pod (one UID)."""

    uid: str
    name: str
    slot: Slot | None
    owner_uid: str | None
    first_seen: float
    node: str = ""
    phase: str = "Pending"
    running_at: float | None = None
    failed_at: float | None = None
    exit_code: int | None = None
    reason: str = ""
    terminating_at: float | None = None
    gone_at: float | None = None
    nodes: list[str] = field(default_factory=list)

    @property
    def live(self) -> bool:
        return self.gone_at is None and self.phase in LIVE_PHASES


@dataclass(frozen=True)
class Duplicate:
    """A moment when one job/role/index had more than one live pod."""

    at: float
    slot: Slot
    uids: tuple[str, ...]


def _slot(pod: Mapping[str, Any]) -> Slot | None:
    labels = pod["metadata"].get("labels") or {}
    job, role, index = labels.get(JOB_NAME_LABEL), labels.get(REPLICA_TYPE_LABEL), labels.get(REPLICA_INDEX_LABEL)
    if not job or not role or not str(index).isdigit():
        return None
    return job, role, int(index)


def _owner(pod: Mapping[str, Any]) -> str | None:
    return next((ref.get("uid") for ref in pod["metadata"].get("ownerReferences") or [] if ref.get("controller")),
                None)


def _exit_code(pod: Mapping[str, Any]) -> int | None:
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        terminated = (status.get("state") or {}).get("terminated")
        if terminated and isinstance(terminated.get("exitCode"), int):
            return int(terminated["exitCode"])
    return None


class PodWatch(RawWatch):
    """The duplicate detector: every pod of one namespace that carries the operator's job label."""

    def __init__(self, api: Kube, namespace: str) -> None:
        super().__init__(api, resource_path("", "v1", "pods", namespace), label_selector=JOB_NAME_LABEL)
        self.stories: dict[str, PodStory] = {}
        self.live: dict[Slot, set[str]] = {}
        self.duplicates: list[Duplicate] = []

    # ---- recording ------------------------------------------------------------------------------

    def apply(self, kind: str, obj: Mapping[str, Any], now: float) -> None:
        meta = obj["metadata"]
        story = self.stories.get(meta["uid"])
        if story is None:
            story = PodStory(meta["uid"], meta["name"], _slot(obj), _owner(obj), now)
            self.stories[story.uid] = story
        status = obj.get("status") or {}
        story.phase = status.get("phase") or "Pending"
        story.node = (obj.get("spec") or {}).get("nodeName") or story.node
        if story.node and story.node not in story.nodes:
            story.nodes.append(story.node)
        if story.phase == "Running" and story.running_at is None:
            story.running_at = now
        if story.phase == "Failed" and story.failed_at is None:
            story.failed_at = now
            story.exit_code = _exit_code(obj)
            story.reason = status.get("reason") or ""
        if meta.get("deletionTimestamp") and story.terminating_at is None:
            story.terminating_at = now
        if kind == "DELETED" and story.gone_at is None:
            story.gone_at = now
        self._update_slot(story, now)

    def replace(self, items: list[Mapping[str, Any]], now: float) -> None:
        present = {item["metadata"]["uid"] for item in items}
        for story in self.stories.values():
            if story.gone_at is None and story.uid not in present:
                story.gone_at = now
                self._update_slot(story, now)
        for item in items:
            self.apply("ADDED", item, now)

    def _update_slot(self, story: PodStory, now: float) -> None:
        if story.slot is None:
            return
        live = self.live.setdefault(story.slot, set())
        if story.live:
            live.add(story.uid)
        else:
            live.discard(story.uid)
        if len(live) > 1:
            self.duplicates.append(Duplicate(now, story.slot, tuple(sorted(live))))

    # ---- questions ------------------------------------------------------------------------------

    def pods(self, job: str | None = None) -> list[PodStory]:
        with self.lock:
            return sorted((s for s in self.stories.values() if job is None or (s.slot and s.slot[0] == job)),
                          key=lambda s: s.first_seen)

    def incarnations(self, job: str) -> dict[tuple[str, int], list[PodStory]]:
        """Per (role, index) of one job, every pod the slot ever had, oldest first."""
        result: dict[tuple[str, int], list[PodStory]] = {}
        for story in self.pods(job):
            if story.slot is not None:
                result.setdefault(story.slot[1:], []).append(story)
        return result

    def failures(self, job: str) -> list[PodStory]:
        return [s for s in self.pods(job) if s.failed_at is not None]

    def seen(self, uid: str) -> PodStory | None:
        with self.lock:
            return self.stories.get(uid)


class JobWatch(RawWatch):
    """The last status the API server showed for each TensorFlowJob of a namespace (by UID)."""

    def __init__(self, api: Kube, namespace: str) -> None:
        super().__init__(api, resource_path(GROUP, VERSION, PLURAL, namespace))
        self.last: dict[str, dict[str, Any]] = {}
        self.names: dict[str, str] = {}
        self.deleted: set[str] = set()

    def apply(self, kind: str, obj: Mapping[str, Any], now: float) -> None:
        uid = obj["metadata"]["uid"]
        self.names[uid] = obj["metadata"]["name"]
        self.last[uid] = dict(obj.get("status") or {})
        if kind == "DELETED":
            self.deleted.add(uid)

    def replace(self, items: list[Mapping[str, Any]], now: float) -> None:
        present = {item["metadata"]["uid"] for item in items}
        self.deleted |= set(self.last) - present
        for item in items:
            self.apply("ADDED", item, now)

    def final_state(self, uid: str) -> str | None:
        with self.lock:
            return (self.last.get(uid) or {}).get("state")
