"""The list/watch source of a reflector, as a protocol, and its implementation on `kube`.

The reflector only needs two calls: list one page, and open one watch. Putting them behind a small
protocol (`ListerWatcher`) keeps the reflector's state machine independent of HTTP: unit tests
script fake pages and fake event streams, and the real implementation (`PathListerWatcher`) is a
thin adapter over any client with `list(path, **query)` and `watch(path, ...)` (`kube.Kube`).

A `ListerWatcher` also says which namespace it covers (`namespace`, None for all), so a relist
replaces only that part of a store shared by several reflectors.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

__all__ = ["ListWatchClient", "ListerWatcher", "PathListerWatcher", "WatchLike"]


@runtime_checkable
class WatchLike(Protocol):
    """An iterator of decoded watch events that another thread can `close()` to end promptly."""

    def __iter__(self) -> Iterator[dict[str, Any]]: ...

    def close(self) -> None: ...


class ListerWatcher(Protocol):
    """Lists and watches one collection. Both calls raise `kube.ApiError` on failure."""

    @property
    def description(self) -> str:
        """For logs and metrics, e.g. `pods in team-a (tensorflowjob.kubeflow.org/job-name)`."""
        ...

    @property
    def namespace(self) -> str | None:
        """The namespace this source covers, or None for every namespace / cluster-scoped."""
        ...

    def list(self, *, limit: int, continue_token: str | None) -> dict[str, Any]:
        """One page of a consistent list: a raw List object (`items`, `metadata.continue`)."""
        ...

    def watch(self, *, resource_version: str, timeout_seconds: int, read_timeout: float) -> WatchLike:
        """A watch from `resource_version`, with bookmarks, ending after `timeout_seconds`."""
        ...


class ListWatchClient(Protocol):
    """What PathListerWatcher needs from a client (satisfied by `kube.Kube`)."""

    def list(self, path: str, **query: Any) -> dict[str, Any]: ...

    def watch(
        self, path: str, *, resource_version: str, timeout_seconds: int, read_timeout: float, **query: Any
    ) -> WatchLike: ...


@dataclass(frozen=True)
class PathListerWatcher:
    """Lists and watches a collection path (`/api/v1/namespaces/a/pods`, `/apis/g/v/plural`, ...).

    Lists are consistent reads (`resourceVersion` unset), paginated by `limit`/`continue`, so a list
    never goes back in time, also right after a 410.
    """

    client: ListWatchClient
    path: str
    namespace: str | None = None
    label_selector: str | None = None
    field_selector: str | None = None

    @property
    def description(self) -> str:
        selector = f" ({self.label_selector})" if self.label_selector else ""
        return f"{self.path}{selector}"

    def _selectors(self) -> dict[str, str]:
        query = {}
        if self.label_selector:
            query["labelSelector"] = self.label_selector
        if self.field_selector:
            query["fieldSelector"] = self.field_selector
        return query

    def list(self, *, limit: int, continue_token: str | None) -> dict[str, Any]:
        query: dict[str, Any] = {**self._selectors(), "limit": limit}
        if continue_token:
            query["continue"] = continue_token
        return self.client.list(self.path, **query)

    def watch(self, *, resource_version: str, timeout_seconds: int, read_timeout: float) -> WatchLike:
        return self.client.watch(
            self.path,
            resource_version=resource_version,
            timeout_seconds=timeout_seconds,
            read_timeout=read_timeout,
            **self._selectors(),
        )
