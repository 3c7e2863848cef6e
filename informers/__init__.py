"""Informers: in-memory caches of Kubernetes objects kept current by list + watch (client-go's tools/cache).

`Store` (store.py) is the indexed cache, `Reflector` (reflector.py) the list/watch loop of one
collection, `SharedInformer` (informer.py) ties reflectors, a store and event handlers together,
`InformerFactory` (factory.py) builds and runs a set of them for one client and scope. Everything
works on raw JSON dicts; API access goes through the `kube` package only.
"""

from informers.backoff import Backoff
from informers.factory import InformerFactory
from informers.informer import EventHandler, SharedInformer
from informers.listwatch import ListerWatcher, PathListerWatcher, WatchLike
from informers.reflector import Reflector, ReflectorSink
from informers.store import (
    CONTROLLER_UID_INDEX,
    NAMESPACE_INDEX,
    CacheMutationError,
    DeletedFinalStateUnknown,
    Store,
    controller_of,
    object_key,
    slim,
    split_key,
)

__all__ = [
    "CONTROLLER_UID_INDEX",
    "NAMESPACE_INDEX",
    "Backoff",
    "CacheMutationError",
    "DeletedFinalStateUnknown",
    "EventHandler",
    "InformerFactory",
    "ListerWatcher",
    "PathListerWatcher",
    "Reflector",
    "ReflectorSink",
    "SharedInformer",
    "Store",
    "WatchLike",
    "controller_of",
    "object_key",
    "slim",
    "split_key",
]
