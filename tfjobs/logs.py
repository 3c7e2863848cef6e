"""The logs of every pod of a job as one stream of lines, each tagged with its slot (`worker-1`).

Without follow, the logs of the job's pods are read once and merged in time order (the server's
timestamps are always requested). With follow, `LogFollower` runs one reader thread per pod and
container, started as pods come (a recreated pod gets a new reader under the same slot name) and
finished as they end, and stops once the job has finished and every reader is done.

Each reader remembers the timestamp of the last line it gave out (and how many lines carried it).
When its stream ends or breaks (a kubelet ends a follow stream when the container exits; a
connection can drop) it reopens with `sinceTime` and skips what it already gave out, so no line is
lost or repeated, even across in-place container restarts. When its pod ends, it keeps reading
for a short drain period (a node agent may write the last lines just after the status changes),
closes the stream and reads what is left without follow. KWOK's log server never ends a follow
stream by itself, so this is also what ends them on the devcluster.
"""

from __future__ import annotations

import contextlib
import heapq
import queue
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from tfjob_api import podstate
from tfjob_api.names import JOB_NAME_LABEL, REPLICA_INDEX_LABEL, REPLICA_TYPE_LABEL
from tfjobs.connection import Connection
from tfjobs.errors import ClusterApiError
from tfjobs.jobview import container_names, is_finished, slot_name, tf_container
from tfjobs.kinds import JobKind
from tfjobs.watching import JobWatch

__all__ = ["LogFollower", "LogLine", "format_line", "merge", "pod_selector", "read_logs", "split_timestamp",
           "timestamp_key"]

ErrorSink = Callable[[str], None]

DRAIN_SECONDS = 1.0
"""How long a reader keeps following after its pod ended, before it reads the rest without follow."""

REOPEN_PAUSE = 1.0
"""How long a reader waits (unless its pod changes first) to reopen a follow stream the server ended."""

_TIMESTAMP = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d) ")


@dataclass(frozen=True)
class LogLine:
    """One line of one container of one pod of a job."""

    prefix: str  # the slot, `worker-1`; `worker-1/sidecar` for a container other than TensorFlow's
    pod: str
    container: str
    text: str
    timestamp: str = ""  # as the server wrote it (RFC 3339 with nanoseconds), '' if it had none


# --- pure helpers ------------------------------------------------------------------------------------


def split_timestamp(line: str) -> tuple[str, str]:
    """(timestamp, text) of a line read with `timestamps=true`; ('', line) when it has none."""
    found = _TIMESTAMP.match(line)
    if not found:
        return "", line
    return line[:found.end() - 1], line[found.end():]


def timestamp_key(timestamp: str) -> str:
    """A sortable form of an RFC 3339 timestamp (nanoseconds padded; the server writes UTC), so
    `...:05.5Z` sorts after `...:05.25Z` as it should."""
    found = _TIMESTAMP.match(timestamp + " ")
    if not found:
        return timestamp
    return f"{found.group(1)}.{(found.group(2) or '').ljust(9, '0')}{found.group(3)}"


def format_line(line: LogLine, *, timestamps: bool = False, prefix: bool = True) -> str:
    """`[worker-1] text` (with `timestamps`, the server's time after the prefix)."""
    parts = []
    if prefix:
        parts.append(f"[{line.prefix}]")
    if timestamps and line.timestamp:
        parts.append(line.timestamp)
    parts.append(line.text)
    return " ".join(parts)


def merge(streams: Iterable[Iterable[LogLine]]) -> list[LogLine]:
    """Lines of several containers in time order (lines without a timestamp first; ties keep the
    order of the streams, and each stream's own order)."""
    return list(heapq.merge(*streams, key=lambda line: timestamp_key(line.timestamp)))


def pod_selector(job: str, role: str | None = None, index: int | None = None) -> str:
    """The label selector of a job's pods, narrowed to a role and an index."""
    selector = f"{JOB_NAME_LABEL}={job}"
    if role:
        selector += f",{REPLICA_TYPE_LABEL}={role}"
    if index is not None:
        selector += f",{REPLICA_INDEX_LABEL}={index}"
    return selector


def matches(pod: Mapping[str, Any], role: str | None, index: int | None) -> bool:
    slot = podstate.slot(pod)
    return slot is not None and (role is None or slot[0] == role) and (index is None or slot[1] == index)


def containers_to_read(pod: Mapping[str, Any], container: str | None, all_containers: bool) -> list[str]:
    """The containers whose logs are read: the TensorFlow one by default."""
    if all_containers:
        return container_names(pod)
    return [container or tf_container(pod)]


def line_prefix(pod: Mapping[str, Any], container: str) -> str:
    slot = podstate.slot(pod)
    base = slot_name(*slot) if slot else podstate.name(pod)
    return base if container == tf_container(pod) else f"{base}/{container}"


def has_started(pod: Mapping[str, Any], container: str) -> bool:
    """Whether the container has run (so it has a log to read)."""
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        if status.get("name") == container:
            state, last = status.get("state") or {}, status.get("lastState") or {}
            return "running" in state or "terminated" in state or "terminated" in last
    return False


def has_ended(pod: Mapping[str, Any]) -> bool:
    return podstate.phase(pod) in ("Succeeded", "Failed") or podstate.is_terminating(pod)


def _since_time(timestamp: str) -> str:
    """A `sinceTime` (seconds precision, so never after `timestamp`)."""
    return timestamp[:19] + "Z"


# --- reading once ------------------------------------------------------------------------------------


def read_logs(connection: Connection, namespace: str, pods: Iterable[Mapping[str, Any]], *,
              container: str | None = None, all_containers: bool = False, since_seconds: int | None = None,
              tail_lines: int | None = None, on_error: ErrorSink | None = None) -> list[LogLine]:
    """The logs of `pods` read once, merged in time order. A container that has no log yet (or
    cannot be read) is reported to `on_error` and skipped."""
    streams = []
    for pod in sorted(pods, key=lambda p: (podstate.slot(p) or ("~", 0), podstate.name(p))):
        for name in containers_to_read(pod, container, all_containers):
            try:
                with connection.pod_log(namespace, podstate.name(pod), container=name, timestamps=True,
                                  since_seconds=since_seconds, tail_lines=tail_lines) as stream:
                    lines = []
                    for raw in stream:
                        timestamp, text = split_timestamp(raw)
                        lines.append(LogLine(line_prefix(pod, name), podstate.name(pod), name, text, timestamp))
                    streams.append(lines)
            except ClusterApiError as error:
                if on_error is not None:
                    on_error(f"{line_prefix(pod, name)}: {error.message or error.reason}")
    return merge(streams)


# --- following ---------------------------------------------------------------------------------------


class _Reader:
    """Follows one container of one pod (one UID) and puts its lines on the follower's queue."""

    def __init__(self, follower: LogFollower, pod: Mapping[str, Any], container: str, *, initial: bool) -> None:
        self.follower = follower
        self.uid = podstate.uid(pod)
        self.pod = podstate.name(pod)
        self.container = container
        self.prefix = line_prefix(pod, container)
        self.initial = initial  # there when the follow began: --since/--tail apply
        self.last = ""  # timestamp key of the last line given out
        self.at_last = 0  # how many lines given out carried it
        self._skip = 0  # lines at `last` still to skip in a reopened stream
        self._closing = False  # the drain ended (or the pod went): a follow stream is closed at once
        self.finishing = threading.Event()
        self.stopped = threading.Event()
        self.wake = threading.Event()
        self._lock = threading.Lock()
        self._stream: Any = None
        self._stream_follows = False
        self._timer: threading.Timer | None = None
        self.thread = threading.Thread(target=self._run, name=f"logs-{self.prefix}", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def finish(self, drain: float) -> None:
        """The pod ended: read on for `drain` seconds, then what is left without follow."""
        if self.finishing.is_set():
            return
        self.finishing.set()
        self.wake.set()
        self._timer = threading.Timer(drain, self._close_follow_stream)
        self._timer.daemon = True
        self._timer.start()

    def stop(self) -> None:
        """The pod is gone: stop at once."""
        self.stopped.set()
        self.finishing.set()
        self.wake.set()
        self._close_stream()

    def _close_stream(self) -> None:
        with self._lock:
            self._closing = True
            stream = self._stream
        if stream is not None:
            stream.close()

    def _close_follow_stream(self) -> None:
        """The drain time is over: end the followed stream, so the final read (without follow)
        begins; a final read already under way is left to finish, however long it takes."""
        with self._lock:
            self._closing = True
            stream = self._stream if self._stream_follows else None
        if stream is not None:
            stream.close()

    def _open(self, follow: bool) -> Any:
        options: dict[str, Any] = {}
        if self.last:
            options["since_time"] = _since_time(self.last)
        elif self.initial:
            options = {"since_seconds": self.follower.since_seconds, "tail_lines": self.follower.tail_lines}
        return self.follower.connection.pod_log(self.follower.namespace, self.pod, container=self.container,
                                          follow=follow, timestamps=True, read_timeout=None if follow else 60.0,
                                          **options)

    def _give(self, raw: str) -> None:
        timestamp, text = split_timestamp(raw)
        if timestamp:
            key = timestamp_key(timestamp)
            if self.last and key < self.last:
                return  # given out before the stream was reopened
            if key == self.last and self._skip > 0:
                self._skip -= 1
                return
            if key == self.last:
                self.at_last += 1
            else:
                self.last, self.at_last = key, 1
        self.follower._put(LogLine(self.prefix, self.pod, self.container, text, timestamp))

    def _run(self) -> None:
        failures = 0
        try:
            while not self.stopped.is_set():
                follow = not self.finishing.is_set()
                try:
                    stream = self._open(follow)
                except ClusterApiError as error:
                    if error.not_found or self.stopped.is_set():
                        return
                    failures += 1
                    if self.finishing.is_set() and failures > 3:
                        self.follower._error(f"{self.prefix}: {error.message or error.reason}")
                        return
                    if failures == 10:
                        self.follower._error(f"{self.prefix}: cannot read the log yet: {error.message or error.reason}")
                    self.wake.wait(min(0.1 * 2 ** min(failures, 5), 3.0))  # woken early by pod changes
                    self.wake.clear()
                    continue
                failures = 0
                with self._lock:
                    self._stream, self._stream_follows = stream, follow
                    if self.stopped.is_set() or (follow and self._closing):
                        stream.close()  # asked to close while it was being opened
                self._skip = self.at_last  # lines at the last timestamp already given out
                try:
                    for raw in stream:
                        self._give(raw)
                except ClusterApiError as error:  # the connection broke: reopen from the last line
                    if not (self.finishing.is_set() or self.stopped.is_set()):
                        self.follower._error(f"{self.prefix}: log stream broke ({error.reason}); reopening")
                finally:
                    with self._lock:
                        self._stream = None
                    stream.close()
                if not follow:
                    return  # the final read without follow is done
                if not self.finishing.is_set():
                    # The server ended a follow stream: the container exited (a kubelet does that).
                    # Reopen once something changes (or shortly), from the last line given out.
                    self.wake.wait(self.follower.reopen_pause)
                    self.wake.clear()
        finally:
            if self._timer is not None:
                self._timer.cancel()
            self.follower._put(_ReaderDone(self))


@dataclass(frozen=True)
class _ReaderDone:
    reader: _Reader


_CHANGED = object()
_STOP = object()


class LogFollower:
    """Iterate over the lines of a job's pods as they are written, until the job has finished.

    Pods present at the start honour `since_seconds` / `tail_lines`; pods that come later are read
    from their first line. `close()` (or leaving a `for` loop over it, or `with`) stops everything.
    """

    def __init__(self, connection: Connection, namespace: str, job: str, *, role: str | None = None,
                 index: int | None = None, container: str | None = None, all_containers: bool = False,
                 since_seconds: int | None = None, tail_lines: int | None = None, on_error: ErrorSink | None = None,
                 drain: float = DRAIN_SECONDS, sync_timeout: float = 60.0, kind: JobKind) -> None:
        self.connection = connection
        self.namespace = namespace
        self.job = job
        self.role, self.index = role, index
        self.container, self.all_containers = container, all_containers
        self.since_seconds, self.tail_lines = since_seconds, tail_lines
        self.drain = drain
        self.reopen_pause = REOPEN_PAUSE
        self._on_error = on_error
        self._queue: queue.Queue[Any] = queue.Queue()
        self._readers: dict[tuple[str, str], _Reader] = {}
        self._done: set[tuple[str, str]] = set()
        self._initial: set[str] = set()
        self._closed = False
        self._watch = JobWatch(connection, namespace, job, kind=kind, on_pod=lambda *_: self._queue.put(_CHANGED),
                               on_job=lambda: self._queue.put(_CHANGED))
        self._watch.start(sync_timeout)
        self._initial = {podstate.uid(p) for p in self._watch.pods()}
        self._queue.put(_CHANGED)

    def _put(self, item: Any) -> None:
        self._queue.put(item)

    def _error(self, message: str) -> None:
        if self._on_error is not None:
            with contextlib.suppress(Exception):
                self._on_error(message)

    def __enter__(self) -> LogFollower:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._watch.stop()
        for reader in list(self._readers.values()):
            reader.stop()
        for reader in list(self._readers.values()):
            reader.thread.join(5)
        self._queue.put(_STOP)

    def __iter__(self) -> Iterator[LogLine]:
        try:
            while True:
                item = self._queue.get()
                if item is _STOP:
                    return
                if isinstance(item, LogLine):
                    yield item
                    continue
                if isinstance(item, _ReaderDone):
                    key = (item.reader.uid, item.reader.container)
                    if self._readers.get(key) is item.reader:
                        del self._readers[key]
                        self._done.add(key)
                if self._reconcile():
                    return
        finally:
            self.close()

    def _reconcile(self) -> bool:
        """Start and finish readers to match the pods; True when there is nothing more to read."""
        job = self._watch.model()
        pods = [p for p in self._watch.pods() if matches(p, self.role, self.index)]
        present = set()
        for pod in pods:
            for name in containers_to_read(pod, self.container, self.all_containers):
                key = (podstate.uid(pod), name)
                present.add(key)
                if key not in self._readers and key not in self._done and has_started(pod, name):
                    reader = _Reader(self, pod, name, initial=podstate.uid(pod) in self._initial)
                    self._readers[key] = reader
                    if has_ended(pod):
                        reader.finish(0.0 if not podstate.is_terminating(pod) and key[0] in self._initial
                                      else self.drain)
                    reader.start()
                elif key in self._readers:
                    self._readers[key].wake.set()  # a reader waiting to retry looks again
                    if has_ended(pod):
                        self._readers[key].finish(self.drain)
        for key, reader in list(self._readers.items()):
            if key not in present:
                reader.stop()
        over = job is None or is_finished(job)
        if over:
            for reader in self._readers.values():
                reader.finish(self.drain)
        return over and not self._readers
