"""Expectations: what this controller wrote and the informer cache has not shown yet.

Right after a create or delete the cache is stale, so a reconcile that trusted it would create the
same pod again or count one failure twice. Like client-go's UID-tracking expectations, each job
key records the pod *names* it expects to appear and the pod *UIDs* it expects to disappear; the
informer handlers lower them as events arrive. Entries expire after `ttl` seconds (a lost event
must not block a job forever; the informer's relist repairs the cache by then). Tracking names,
not counters, keeps them per job *and* role and makes a duplicate event harmless.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field

from kube.clock import REAL_CLOCK, Clock

DEFAULT_TTL = 300.0


@dataclass
class _Pending:
    creates: dict[str, float] = field(default_factory=dict)  # pod name -> expiry
    deletes: dict[str, float] = field(default_factory=dict)  # pod uid -> expiry


class Expectations:
    def __init__(self, ttl: float = DEFAULT_TTL, clock: Clock = REAL_CLOCK) -> None:
        self._ttl = ttl
        self._clock = clock
        self._lock = threading.Lock()
        self._by_key: dict[str, _Pending] = {}

    def expect_creations(self, key: str, names: Iterable[str]) -> None:
        expiry = self._clock.now() + self._ttl
        with self._lock:
            pending = self._by_key.setdefault(key, _Pending())
            for name in names:
                pending.creates[name] = expiry

    def creation_observed(self, key: str, name: str) -> None:
        """The cache has the pod (or its create failed): stop waiting for it."""
        with self._lock:
            pending = self._by_key.get(key)
            if pending is not None:
                pending.creates.pop(name, None)

    def expect_deletions(self, key: str, uids: Iterable[str]) -> None:
        expiry = self._clock.now() + self._ttl
        with self._lock:
            pending = self._by_key.setdefault(key, _Pending())
            for uid in uids:
                pending.deletes[uid] = expiry

    def deletion_observed(self, key: str, uid: str) -> None:
        with self._lock:
            pending = self._by_key.get(key)
            if pending is not None:
                pending.deletes.pop(uid, None)

    def pending_creations(self, key: str) -> frozenset[str]:
        return self._live(key, "creates")

    def pending_deletions(self, key: str) -> frozenset[str]:
        return self._live(key, "deletes")

    def satisfied(self, key: str) -> bool:
        return not self.pending_creations(key) and not self.pending_deletions(key)

    def forget(self, key: str) -> None:
        with self._lock:
            self._by_key.pop(key, None)

    def _live(self, key: str, kind: str) -> frozenset[str]:
        now = self._clock.now()
        with self._lock:
            pending = self._by_key.get(key)
            if pending is None:
                return frozenset()
            entries: dict[str, float] = getattr(pending, kind)
            for item in [item for item, expiry in entries.items() if expiry <= now]:
                del entries[item]
            if not pending.creates and not pending.deletes:
                del self._by_key[key]
            return frozenset(entries)
