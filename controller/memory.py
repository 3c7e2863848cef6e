"""What the controller remembers about each job between reconciles, with one owner and one `forget`.

The informer caches are the controller's view of the cluster, but right after the controller writes
they lag behind it, so three things are kept per job key:

* expectations: pods created or deleted that the cache does not show yet (`Expectations`), so a
  reconcile never creates a pod twice or counts a failure twice;
* the written overlay: the job as our last status write returned it, used while the cache still
  holds the version that write was based on, and let go when the echo of the write reaches the
  cache (from then on the cache holds the same version: keeping both would double every job's
  memory in steady state, benchmark B4);
* the deferred status: a status computed right after creating pods and left for the reconcile that
  those pods' events bring, valid while the job is unchanged;
* the progress book: where a job with `spec.progress` reports, and the progress its status should
  show (`controller.progress.book`), while the job lives;
* the validation memo: the problems of the job's document as last checked, with a digest of it
  (`validated`). Validation is a pure function of the document, and the controller validates the
  same unchanged job on every pod event of a burst and on every resync pass: remembered, it costs
  ~5 % of a schema check. One entry per live job and check, replaced when the job changes, so
  it holds every live job however many there are, and a job's entry goes with the job.

Keeping them in one object means a job that is gone is forgotten by one call (`forget`), and the
controller's event handlers and the reconciler share one memory instead of calling into each other.
Nothing here is persisted: after a restart the controller recomputes everything from the API.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from controller.expectations import Expectations
from controller.job.validation import Problem, without_status
from controller.progress.book import ProgressBook
from informers.store import slim
from kube.clock import REAL_CLOCK, Clock


@dataclass
class _Written:
    """The job our last status write returned, and the cached resourceVersion it was based on."""

    base_resource_version: str
    job: Mapping[str, Any]


# Left out of the validation memo's digest: not validated (the status is not either).
_NOT_VALIDATED = ("resourceVersion", "managedFields")
Check = Callable[[Any], list[Problem]]


@dataclass(frozen=True)
class _Validated:
    """The problems `check` found in the job's document whose digest this is."""

    digest: bytes
    problems: tuple[Problem, ...]


def document_digest(document: Any) -> bytes | None:
    """A digest of a job document for remembering its validation (None when it is not JSON); the
    status, resourceVersion and managedFields are left out: they are not validated."""
    document = without_status(document)
    if not isinstance(document, Mapping):
        return None
    metadata = document.get("metadata")
    if isinstance(metadata, Mapping) and any(k in metadata for k in _NOT_VALIDATED):
        document = {**document, "metadata": {k: v for k, v in metadata.items() if k not in _NOT_VALIDATED}}
    try:
        text = json.dumps(document, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError):  # not JSON: no memo
        return None
    return hashlib.blake2b(text.encode(), digest_size=16).digest()


@dataclass
class _Deferred:
    """A status computed but not written, valid while the job is still at `resource_version`."""

    resource_version: str
    status: dict[str, Any]


class JobMemory:
    """Per-job memory shared by the event handlers and the reconciler; thread-safe."""

    def __init__(self, clock: Clock = REAL_CLOCK, progress: ProgressBook | None = None) -> None:
        self.expectations = Expectations(clock=clock)
        self.progress = progress if progress is not None else ProgressBook(clock)
        self._lock = threading.Lock()
        self._written: dict[str, _Written] = {}
        self._in_flight: dict[str, str] = {}  # key -> the resourceVersion a status write in flight is guarded by
        self._deferred: dict[str, _Deferred] = {}
        self._validated: dict[str, dict[Check, _Validated]] = {}

    def forget(self, key: str) -> None:
        """The job is gone: drop everything remembered about it."""
        self.expectations.forget(key)
        self.progress.forget(key)
        with self._lock:
            self._written.pop(key, None)
            self._deferred.pop(key, None)
            self._validated.pop(key, None)

    # ---- the written overlay ---------------------------------------------------------------------

    def remember_written(self, key: str, base_resource_version: str, job: dict[str, Any]) -> None:
        """`job` is the write's answer, ours to keep: slimmed like a cached job (no managedFields)."""
        slim(job)
        with self._lock:
            self._written[key] = _Written(base_resource_version, job)

    def forget_written(self, key: str) -> None:
        """A status write failed: what it would have returned is unknown, so trust the cache again."""
        with self._lock:
            self._written.pop(key, None)

    def freshest(self, key: str, cached: Mapping[str, Any]) -> Mapping[str, Any]:
        """The cached job, or the one our last status write returned if the cache lags behind it."""
        with self._lock:
            written = self._written.get(key)
            if written is None:
                return cached
            if cached["metadata"].get("resourceVersion") == written.base_resource_version:
                return written.job
            del self._written[key]
            return cached

    def wrote(self, key: str, resource_version: str | None, before: str | None = None) -> bool:
        """Whether this version of the job, just cached, is the one our last status write produced.
        If so the cache has caught up with the write and the overlay is let go. `before` is the version
        the cache held until now: the first change after the version a status write in flight is
        guarded by is that write's (any other writer's change would make it fail with a conflict,
        which requeues the job), so it is known for ours even when it arrives before the answer."""
        with self._lock:
            if before is not None and self._in_flight.get(key) == before:
                return True
            written = self._written.get(key)
            echo = (resource_version is not None and written is not None
                    and written.job["metadata"].get("resourceVersion") == resource_version)
            if echo:
                del self._written[key]
        return echo

    @contextmanager
    def writing(self, key: str, base_resource_version: str) -> Iterator[None]:
        """Around a status write guarded by `base_resource_version` (see `wrote`)."""
        with self._lock:
            self._in_flight[key] = base_resource_version
        try:
            yield
        finally:
            with self._lock:
                self._in_flight.pop(key, None)

    # ---- the deferred status ---------------------------------------------------------------------

    def defer(self, key: str, job: Mapping[str, Any], status: dict[str, Any]) -> None:
        with self._lock:
            self._deferred[key] = _Deferred(str(job["metadata"].get("resourceVersion")), status)

    def has_deferred(self, key: str) -> bool:
        """Whether a status waits for the job's next reconcile (the event handlers let that wait)."""
        with self._lock:
            return key in self._deferred

    def take_deferred(self, key: str, job: Mapping[str, Any]) -> dict[str, Any] | None:
        """The status the last pass deferred, if the job has not changed since (a changed job is
        planned afresh from the server's status, as after a restart)."""
        with self._lock:
            deferred = self._deferred.pop(key, None)
        if deferred is None or deferred.resource_version != str(job["metadata"].get("resourceVersion")):
            return None
        return deferred.status

    # ---- the validation memo ---------------------------------------------------------------------

    def validated(self, key: str, document: Any, check: Check) -> list[Problem]:
        """`check(document)`, answered from memory while the job's document (status, resourceVersion
        and managedFields aside) is the one `check` last saw for this key: an informer delivers
        the same job again and again (resyncs, status writes), and validating the whole pod
        template schema each time would cost more than the reconcile itself. A job deleted and
        created again under the same name differs in its uid, so it is checked afresh."""
        digest = document_digest(document)
        if digest is None:
            return check(document)
        with self._lock:
            known = self._validated.get(key, {}).get(check)
        if known is not None and known.digest == digest:
            return list(known.problems)
        problems = check(document)
        with self._lock:
            self._validated.setdefault(key, {})[check] = _Validated(digest, tuple(problems))
        return problems
