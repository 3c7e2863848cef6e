"""A thread-safe, indexed, in-memory cache of Kubernetes objects: client-go's ThreadSafeStore + Indexer.

Objects are raw JSON dicts keyed `namespace/name` (`name` for cluster-scoped objects). Index
functions map an object to index values; the two the controller needs are built in: by namespace and
by the UID of the owning controller (the ownerReference with `controller: true`). Index functions
are pluggable (`Store(indexers={...})`, `add_indexers`).

`replace()` is what a relist calls: it swaps in the listed objects and reports what changed, with a
tombstone (`DeletedFinalStateUnknown`, the last known object) for every key that vanished, because
its DELETE event was missed while the watch was down (client-go's DeltaFIFO.Replace).

**Cached objects are read-only.** Everything returned by `get`, `list` and `by_index`, and every
object handed to event handlers, is the cached dict itself, shared by all readers and threads. Never
mutate one; `copy.deepcopy()` it before changing anything. The store does not pay for immutable
views (`types.MappingProxyType` would have to wrap every nested dict and list on every read); instead
the contract is checked by a mutation detector, enabled with `Store(detect_mutations=True)` or the
environment variable `KUBE_CACHE_MUTATION_DETECTOR=true` (the name client-go uses), which keeps a
serialised copy of every object and raises `CacheMutationError` when a cached object has changed.

The store takes ownership of the dicts passed to `add`, `update`, `delete` and `replace`, and slims
them in place before caching: `metadata.managedFields` and the
`kubectl.kubernetes.io/last-applied-configuration` annotation are dropped (often half of an object's
size, and never needed by a controller).
"""

from __future__ import annotations

import builtins
import json
import os
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "CONTROLLER_UID_INDEX",
    "LAST_APPLIED_ANNOTATION",
    "NAMESPACE_INDEX",
    "CacheMutationError",
    "DeletedFinalStateUnknown",
    "IndexFunc",
    "KubeObject",
    "ReplaceResult",
    "Store",
    "controller_of",
    "default_indexers",
    "index_by_controller_uid",
    "index_by_namespace",
    "object_key",
    "share_strings",
    "slim",
    "slim_and_share",
    "split_key",
]

KubeObject = dict[str, Any]
IndexFunc = Callable[[Mapping[str, Any]], list[str]]
KeyFunc = Callable[[Mapping[str, Any]], str]
Transform = Callable[[KubeObject], KubeObject]

NAMESPACE_INDEX = "namespace"
CONTROLLER_UID_INDEX = "controller-uid"
LAST_APPLIED_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration"
MUTATION_DETECTOR_ENV = "KUBE_CACHE_MUTATION_DETECTOR"


# --- keys --------------------------------------------------------------------------------------------


def object_key(obj: Mapping[str, Any]) -> str:
    """`namespace/name`, or `name` for cluster-scoped objects (client-go MetaNamespaceKeyFunc)."""
    if isinstance(obj, DeletedFinalStateUnknown):
        return obj.key
    metadata = obj.get("metadata") or {}
    name = metadata.get("name")
    if not name:
        raise ValueError("object has no metadata.name")
    namespace = metadata.get("namespace")
    return f"{namespace}/{name}" if namespace else str(name)


def split_key(key: str) -> tuple[str | None, str]:
    """`ns/name` → (ns, name); `name` → (None, name)."""
    namespace, sep, name = key.partition("/")
    return (namespace, name) if sep else (None, namespace)


# --- index functions ---------------------------------------------------------------------------------


def index_by_namespace(obj: Mapping[str, Any]) -> list[str]:
    namespace = (obj.get("metadata") or {}).get("namespace")
    return [namespace] if namespace else []


def controller_of(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The ownerReference with `controller: true`, if any."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            return ref
    return None


def index_by_controller_uid(obj: Mapping[str, Any]) -> list[str]:
    ref = controller_of(obj)
    uid = ref.get("uid") if ref is not None else None
    return [uid] if uid else []


def default_indexers() -> dict[str, IndexFunc]:
    return {NAMESPACE_INDEX: index_by_namespace, CONTROLLER_UID_INDEX: index_by_controller_uid}


# --- slimming ----------------------------------------------------------------------------------------


def slim(obj: KubeObject) -> KubeObject:
    """Drop what a controller never reads, in place: managedFields and the last-applied annotation."""
    metadata = obj.get("metadata")
    if isinstance(metadata, dict):
        metadata.pop("managedFields", None)
        annotations = metadata.get("annotations")
        if isinstance(annotations, dict) and LAST_APPLIED_ANNOTATION in annotations:
            del annotations[LAST_APPLIED_ANNOTATION]
            if not annotations:
                del metadata["annotations"]
    return obj


# Values unique to one object version: interning them would only grow the interpreter's string table.
_UNSHARED_VALUES = frozenset({"uid", "resourceVersion"})


def share_strings(value: Any, key: str = "") -> Any:
    """A copy of `value` with its keys and short strings interned. A JSON decoder makes fresh copies
    of every label value, image, role name and condition reason for each object, though a cache of
    thousands of objects of one kind repeats the same few: sharing them cuts a cached pod by ~40 %
    and a cached TensorFlowJob by ~25 % (benchmark B4)."""
    if isinstance(value, dict):
        return {sys.intern(k): share_strings(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [share_strings(v, key) for v in value]
    if isinstance(value, str) and len(value) <= 64 and key not in _UNSHARED_VALUES:
        return sys.intern(value)
    return value


def slim_and_share(obj: KubeObject) -> KubeObject:
    """`slim`, then `share_strings`: the transform for caches that hold many objects of one kind."""
    return share_strings(slim(obj))  # type: ignore[no-any-return]


# --- tombstones and results --------------------------------------------------------------------------


class DeletedFinalStateUnknown(dict):  # type: ignore[type-arg]
    """The last known state of an object whose deletion was noticed by a relist, not by a watch event.

    It is a (shallow) copy of the cached object, so handlers can read it like any object; `key` is
    its store key. Its contents may be stale: the object may have changed before it was deleted.
    """

    def __init__(self, key: str, obj: Mapping[str, Any]) -> None:
        super().__init__(obj)
        self.key = key

    def __repr__(self) -> str:
        return f"DeletedFinalStateUnknown({self.key!r})"


@dataclass(frozen=True)
class ReplaceResult:
    """What `Store.replace` changed: new objects, (old, new) pairs, and tombstones for vanished keys."""

    added: list[KubeObject] = field(default_factory=list)
    updated: list[tuple[KubeObject, KubeObject]] = field(default_factory=list)
    deleted: list[DeletedFinalStateUnknown] = field(default_factory=list)


class CacheMutationError(AssertionError):
    """A cached object was modified in place: someone broke the read-only contract."""


# --- the store ---------------------------------------------------------------------------------------


class Store:
    """Thread-safe map of key → object, with indices. See the module docstring for the read-only rule."""

    def __init__(
        self,
        indexers: Mapping[str, IndexFunc] | None = None,
        *,
        key_func: KeyFunc = object_key,
        transform: Transform | None = slim,
        detect_mutations: bool | None = None,
    ) -> None:
        self._lock = threading.RLock()
        self._items: dict[str, KubeObject] = {}
        self._key_func = key_func
        self._transform = transform
        self._indexers: dict[str, IndexFunc] = dict(default_indexers() if indexers is None else indexers)
        self._indices: dict[str, dict[str, set[str]]] = {name: {} for name in self._indexers}
        if detect_mutations is None:
            detect_mutations = os.environ.get(MUTATION_DETECTOR_ENV, "").lower() in ("1", "true", "yes")
        self._snapshots: dict[str, str] | None = {} if detect_mutations else None

    # --- writes ---------------------------------------------------------------------------------

    def add(self, obj: KubeObject, *, prepared: bool = False) -> KubeObject | None:
        """Insert or replace `obj` (as `prepare` makes it, unless it is `prepared` already); return
        the object it replaced, if any."""
        obj = obj if prepared else self.prepare(obj)
        key = self._key_func(obj)
        with self._lock:
            old = self._items.get(key)
            self._check(key, old)
            self._put(key, obj, old)
            return old

    update = add

    def delete(self, obj: KubeObject) -> KubeObject | None:
        """Remove the object with `obj`'s key; return the cached object, if there was one."""
        obj = self.prepare(obj)
        return self.delete_key(self._key_func(obj))

    def delete_key(self, key: str) -> KubeObject | None:
        with self._lock:
            old = self._items.get(key)
            if old is not None:
                self._check(key, old)
                del self._items[key]
                self._unindex(key, old)
                if self._snapshots is not None:
                    self._snapshots.pop(key, None)
            return old

    def replace(self, items: Iterable[KubeObject], *, namespace: str | None = None,
                prepared: bool = False) -> ReplaceResult:
        """Make the store (or one namespace of it) hold exactly `items`; report what changed.

        Objects whose resourceVersion is unchanged keep their cached instance and are not reported.
        With `namespace`, only keys in that namespace are candidates for deletion, so reflectors for
        different namespaces can share one store.
        """
        objects = list(items) if prepared else [self.prepare(obj) for obj in items]
        result = ReplaceResult()
        with self._lock:
            if namespace is None:
                previous = set(self._items)
            else:
                previous = {k for k in self._items if split_key(k)[0] == namespace}
            seen: set[str] = set()
            for obj in objects:
                key = self._key_func(obj)
                seen.add(key)
                old = self._items.get(key)
                self._check(key, old)
                if old is None:
                    self._put(key, obj, None)
                    result.added.append(obj)
                elif not _same_version(old, obj):
                    self._put(key, obj, old)
                    result.updated.append((old, obj))
            for key in sorted(previous - seen):
                old = self.delete_key(key)
                if old is not None:
                    result.deleted.append(DeletedFinalStateUnknown(key, old))
        return result

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        """Add index functions; existing objects are indexed at once."""
        with self._lock:
            for name, func in indexers.items():
                if name in self._indexers:
                    raise ValueError(f"indexer {name!r} already exists")
                self._indexers[name] = func
                index: dict[str, set[str]] = {}
                for key, obj in self._items.items():
                    for value in func(obj):
                        index.setdefault(value, set()).add(key)
                self._indices[name] = index

    # --- reads ----------------------------------------------------------------------------------

    def get(self, key: str) -> KubeObject | None:
        """The cached object (read-only) or None."""
        with self._lock:
            return self._items.get(key)

    def get_object(self, obj: Mapping[str, Any]) -> KubeObject | None:
        return self.get(self._key_func(obj))

    def list(self) -> list[KubeObject]:
        with self._lock:
            return list(self._items.values())

    def list_keys(self) -> builtins.list[str]:
        with self._lock:
            return list(self._items)

    def by_index(self, index_name: str, value: str) -> builtins.list[KubeObject]:
        """Objects whose index function returned `value` (read-only)."""
        with self._lock:
            keys = self._index(index_name).get(value, ())
            return [self._items[k] for k in sorted(keys)]

    def index_keys(self, index_name: str, value: str) -> builtins.list[str]:
        with self._lock:
            return sorted(self._index(index_name).get(value, ()))

    def index_values(self, index_name: str) -> builtins.list[str]:
        with self._lock:
            return sorted(self._index(index_name))

    @property
    def indexers(self) -> dict[str, IndexFunc]:
        with self._lock:
            return dict(self._indexers)

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._items

    # --- read-only contract ---------------------------------------------------------------------

    @property
    def detects_mutations(self) -> bool:
        return self._snapshots is not None

    def check_mutations(self) -> None:
        """Raise CacheMutationError if any cached object changed since it was stored (detector on)."""
        if self._snapshots is None:
            return
        with self._lock:
            for key, obj in self._items.items():
                self._check(key, obj)

    # --- internals ------------------------------------------------------------------------------

    def prepare(self, obj: KubeObject) -> KubeObject:
        """The object as this store keeps it (its transform applied); the store owns the result."""
        if self._transform is None or isinstance(obj, DeletedFinalStateUnknown):
            return obj
        return self._transform(obj)

    def _index(self, index_name: str) -> dict[str, set[str]]:
        try:
            return self._indices[index_name]
        except KeyError:
            raise KeyError(f"no indexer named {index_name!r}") from None

    def _put(self, key: str, obj: KubeObject, old: KubeObject | None) -> None:
        if old is not None:
            self._unindex(key, old)
        self._items[key] = obj
        for name, func in self._indexers.items():
            index = self._indices[name]
            for value in func(obj):
                index.setdefault(value, set()).add(key)
        if self._snapshots is not None:
            self._snapshots[key] = _fingerprint(obj)

    def _unindex(self, key: str, obj: KubeObject) -> None:
        for name, func in self._indexers.items():
            index = self._indices[name]
            for value in func(obj):
                keys = index.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[value]

    def _check(self, key: str, obj: KubeObject | None) -> None:
        if self._snapshots is None or obj is None:
            return
        snapshot = self._snapshots.get(key)
        if snapshot is not None and snapshot != _fingerprint(obj):
            raise CacheMutationError(
                f"cached object {key!r} was mutated; deep-copy cached objects before changing them"
            )


def _same_version(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    old_rv = (old.get("metadata") or {}).get("resourceVersion")
    new_rv = (new.get("metadata") or {}).get("resourceVersion")
    if old_rv and new_rv:
        return bool(old_rv == new_rv)
    return old == new


def _fingerprint(obj: Mapping[str, Any]) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)
