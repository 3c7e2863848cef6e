"""The client's connection to the API server, through the official `kubernetes` package's public API.

The people who train install this client into notebooks and pipeline steps that already hold the
official client, the Kubeflow SDK or KFP. So it takes the official client as it is (any release from
27.2, the oldest the Kubeflow SDK 1.9 accepts, on): it loads credentials with `kubernetes.config`,
sends every request with `ApiClient.call_api` on raw responses, and decodes the JSON itself. It never
touches the package's modules or internals (the operator's own, faster client does, in the operator's
process only). Everything above works on plain dicts, like the rest of the project.

A streamed answer (a followed log, a watch) is a `Lines` iterator that another thread can end at once:
`close()` shuts the response's connection down (urllib3's `HTTPResponse.shutdown`), so a reader blocked
on a quiet log returns when the user stops following.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator, Mapping
from typing import Any, Self

import urllib3

# Each name from the module that defines it: a process that also runs the operator's own client
# (the test suite does) holds a `kubernetes.client` package without its generated classes.
from kubernetes import config as k8s_config
from kubernetes.client.api_client import ApiClient
from kubernetes.client.configuration import Configuration
from kubernetes.client.exceptions import ApiException

from tfjobs.errors import ClusterApiError, CredentialsError

__all__ = ["Connection", "Events", "Lines", "api_path"]

CONNECT_TIMEOUT = 10.0
REQUEST_TIMEOUT = 60.0
PATCH_CONTENT_TYPES = {"merge": "application/merge-patch+json", "json": "application/json-patch+json",
                       "strategic": "application/strategic-merge-patch+json"}


def api_path(group: str, version: str, plural: str, namespace: str | None = None, name: str | None = None,
             subresource: str | None = None) -> str:
    """The REST path of a collection, or of one object (and one of its subresources)."""
    parts = ["/api", version] if not group else ["/apis", group, version]
    if namespace:
        parts += ["namespaces", namespace]
    parts.append(plural)
    parts += [part for part in (name, subresource) if part]
    return "/".join(parts)


def _query_text(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _query_name(key: str) -> str:
    """Python keywords to query names: `label_selector` → `labelSelector`."""
    first, *rest = key.strip("_").split("_")
    return first + "".join(word.capitalize() for word in rest)


class Lines:
    """The lines of one streamed response (str, without the newline), closable from another thread.

    Iterating ends when the server ends the response or after `close()`; a broken connection raises
    `ClusterApiError` (status 0). `close()` from another thread shuts the connection down so a blocked read
    returns at once (urllib3 2.3 and later; with an older urllib3 the read ends with the next bytes),
    and the iterating thread then gives the connection back. Used as a context manager, it closes on exit."""

    def __init__(self, response: Any) -> None:
        self._response = response
        self._closed = threading.Event()
        self._lock = threading.Lock()
        self._reading = False
        self._released = False

    def __iter__(self) -> Iterator[str]:
        with self._lock:
            self._reading = True
        pending = b""
        try:
            for chunk in self._response.stream(amt=None, decode_content=True):
                if self._closed.is_set():
                    return
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    yield line.decode("utf-8", errors="replace")
            if pending:
                yield pending.decode("utf-8", errors="replace")
        except (urllib3.exceptions.HTTPError, OSError, ValueError, AttributeError) as exc:
            if not self._closed.is_set():  # after close() a shut-down socket is a normal end
                raise ClusterApiError.unreachable(exc) from exc
        finally:
            with self._lock:
                self._reading = False
            self._closed.set()
            self._release()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    def close(self) -> None:
        """End the stream; safe from any thread and more than once."""
        if self._closed.is_set():
            return
        self._closed.set()
        shutdown = getattr(self._response, "shutdown", None)
        if shutdown is not None:
            with contextlib.suppress(Exception):
                shutdown()
        with self._lock:
            reading = self._reading
        if not reading:  # else the iterating thread gives the connection back when its read returns
            self._release()

    def _release(self) -> None:
        with self._lock:
            if self._released:
                return
            self._released = True
        for end in ("close", "release_conn"):
            with contextlib.suppress(Exception):
                getattr(self._response, end)()


class Events(Lines):
    """The decoded events of one watch response; an ERROR event raises its ClusterApiError (410 Gone:
    the resourceVersion is too old, list again)."""

    def events(self) -> Iterator[dict[str, Any]]:
        for line in self:
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except ValueError as exc:
                raise ClusterApiError(0, "DecodeError", f"bad watch line: {line[:80]!r}") from exc
            if event.get("type") == "ERROR":
                raise ClusterApiError.from_status(event.get("object") or {})
            yield event


class Connection:
    """Raw-JSON requests on one `kubernetes.client.ApiClient`: get, list, create, replace, patch,
    delete, a pod's log and a watch, each on a REST path (`api_path`)."""

    def __init__(self, api_client: Any) -> None:
        self.api_client = api_client

    @classmethod
    def from_kubeconfig(cls, path: str | None = None, context: str | None = None) -> Connection:
        """Credentials from kubeconfig files (`path` may join several with os.pathsep, as $KUBECONFIG)."""
        configuration = Configuration()
        try:
            k8s_config.load_kube_config(config_file=path, context=context, client_configuration=configuration,
                                        persist_config=False)
        except (k8s_config.ConfigException, OSError, ValueError, TypeError) as exc:
            raise CredentialsError(f"cannot load kubeconfig {path or '(default)'}: {exc}") from exc
        return cls(ApiClient(configuration))

    @classmethod
    def in_cluster(cls) -> Connection:
        """The pod's ServiceAccount."""
        configuration = Configuration()
        try:
            k8s_config.load_incluster_config(client_configuration=configuration)
        except (k8s_config.ConfigException, OSError) as exc:
            raise CredentialsError(f"no kubeconfig and not running in a cluster: {exc}") from exc
        return cls(ApiClient(configuration))

    # --- one request --------------------------------------------------------------------------

    def _send(self, method: str, path: str, query: Mapping[str, Any] | None = None, body: Any = None, *,
              content_type: str = "application/json", accept: str = "application/json",
              read_timeout: float | None = REQUEST_TIMEOUT) -> Any:
        """The raw urllib3 response of one call; every failure is a ClusterApiError."""
        pairs = [(_query_name(key), _query_text(value)) for key, value in (query or {}).items() if value is not None]
        try:
            return self.api_client.call_api(
                path, method, query_params=pairs, header_params={"Accept": accept, "Content-Type": content_type},
                body=body, auth_settings=["BearerToken"], _return_http_data_only=True, _preload_content=False,
                _request_timeout=(CONNECT_TIMEOUT, read_timeout))
        except ApiException as exc:
            raise ClusterApiError.from_exception(exc) from exc
        except AttributeError as exc:
            # call_api decodes the body of the ApiException its REST client raised, and a transport
            # failure's (a TLS EOF under load: status 0) has none: the AttributeError hides it.
            if isinstance(exc.__context__, ApiException):
                raise ClusterApiError.from_exception(exc.__context__) from exc
            raise
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise ClusterApiError.unreachable(exc) from exc

    def _json(self, method: str, path: str, query: Mapping[str, Any] | None = None, body: Any = None,
              content_type: str = "application/json") -> dict[str, Any]:
        response = self._send(method, path, query, body, content_type=content_type)
        try:
            data = response.data
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise ClusterApiError.unreachable(exc) from exc
        finally:
            with contextlib.suppress(Exception):
                response.release_conn()
        try:
            decoded = json.loads(data) if data else {}
        except ValueError as exc:
            raise ClusterApiError(int(response.status), "InvalidResponse", f"not JSON: {data[:80]!r}") from exc
        return decoded if isinstance(decoded, dict) else {}

    def get(self, path: str, **query: Any) -> dict[str, Any]:
        return self._json("GET", path, query)

    def list(self, path: str, **query: Any) -> dict[str, Any]:
        return self._json("GET", path, query)

    def create(self, path: str, body: dict[str, Any], **query: Any) -> dict[str, Any]:
        return self._json("POST", path, query, body)

    def replace(self, path: str, body: dict[str, Any], **query: Any) -> dict[str, Any]:
        return self._json("PUT", path, query, body)

    def patch(self, path: str, body: Any, *, patch_type: str = "merge") -> dict[str, Any]:
        return self._json("PATCH", path, None, body, content_type=PATCH_CONTENT_TYPES[patch_type])

    def delete(self, path: str, *, propagation: str | None = None) -> dict[str, Any]:
        options: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if propagation is not None:
            options["propagationPolicy"] = propagation
        return self._json("DELETE", path, None, options)

    # --- streams ------------------------------------------------------------------------------

    def pod_log(self, namespace: str, name: str, *, container: str | None = None, follow: bool = False,
                previous: bool = False, since_seconds: int | None = None, since_time: str | None = None,
                tail_lines: int | None = None, timestamps: bool = False,
                read_timeout: float | None = REQUEST_TIMEOUT) -> Lines:
        """A container's log, line by line; with `follow`, new lines as they come. `read_timeout`
        is the most seconds without any bytes (None: as long as it takes)."""
        query = {"container": container, "follow": follow or None, "previous": previous or None,
                 "since_seconds": since_seconds, "since_time": since_time, "tail_lines": tail_lines,
                 "timestamps": timestamps or None}
        path = api_path("", "v1", "pods", namespace, name, "log")
        return Lines(self._send("GET", path, query, accept="*/*", read_timeout=read_timeout))

    def watch(self, path: str, *, resource_version: str, timeout_seconds: int, **query: Any) -> Events:
        """The events of one watch from `resource_version`, until the server ends it after
        `timeout_seconds` or someone calls its `close()`."""
        query = {**query, "watch": True, "resource_version": resource_version, "allow_watch_bookmarks": True,
                 "timeout_seconds": timeout_seconds}
        return Events(self._send("GET", path, query, read_timeout=timeout_seconds + 30.0))

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.api_client.close()
