"""SharedInformer: reflectors + one store + event handlers + periodic resync (client-go's SharedIndexInformer).

An informer owns one `Store` and one `Reflector` per `ListerWatcher`: a single one for a
cluster-wide watch, or one per namespace when the operator is scoped to a list of namespaces (all of
them filling the same store; a relist replaces only its own namespace). Each reflector runs in its
own thread and delivers lists and events to the informer, which

1. updates the store **first**, then
2. calls every handler: `on_add(obj)`, `on_update(old, new)`, `on_delete(obj)`, added and updated
   objects as the store keeps them (its transform applied, as to `old`).

For a relist, vanished objects are delivered to `on_delete` as `DeletedFinalStateUnknown` (a dict
holding the last known state), changed ones to `on_update`, new ones to `on_add`. Handlers run in
the reflector's thread under one dispatch lock, so every handler sees the events of an object in
order and never two calls at once; they must therefore be quick: **handlers only enqueue keys** on
a work queue. A handler that raises is logged and the others still run. Handlers must never
mutate the objects they receive (see `store.py`).

Resync (`resync_period` seconds, 0 = off) re-delivers every cached object to `on_update(obj, obj)`
from the local cache, without any API call: the level-triggered safety net. An update whose old and
new objects are the same instance is a resync.

`start()` starts the threads, `stop()` stops and joins every one of them, `has_synced()` is true
once every reflector has delivered its first list, `wait_for_sync(timeout)` waits for that.
`on_relist(name)` is called on each relist after the first list, for a metrics counter.
"""

from __future__ import annotations

import builtins
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import structlog

from informers.listwatch import ListerWatcher
from informers.reflector import Reflector
from informers.store import IndexFunc, KubeObject, Store
from kube.clock import REAL_CLOCK, Clock

__all__ = ["EventHandler", "SharedInformer"]

log = structlog.get_logger(__name__)

DEFAULT_STOP_TIMEOUT = 30.0


@dataclass(frozen=True, eq=False)
class EventHandler:
    """Callbacks for one consumer; any of them may be None."""

    on_add: Callable[[KubeObject], None] | None = None
    on_update: Callable[[KubeObject, KubeObject], None] | None = None
    on_delete: Callable[[KubeObject], None] | None = None


class SharedInformer:
    """A cache of one resource kept current by watches, with event handlers. Thread-safe."""

    def __init__(
        self,
        lister_watchers: ListerWatcher | Sequence[ListerWatcher],
        *,
        name: str,
        indexers: Mapping[str, IndexFunc] | None = None,
        store: Store | None = None,
        resync_period: float = 0.0,
        on_relist: Callable[[str], None] | None = None,
        clock: Clock = REAL_CLOCK,
        rand: random.Random | None = None,
        reflector_options: Mapping[str, Any] | None = None,
    ) -> None:
        sources = [lister_watchers] if not isinstance(lister_watchers, Sequence) else list(lister_watchers)
        if not sources:
            raise ValueError("an informer needs at least one ListerWatcher")
        self.name = name
        self.store = store if store is not None else Store(indexers)
        self.resync_period = resync_period
        self._on_relist = on_relist
        self._dispatch = threading.RLock()
        self._handlers: list[EventHandler] = []
        self._cond = threading.Condition()
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._started = False
        self._resync_count = 0
        self.reflectors: tuple[Reflector, ...] = tuple(
            Reflector(
                source,
                self,
                name=f"{name}[{source.namespace}]" if len(sources) > 1 else name,
                clock=clock,
                rand=rand,
                on_relist=self._relisted,
                on_synced=self._notify,
                **dict(reflector_options or {}),
            )
            for source in sources
        )

    # --- handlers -------------------------------------------------------------------------------

    def add_event_handler(
        self,
        handler: EventHandler | None = None,
        *,
        on_add: Callable[[KubeObject], None] | None = None,
        on_update: Callable[[KubeObject, KubeObject], None] | None = None,
        on_delete: Callable[[KubeObject], None] | None = None,
    ) -> EventHandler:
        """Register a handler; objects already cached are delivered to its `on_add` first."""
        handler = handler or EventHandler(on_add=on_add, on_update=on_update, on_delete=on_delete)
        with self._dispatch:
            self._handlers.append(handler)
            if handler.on_add is not None:
                for obj in self.store.list():
                    self._call(handler.on_add, obj)
        return handler

    def remove_event_handler(self, handler: EventHandler) -> None:
        with self._dispatch:
            self._handlers.remove(handler)

    # --- lifecycle ------------------------------------------------------------------------------

    def start(self) -> None:
        """Start one thread per reflector, plus the resync thread when `resync_period` > 0."""
        if self._started:
            raise RuntimeError(f"informer {self.name} already started")
        self._started = True
        for index, reflector in enumerate(self.reflectors):
            self._threads.append(
                threading.Thread(target=reflector.run, name=f"informer-{self.name}-{index}", daemon=True)
            )
        if self.resync_period > 0:
            self._threads.append(
                threading.Thread(target=self._resync_loop, name=f"informer-{self.name}-resync", daemon=True)
            )
        for thread in self._threads:
            thread.start()

    def stop(self, timeout: float = DEFAULT_STOP_TIMEOUT) -> None:
        """Stop every reflector (closing open watches) and join every thread."""
        self._stopping.set()
        for reflector in self.reflectors:
            reflector.stop()
        self._notify()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        alive = [t.name for t in self._threads if t.is_alive()]
        if alive:
            raise TimeoutError(f"informer {self.name}: threads still running after {timeout}s: {alive}")

    @property
    def threads(self) -> tuple[threading.Thread, ...]:
        return tuple(self._threads)

    def has_synced(self) -> bool:
        return all(r.has_synced for r in self.reflectors)

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        """Wait until every reflector delivered its first list; False on timeout or stop."""
        with self._cond:
            self._cond.wait_for(lambda: self.has_synced() or self._stopping.is_set(), timeout)
        return self.has_synced()

    @property
    def relist_count(self) -> int:
        return sum(r.relist_count for r in self.reflectors)

    @property
    def resync_count(self) -> int:
        return self._resync_count

    # --- reads (the store's, for convenience) ---------------------------------------------------

    def get(self, key: str) -> KubeObject | None:
        return self.store.get(key)

    def list(self) -> list[KubeObject]:
        return self.store.list()

    def by_index(self, index_name: str, value: str) -> builtins.list[KubeObject]:
        return self.store.by_index(index_name, value)

    # --- resync ---------------------------------------------------------------------------------

    def resync(self) -> int:
        """Deliver every cached object to `on_update(obj, obj)`; no API call. Returns the count."""
        delivered = 0
        for key in self.store.list_keys():
            with self._dispatch:
                obj = self.store.get(key)
                if obj is None:
                    continue
                for handler in self._handlers:
                    if handler.on_update is not None:
                        self._call(handler.on_update, obj, obj)
                delivered += 1
        self._resync_count += 1
        return delivered

    def _resync_loop(self) -> None:
        while not self._stopping.wait(self.resync_period):
            try:
                self.resync()
            except Exception:
                log.exception("resync failed", informer=self.name)

    # --- ReflectorSink --------------------------------------------------------------------------

    def prepare(self, obj: KubeObject) -> KubeObject:
        """What the store keeps of a listed object (the reflector applies it page by page)."""
        return self.store.prepare(obj)

    def on_replace(self, items: builtins.list[KubeObject], *, namespace: str | None, resource_version: str) -> None:
        with self._dispatch:
            result = self.store.replace(items, namespace=namespace, prepared=True)
            for handler in self._handlers:
                if handler.on_delete is not None:
                    for tombstone in result.deleted:
                        self._call(handler.on_delete, tombstone)
                if handler.on_update is not None:
                    for old, new in result.updated:
                        self._call(handler.on_update, old, new)
                if handler.on_add is not None:
                    for obj in result.added:
                        self._call(handler.on_add, obj)

    def on_event(self, event_type: str, obj: KubeObject) -> None:
        with self._dispatch:
            if event_type == "DELETED":
                self.store.delete(obj)
                for handler in self._handlers:
                    if handler.on_delete is not None:
                        self._call(handler.on_delete, obj)
                return
            # Handlers get the object as the store keeps it (projected, slimmed), like `old`: an
            # update filter comparing the two must never see one side in full.
            obj = self.store.prepare(obj)
            old = self.store.add(obj, prepared=True)
            for handler in self._handlers:
                if old is None:
                    if handler.on_add is not None:
                        self._call(handler.on_add, obj)
                elif handler.on_update is not None:
                    self._call(handler.on_update, old, obj)

    # --- internals ------------------------------------------------------------------------------

    def _call(self, callback: Callable[..., None], *args: KubeObject) -> None:
        try:
            callback(*args)
        except Exception:
            log.exception("event handler failed", informer=self.name, handler=getattr(callback, "__qualname__", ""))

    def _relisted(self, reflector_name: str) -> None:
        if self._on_relist is not None:
            try:
                self._on_relist(self.name)
            except Exception:
                log.exception("on_relist hook failed", informer=self.name)

    def _notify(self) -> None:
        with self._cond:
            self._cond.notify_all()
