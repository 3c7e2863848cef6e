"""InformerFactory: builds, starts and stops a set of informers that share a client and a scope.

Every informer the controller runs (its jobs, their Pods and Services, Nodes, Kueue's objects) is
built here by `for_resource()`, once per name: with a namespace list, each namespaced informer gets
one reflector per namespace, all filling one store; cluster-scoped resources get one reflector. The
factory knows no resource of its own -- the controller names what it watches -- and it talks to the
API only through the client passed in (a `kube.Kube`, or any object with its `list`/`watch` methods).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from informers.informer import SharedInformer
from informers.listwatch import ListerWatcher, ListWatchClient, PathListerWatcher
from informers.store import Store
from kube import resource_path

__all__ = ["InformerFactory"]


class InformerFactory:
    """One informer per resource, sharing a client, a namespace scope and options."""

    def __init__(
        self,
        client: ListWatchClient,
        *,
        namespaces: Sequence[str] | None = None,
        resync_period: float = 0.0,
        on_relist: Callable[[str], None] | None = None,
        **informer_options: Any,
    ) -> None:
        """`namespaces` None or empty = every namespace; `informer_options` go to SharedInformer."""
        self.client = client
        self.namespaces = tuple(dict.fromkeys(namespaces)) if namespaces else None
        self.resync_period = resync_period
        self.on_relist = on_relist
        self._options = informer_options
        self._informers: dict[str, SharedInformer] = {}
        self._lock = threading.Lock()
        self._started = False

    # --- building -------------------------------------------------------------------------------

    def for_resource(
        self,
        name: str,
        group: str,
        version: str,
        plural: str,
        *,
        namespaced: bool = True,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resync_period: float | None = None,
        store: Store | None = None,
    ) -> SharedInformer:
        """The informer called `name`, built on first use (later calls return the same one).
        `store` replaces the default store (e.g. one with extra indexers or a transform)."""
        with self._lock:
            informer = self._informers.get(name)
            if informer is not None:
                return informer
            scopes: Sequence[str | None] = self.namespaces if namespaced and self.namespaces else (None,)
            sources: list[ListerWatcher] = [
                PathListerWatcher(
                    self.client,
                    resource_path(group, version, plural, namespace),
                    namespace=namespace,
                    label_selector=label_selector,
                    field_selector=field_selector,
                )
                for namespace in scopes
            ]
            informer = SharedInformer(
                sources,
                name=name,
                resync_period=self.resync_period if resync_period is None else resync_period,
                on_relist=self.on_relist,
                store=store,
                **self._options,
            )
            self._informers[name] = informer
            if self._started:
                informer.start()
            return informer

    def remove(self, name: str, timeout: float = 30.0) -> SharedInformer | None:
        """Stop the informer called `name` and forget it (a later `for_resource` builds a new one):
        for a resource that stops being served while the others run on. None if there was none."""
        with self._lock:
            informer = self._informers.pop(name, None)
        if informer is not None:
            informer.stop(timeout)
        return informer

    @property
    def informers(self) -> dict[str, SharedInformer]:
        with self._lock:
            return dict(self._informers)

    # --- lifecycle ------------------------------------------------------------------------------

    def start(self) -> None:
        """Start every informer built so far; informers built later start at once."""
        with self._lock:
            self._started = True
            informers = list(self._informers.values())
        for informer in informers:
            if not informer.threads:
                informer.start()

    def stop(self, timeout: float = 30.0) -> None:
        """Stop every informer and join their threads."""
        errors = []
        for informer in self.informers.values():
            try:
                informer.stop(timeout)
            except TimeoutError as exc:
                errors.append(str(exc))
        if errors:
            raise TimeoutError("; ".join(errors))

    def has_synced(self) -> bool:
        return all(i.has_synced() for i in self.informers.values())

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        """Wait for every informer's first list (the controller's `/readyz`)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for informer in self.informers.values():
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not informer.wait_for_sync(remaining):
                return False
        return True
