"""The Reflector: keeps a store in step with one collection by listing, then watching (client-go's Reflector).

One reflector runs in one thread, for one `ListerWatcher` (one resource, one namespace or all):

1. **List** every page (`limit`/`continue`; a 410 on a continue token restarts the list), fill in
   `kind`/`apiVersion` on the items (list items lack them), and hand the whole set to the sink's
   `on_replace`, which swaps the store and emits tombstone deletes for vanished objects.
2. **Watch** from the list's resourceVersion with bookmarks, a random server timeout in
   [300, 600] s (spreads reconnects) and a client read timeout (~90 s: a dead TCP connection
   cannot hang the thread). Every ADDED/MODIFIED/DELETED goes to the sink's `on_event`; the
   resourceVersion is tracked here, from every event and every BOOKMARK.
3. When the watch ends:
   * normally (the server timeout): watch again at once from the last resourceVersion: no relist,
     no duplicate events;
   * `410 Gone` / `Expired` (an HTTP error or an ERROR event), or "too large resource version":
     relist (a consistent list), then watch from the new resourceVersion;
   * a connection error, a read timeout, 429, 5xx or any other ERROR event: back off with jitter
     (0.8 s doubling to 30 s, see `backoff.py`) and watch again from the last resourceVersion;
   * at once, with no events at all: treated as an error (back off), so a misbehaving server
     cannot make it spin.
   A relist that is followed at once by another 410, with no event in between, backs off too.

Errors raised by the sink (a bug in a store or handler) make the reflector log, back off and relist.
Time and randomness are injected (`clock`, `rand`) so unit tests run the loop in the test thread with
scripted streams, without waiting (a `FakeClock` sleeps by moving fake time); a back-off sleeps on
the stop event, so `stop()` ends it at once, and `stop()` closes the open watch so a blocked read
returns.
"""

from __future__ import annotations

import enum
import random
import threading
from collections.abc import Callable
from typing import Any, Protocol

import structlog

from informers.backoff import Backoff
from informers.listwatch import ListerWatcher, WatchLike
from informers.store import KubeObject
from kube import ApiError
from kube.clock import REAL_CLOCK, Clock

__all__ = ["Reflector", "ReflectorSink"]

log = structlog.get_logger(__name__)

DEFAULT_PAGE_SIZE = 500
MIN_WATCH_TIMEOUT = 300
DEFAULT_READ_TIMEOUT = 90.0
SHORT_WATCH_SECONDS = 1.0
MAX_LIST_RESTARTS = 3

EVENT_TYPES = frozenset({"ADDED", "MODIFIED", "DELETED"})


class ReflectorSink(Protocol):
    """Where a reflector delivers what it learns (implemented by SharedInformer)."""

    def on_replace(self, items: list[KubeObject], *, namespace: str | None, resource_version: str) -> None:
        """A complete list of the collection (or of `namespace` in it)."""
        ...

    def on_event(self, event_type: str, obj: KubeObject) -> None:
        """One ADDED, MODIFIED or DELETED watch event."""
        ...

    # Optional: `prepare(obj) -> obj`, what the sink keeps of a listed object. The reflector applies
    # it to each item as its page arrives, so a relist of 10 000 pods never holds them all in full;
    # `on_replace` then receives prepared items.


class _Next(enum.Enum):
    REWATCH = "rewatch"
    RELIST = "relist"
    BACKOFF = "backoff"
    STOP = "stop"


class Reflector:
    """Lists and watches one collection into a sink until `stop()`. Run `run()` in its own thread."""

    def __init__(
        self,
        lister_watcher: ListerWatcher,
        sink: ReflectorSink,
        *,
        name: str | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
        min_watch_timeout: int = MIN_WATCH_TIMEOUT,
        read_timeout: float = DEFAULT_READ_TIMEOUT,
        backoff: Backoff | None = None,
        clock: Clock = REAL_CLOCK,
        rand: random.Random | None = None,
        on_relist: Callable[[str], None] | None = None,
        on_synced: Callable[[], None] | None = None,
    ) -> None:
        self.lister_watcher = lister_watcher
        self.name = name or lister_watcher.description
        self._sink = sink
        self._page_size = page_size
        self._min_watch_timeout = min_watch_timeout
        self._read_timeout = read_timeout
        self._clock = clock
        self._rand = rand or random.Random()
        self._backoff = backoff or Backoff(clock=clock, rand=self._rand.random)
        self._retry_after = 0.0
        self._stopped = threading.Event()
        self._on_relist = on_relist
        self._on_synced = on_synced
        self._lock = threading.Lock()
        self._stream: WatchLike | None = None
        self._resource_version = ""
        self._synced = False
        self._events_since_list = 0
        self._log = log.bind(reflector=self.name)
        self.list_count = 0
        self.relist_count = 0
        self.watch_count = 0

    # --- state ----------------------------------------------------------------------------------

    @property
    def resource_version(self) -> str:
        """The last resourceVersion seen (from a list, an event or a bookmark)."""
        return self._resource_version

    @property
    def has_synced(self) -> bool:
        """True once the first complete list has been delivered to the sink."""
        return self._synced

    @property
    def stopped(self) -> bool:
        return self._stopped.is_set()

    def stop(self) -> None:
        """Ask `run()` to return, and close the open watch so a blocked read ends now."""
        self._stopped.set()
        with self._lock:
            stream = self._stream
        if stream is not None:
            stream.close()

    # --- the loop -------------------------------------------------------------------------------

    def run(self) -> None:
        need_list = True
        while not self._stopped.is_set():
            if need_list:
                try:
                    self._list_and_replace()
                except ApiError as exc:
                    self._log.warning("list failed", error=str(exc), status=exc.status)
                    self._server_asked_to_wait(exc)
                    self._pause()
                    continue
                except Exception:
                    self._log.exception("delivering a list failed")
                    self._pause()
                    continue
                need_list = False
            try:
                step = self._watch_once()
            except Exception:
                self._log.exception("delivering a watch event failed; relisting")
                self._relisting()
                need_list = True
                step = _Next.BACKOFF
            if step is _Next.RELIST:
                self._relisting()
                need_list = True
                if self._events_since_list == 0:
                    self._pause()  # a fresh list was not enough: do not hammer the server
            elif step is _Next.BACKOFF:
                self._pause()

    def _pause(self) -> None:
        """Back off; never shorter than the server's last Retry-After (429, or a Status with
        details.retryAfterSeconds)."""
        delay = max(self._backoff.next_delay(), self._retry_after)
        self._retry_after = 0.0
        if not self._stopped.is_set():
            self._clock.sleep(delay, self._stopped)

    def _server_asked_to_wait(self, exc: ApiError) -> None:
        if exc.retry_after:
            self._retry_after = max(self._retry_after, float(exc.retry_after))

    # --- list -----------------------------------------------------------------------------------

    def _relisting(self) -> None:
        """Count one relist (however many list attempts it takes) and tell the metrics hook."""
        self.relist_count += 1
        self._log.info("relisting", resource_version=self._resource_version)
        if self._on_relist is not None:
            try:
                self._on_relist(self.name)
            except Exception:
                self._log.exception("on_relist hook failed")

    def _list_and_replace(self) -> None:
        items, resource_version = self._list_all()
        self.list_count += 1
        self._sink.on_replace(items, namespace=self.lister_watcher.namespace, resource_version=resource_version)
        self._resource_version = resource_version
        self._events_since_list = 0
        if not self._synced:
            self._synced = True
            if self._on_synced is not None:
                self._on_synced()

    def _list_all(self) -> tuple[list[KubeObject], str]:
        restarts = 0
        prepare: Callable[[KubeObject], KubeObject] | None = getattr(self._sink, "prepare", None)
        while True:
            items: list[KubeObject] = []
            token: str | None = None
            try:
                while True:
                    page = self.lister_watcher.list(limit=self._page_size, continue_token=token)
                    items.extend(map(prepare, _list_items(page)) if prepare else _list_items(page))
                    metadata = page.get("metadata") or {}
                    del page  # the page's full objects can go before the next one arrives
                    token = metadata.get("continue") or None
                    if token is None:
                        resource_version = str(metadata.get("resourceVersion") or "")
                        if not resource_version:
                            raise ApiError(0, "InvalidResponse", "list has no metadata.resourceVersion")
                        return items, resource_version
            except ApiError as exc:
                if token is not None and exc.gone and restarts < MAX_LIST_RESTARTS:
                    restarts += 1
                    self._log.info("continue token expired; restarting the list", error=str(exc))
                    continue
                raise

    # --- watch ----------------------------------------------------------------------------------

    def _watch_once(self) -> _Next:
        timeout = self._rand.randint(self._min_watch_timeout, 2 * self._min_watch_timeout)
        try:
            stream = self.lister_watcher.watch(
                resource_version=self._resource_version, timeout_seconds=timeout, read_timeout=self._read_timeout
            )
        except ApiError as exc:
            return self._after_error(exc, "opening watch failed")
        self.watch_count += 1
        with self._lock:
            self._stream = stream
        if self._stopped.is_set():
            stream.close()
        started = self._clock.now()
        events = 0
        try:
            for event in stream:
                if self._stopped.is_set():
                    break
                step = self._handle(event)
                if step is not None:
                    return step
                events += 1
                self._events_since_list += 1
        except ApiError as exc:
            if self._stopped.is_set():
                return _Next.STOP
            return self._after_error(exc, "watch broke")
        finally:
            with self._lock:
                self._stream = None
            stream.close()
        if self._stopped.is_set():
            return _Next.STOP
        if events == 0 and self._clock.now() - started < SHORT_WATCH_SECONDS:
            self._log.warning("watch closed at once without events")
            return _Next.BACKOFF
        return _Next.REWATCH

    def _handle(self, event: dict[str, Any]) -> _Next | None:
        """Deliver one event; return what to do next if the watch must end."""
        event_type = event.get("type")
        obj = event.get("object")
        if not isinstance(obj, dict):
            self._log.warning("watch event without an object", type=event_type)
            return None
        if event_type == "ERROR":
            return self._after_error(ApiError.from_status(obj, method="WATCH", path=self.name), "watch error event")
        if event_type in EVENT_TYPES:
            self._sink.on_event(str(event_type), obj)
        elif event_type != "BOOKMARK":
            self._log.warning("unknown watch event type skipped", type=event_type)
            return None
        resource_version = (obj.get("metadata") or {}).get("resourceVersion")
        if resource_version:
            self._resource_version = str(resource_version)
        return None

    def _after_error(self, exc: ApiError, what: str) -> _Next:
        self._server_asked_to_wait(exc)
        if exc.gone or exc.too_large_resource_version:
            self._log.info(f"{what}: resource version expired; relisting", error=str(exc))
            return _Next.RELIST
        self._log.warning(f"{what}; backing off", error=str(exc), status=exc.status)
        return _Next.BACKOFF


def _list_items(page: dict[str, Any]) -> list[KubeObject]:
    """The items of a List page, with the `kind` and `apiVersion` that list items leave out."""
    list_kind = str(page.get("kind") or "")
    kind = list_kind[: -len("List")] if list_kind.endswith("List") else ""
    api_version = page.get("apiVersion")
    items = []
    for item in page.get("items") or []:
        if not isinstance(item, dict):
            continue
        if kind and "kind" not in item:
            item["kind"] = kind
        if api_version and "apiVersion" not in item:
            item["apiVersion"] = api_version
        items.append(item)
    return items
