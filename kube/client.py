"""The Kubernetes API client boundary: the only module in the project that imports `kubernetes`.

Everything else in the operator works on raw JSON dicts and on the small API below. The reasons:

* The `kubernetes` package is pinned at 36.0.3, the last release of the old generated client. 37.x
  replaces `ApiClient.call_api(path, method, ...)` with `param_serialize` + `call_api(method, url)` and
  changes `ApiException`. Keeping every use of the package in this file means an upgrade touches one file.
* Typed model objects are slow to build (each one creates a `Configuration`) and the informers keep
  thousands of objects, so every request returns raw decoded JSON, encoded and decoded with `orjson`
  (faster than `json`, and it shares repeated keys' strings across the objects it decodes).
* One generic code path (`request(method, path, ...)`) serves every resource: core, custom resources and
  subresources alike. `resource_path()` builds the paths.

What this module decides, in one place:

* Configuration is built explicitly (never the global default, which races between threads), and the
  choice between a kubeconfig and in-cluster credentials is explicit (`Kube.load`).
* Two connection pools: ordinary requests go through `kube/transport.py` (kept-alive connections on
  http.client, `pool_size` of them idle at most: half the CPU per request of the generic client's
  urllib3 path), watches and log streams through the generic client's urllib3 pool, because they
  stream and hold their connection for minutes. Through a configured proxy, every request takes the
  urllib3 path, which speaks to proxies.
* Every failure is an `ApiError`: HTTP errors are classified by status plus the Status body's
  `reason`, transport errors (refused, reset, timeouts, TLS) become status 0. This module never retries;
  callers wrap calls with `kube.retry.retry_transient`.
* Client-side QPS/burst throttling (a blocking token bucket) on every request except watches, and an
  `on_request(verb, resource, code, seconds)` hook after every request, for metrics.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import http.client
import importlib
import sys
import threading
import time
import types
import urllib.parse
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import certifi
import orjson
import urllib3

from kube import lean_import
from kube.clock import REAL_CLOCK, Clock
from kube.discovery import Discovery
from kube.errors import FENCED_REASON, ApiError, ConfigError
from kube.paths import ParsedPath, parse_path, query_pairs, request_verb, resource_path
from kube.throttle import TokenBucket
from kube.transport import ConnectionPool, read_pieces, tls_context
from kube.watch import LineStream, TextStream, WatchStream


@dataclass(frozen=True)
class _Bounds:
    """What an answer from outside the control plane may cost: bytes, and seconds in all."""

    max_bytes: int | None = None
    deadline: float | None = None


_NO_BOUNDS = _Bounds()


def _import_client_core() -> tuple[Any, Any]:
    """Import the parts of `kubernetes` this module uses, without the generated API and model classes
    (`kube.lean_import` says why and how). Unless the whole package is already loaded (then it is
    simply reused), the two package `__init__`s never run; `kubernetes.client.models` stays an empty
    package until `decode_as_model` (benchmarks) fills it."""
    if "kubernetes.client.api" not in sys.modules:  # the full package has not been imported
        root = lean_import.package_directory("kubernetes")
        package: Any = lean_import.empty_package(root, "kubernetes")
        client: Any = lean_import.empty_package(root, "kubernetes.client")
        lean_import.empty_package(root, "kubernetes.client.models")
        with lean_import.imported_on_first_use(lean_import.RARELY_USED):
            client.ApiClient = importlib.import_module("kubernetes.client.api_client").ApiClient
            client.Configuration = importlib.import_module("kubernetes.client.configuration").Configuration
            package.config = importlib.import_module("kubernetes.config")
    return sys.modules["kubernetes.client"], sys.modules["kubernetes.config"]


k8s_client, k8s_config = _import_client_core()
ApiException = k8s_client.api_client.ApiException
ConfigException = k8s_config.ConfigException

__all__ = ["Kube", "OnRequest", "TextStream"]

OnRequest = Callable[[str, str, int, float], None]
"""Called after every request with (verb, resource, HTTP status or 0, seconds)."""

PATCH_CONTENT_TYPES: dict[str, str] = {
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "json": "application/json-patch+json",
    "apply": "application/apply-patch+yaml",
}

DEFAULT_REQUEST_TIMEOUT = 60.0
"""Seconds a non-watch request may take to connect and between bytes read."""

CONNECT_TIMEOUT = 10.0
"""Seconds to establish a TCP/TLS connection (requests and watches)."""

WATCH_POOL_SIZE = 16
"""Connections kept for watches; one per running watch (one per informer and namespace)."""

# --- the client ------------------------------------------------------------------------------------


class Kube:
    """A thread-safe client for the Kubernetes REST API on raw JSON.

    Build it with `Kube.load(kubeconfig)` (explicit choice), `Kube.from_kubeconfig()` or
    `Kube.in_cluster()`. Paths come from `resource_path()`. Query keywords are snake_case and are
    sent camelCase (`label_selector=` → `labelSelector`, `continue_=` → `continue`).
    """

    def __init__(
        self,
        configuration: Any,
        *,
        pool_size: int = 32,
        qps: float = 0,
        burst: int = 0,
        on_request: OnRequest | None = None,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        watch_pool_size: int = WATCH_POOL_SIZE,
        clock: Clock = REAL_CLOCK,
    ) -> None:
        """`configuration` is a `kubernetes.client.Configuration`; prefer the classmethods."""
        # No urllib3-level retries: a retried POST could create twice, and retry policy belongs to
        # the caller (kube.retry). Redirects are returned as they are.
        configuration.retries = urllib3.util.Retry(total=0, redirect=False)
        configuration.connection_pool_maxsize = pool_size  # read when the REST client is built
        self.configuration = configuration
        self._api = k8s_client.ApiClient(configuration=configuration)
        watch_configuration = _copy_configuration(configuration)
        watch_configuration.connection_pool_maxsize = watch_pool_size
        self._watch_api = k8s_client.ApiClient(configuration=watch_configuration)
        # Ordinary requests: kept-alive connections on http.client (kube/transport.py says why).
        self._pool = _request_pool(configuration, pool_size)
        self._user_agent = str(self._api.user_agent)
        self._limiter = TokenBucket(qps, burst or max(1, int(qps)), clock=clock) if qps > 0 else None
        # Called as write_fence(method, path) before every write; False refuses it locally (a
        # leader that may have lost its lease must not write, e.g. after being frozen).
        self.write_fence: Callable[[str, str], bool] | None = None
        self._on_request = on_request
        self._request_timeout = request_timeout
        self._clock = clock
        self._discovery = Discovery(lambda path: self.get(path), clock)
        self._watches: weakref.WeakSet[LineStream[Any]] = weakref.WeakSet()
        self._watches_lock = threading.Lock()

    @property
    def host(self) -> str:
        return str(self.configuration.host)

    # --- construction -------------------------------------------------------------------------

    @classmethod
    def from_kubeconfig(
        cls,
        path: str | None = None,
        context: str | None = None,
        *,
        pool_size: int = 32,
        qps: float = 0,
        burst: int = 0,
        on_request: OnRequest | None = None,
    ) -> Kube:
        """Credentials from a kubeconfig file (`path`, else $KUBECONFIG, else ~/.kube/config)."""
        configuration = k8s_client.Configuration()
        try:
            k8s_config.load_kube_config(
                config_file=path, context=context, client_configuration=configuration, persist_config=False
            )
        except (ConfigException, OSError, ValueError, TypeError) as exc:
            raise ConfigError(f"cannot load kubeconfig {path or '(default)'}: {exc}") from exc
        return cls(configuration, pool_size=pool_size, qps=qps, burst=burst, on_request=on_request)

    @classmethod
    def in_cluster(
        cls,
        *,
        pool_size: int = 32,
        qps: float = 0,
        burst: int = 0,
        on_request: OnRequest | None = None,
    ) -> Kube:
        """The pod's service account; its projected token is re-read as it rotates."""
        configuration = k8s_client.Configuration()
        try:
            k8s_config.load_incluster_config(client_configuration=configuration)
        except (ConfigException, OSError) as exc:
            raise ConfigError(f"not running in a cluster: {exc}") from exc
        return cls(configuration, pool_size=pool_size, qps=qps, burst=burst, on_request=on_request)

    @classmethod
    def load(
        cls,
        kubeconfig: str | None,
        *,
        context: str | None = None,
        pool_size: int = 32,
        qps: float = 0,
        burst: int = 0,
        on_request: OnRequest | None = None,
    ) -> Kube:
        """A kubeconfig when a path is given, else in-cluster credentials; never a silent fallback."""
        options: dict[str, Any] = {"pool_size": pool_size, "qps": qps, "burst": burst, "on_request": on_request}
        if kubeconfig:
            return cls.from_kubeconfig(kubeconfig, context, **options)
        try:
            return cls.in_cluster(**options)
        except ConfigError as exc:
            raise ConfigError(
                f"no kubeconfig given and no in-cluster credentials ({exc}); pass --kubeconfig PATH"
            ) from exc

    @classmethod
    def for_host(
        cls,
        host: str,
        *,
        token: str | None = None,
        ca_cert: str | None = None,
        verify_ssl: bool = True,
        **options: Any,
    ) -> Kube:
        """A client for an explicit server URL (tests, benchmarks, tools)."""
        configuration = k8s_client.Configuration(host=host)
        configuration.verify_ssl = verify_ssl
        if ca_cert:
            configuration.ssl_ca_cert = ca_cert
        if token:
            configuration.api_key["BearerToken"] = token
            configuration.api_key_prefix["BearerToken"] = "Bearer"
        return cls(configuration, **options)

    # --- requests -----------------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str | None = None,
        timeout: float | None = None,
        max_bytes: int | None = None,
        deadline: float | None = None,
    ) -> dict[str, Any] | None:
        """One HTTP request; the decoded JSON response (None when the body is empty).

        For an answer a pod writes (through the API server's proxy), `max_bytes` bounds its body
        (ApiError reason `AnswerTooLarge` past it) and `deadline` the seconds of the whole exchange
        (reason `ReadTimeoutError`), so no pod can make the operator hold more, or wait longer."""
        method = method.upper()
        if method not in ("GET", "HEAD") and self.write_fence is not None and not self.write_fence(method, path):
            raise ApiError(0, FENCED_REASON, "write refused: this process no longer holds the leader lease",
                           method=method, path=path)
        if self._limiter is not None:
            self._limiter.acquire()
        headers = {"Accept": "application/json", "Content-Type": content_type or "application/json"}
        read_timeout = self._request_timeout if timeout is None else timeout
        parsed = parse_path(path)
        code = 0
        started = self._clock.now()
        try:
            timeouts = (min(CONNECT_TIMEOUT, read_timeout), read_timeout)
            code, data = self._send(method, path, query, headers, body, timeouts, _Bounds(max_bytes, deadline))
            if not data:
                return None
            try:
                decoded = orjson.loads(data)
            except ValueError as exc:  # orjson.JSONDecodeError is one
                raise ApiError(
                    code, "InvalidResponse", f"response is not JSON: {data[:80]!r}", method=method, path=path
                ) from exc
            if not isinstance(decoded, dict):
                raise ApiError(code, "InvalidResponse", "response is not a JSON object", method=method, path=path)
            return decoded
        except ApiError as exc:
            code = exc.status
            raise
        finally:
            self._report(request_verb(method, parsed), parsed, path, code, self._clock.now() - started)

    def get(self, path: str, **query: Any) -> dict[str, Any]:
        return self._object(self.request("GET", path, query=query), "GET", path)

    def list(self, path: str, **query: Any) -> dict[str, Any]:
        """A List object, raw: `items`, `metadata.resourceVersion`, `metadata.continue`."""
        return self._object(self.request("GET", path, query=query), "GET", path)

    def create(self, path: str, body: dict[str, Any], **query: Any) -> dict[str, Any]:
        """POST to a collection path; `field_manager=`, `dry_run=` go to the query."""
        return self._object(self.request("POST", path, query=query, body=body), "POST", path)

    def replace(self, path: str, body: dict[str, Any], **query: Any) -> dict[str, Any]:
        """PUT an object (optimistic concurrency through `metadata.resourceVersion`)."""
        return self._object(self.request("PUT", path, query=query, body=body), "PUT", path)

    def delete(
        self,
        path: str,
        *,
        uid: str | None = None,
        grace_seconds: int | None = None,
        propagation: str | None = None,
    ) -> dict[str, Any] | None:
        """DELETE an object; with `uid`, only that incarnation (409 Conflict if the UID differs)."""
        options: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if uid is not None:
            options["preconditions"] = {"uid": uid}
        if grace_seconds is not None:
            options["gracePeriodSeconds"] = grace_seconds
        if propagation is not None:
            options["propagationPolicy"] = propagation
        return self.request("DELETE", path, body=options)

    def patch(
        self,
        path: str,
        body: Any,
        *,
        patch_type: str = "merge",
        field_manager: str | None = None,
        force: bool | None = None,
    ) -> dict[str, Any]:
        """PATCH with a merge (default), strategic, json (a list of operations) or apply patch."""
        try:
            content_type = PATCH_CONTENT_TYPES[patch_type]
        except KeyError:
            raise ValueError(f"patch_type must be one of {sorted(PATCH_CONTENT_TYPES)}") from None
        if patch_type == "apply" and not field_manager:
            raise ValueError("server-side apply needs a field_manager")
        if patch_type == "json" and not isinstance(body, list):
            raise ValueError("a json patch is a list of operations")
        query = {"fieldManager": field_manager, "force": force}
        result = self.request("PATCH", path, query=query, body=body, content_type=content_type)
        return self._object(result, "PATCH", path)

    def watch(
        self,
        path: str,
        *,
        resource_version: str,
        timeout_seconds: int,
        read_timeout: float,
        **query: Any,
    ) -> WatchStream:
        """Open a watch on a collection path; bookmarks are always requested.

        `timeout_seconds` is the server-side duration of the watch; `read_timeout` the most seconds
        the client waits for any bytes (a dead connection raises ApiError status 0 after it).
        """
        params = {
            **query,
            "watch": True,
            "allowWatchBookmarks": True,
            "resourceVersion": resource_version,
            "timeoutSeconds": timeout_seconds,
        }
        headers = {"Accept": "application/json", "Content-Type": "application/json"}
        parsed = parse_path(path)
        code = 0
        started = self._clock.now()
        try:
            response = self._call(
                self._watch_api, "GET", path, params, headers, None, (CONNECT_TIMEOUT, read_timeout)
            )
            code = int(response.status)
        except ApiError as exc:
            code = exc.status
            raise
        finally:
            self._report("watch", parsed, path, code, self._clock.now() - started)
        stream = WatchStream(response, method="WATCH", path=path)
        with self._watches_lock:
            self._watches.add(stream)
        return stream

    def stream_text(
        self, path: str, *, read_timeout: float | None = DEFAULT_REQUEST_TIMEOUT, **query: Any
    ) -> TextStream:
        """GET a path whose answer is text, as a `TextStream` of its lines as they arrive.

        For answers that may stay open (a pod's log with `follow=True`), so it uses the watch pool
        and can be closed from another thread. `read_timeout` is the most seconds without any bytes
        (then ApiError status 0); None waits as long as it takes. Errors answered at once (404, 400
        "container is waiting to start", ...) raise ApiError here.
        """
        if self._limiter is not None:
            self._limiter.acquire()
        parsed = parse_path(path)
        code = 0
        started = self._clock.now()
        try:
            response = self._call(self._watch_api, "GET", path, query, {"Accept": "*/*"}, None,
                                  (CONNECT_TIMEOUT, read_timeout))  # type: ignore[arg-type]
            code = int(response.status)
        except ApiError as exc:
            code = exc.status
            raise
        finally:
            self._report(request_verb("GET", parsed), parsed, path, code, self._clock.now() - started)
        stream = TextStream(response, method="GET", path=path)
        with self._watches_lock:
            self._watches.add(stream)
        return stream

    def pod_log(
        self,
        namespace: str,
        name: str,
        *,
        container: str | None = None,
        follow: bool = False,
        previous: bool = False,
        since_seconds: int | None = None,
        since_time: str | None = None,
        tail_lines: int | None = None,
        timestamps: bool = False,
        limit_bytes: int | None = None,
        read_timeout: float | None = DEFAULT_REQUEST_TIMEOUT,
    ) -> TextStream:
        """A container's log (`GET .../pods/<name>/log`), line by line; `follow` keeps it open
        for new lines. The options are PodLogOptions'; None leaves one out."""
        path = resource_path("", "v1", "pods", namespace, name, "log")
        options = {"container": container, "follow": follow or None, "previous": previous or None,
                   "since_seconds": since_seconds, "since_time": since_time, "tail_lines": tail_lines,
                   "timestamps": timestamps or None, "limit_bytes": limit_bytes}
        return self.stream_text(path, read_timeout=read_timeout, **options)

    # --- discovery ----------------------------------------------------------------------------

    def has_api(self, group: str, version: str, kind: str | None = None, *, crds: bool = True) -> bool:
        """Whether the server serves group/version (and `kind` in it); `kube.discovery` says how
        (cached; corrected by the Established CRDs unless `crds=False`)."""
        return self._discovery.has_api(group, version, kind, crds=crds)

    def invalidate_discovery(self) -> None:
        self._discovery.invalidate()

    # --- lifecycle ----------------------------------------------------------------------------

    def close(self) -> None:
        """Close open watches and both connection pools."""
        with self._watches_lock:
            watches = list(self._watches)
        for stream in watches:
            stream.close()
        if self._pool is not None:
            self._pool.close()
        for api in (self._api, self._watch_api):
            with contextlib.suppress(Exception):
                api.close()
            with contextlib.suppress(Exception):
                api.rest_client.pool_manager.clear()

    def __enter__(self) -> Kube:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- internals ----------------------------------------------------------------------------

    def _send(self, method: str, path: str, query: Mapping[str, Any] | None, headers: dict[str, str], body: Any,
              timeout: tuple[float, float], bounds: _Bounds = _NO_BOUNDS) -> tuple[int, bytes]:
        """One exchange: (status, raw body) of a 2xx answer; every failure raises ApiError."""
        if self._pool is None:  # through a proxy: the generic client's urllib3 path knows proxies
            return self._send_generic(method, path, query, headers, body, timeout, bounds)
        pairs = query_pairs(query)
        target = f"{path}?{urllib.parse.urlencode(pairs)}" if pairs else path
        payload = None if body is None else orjson.dumps(body)
        headers = {**headers, "User-Agent": self._user_agent, **self._auth_headers()}
        try:
            answer = self._pool.request(method, target, body=payload, headers=headers, read_timeout=timeout[1],
                                        connect_timeout=timeout[0], max_body=bounds.max_bytes,
                                        deadline=bounds.deadline)
        except (OSError, http.client.HTTPException) as exc:
            raise ApiError.from_transport(exc, method=method, path=path) from exc
        if not 200 <= answer.status <= 299:
            failed = types.SimpleNamespace(status=answer.status, reason=answer.reason, body=answer.body,
                                           headers=answer.headers)
            raise ApiError.from_api_exception(failed, method=method, path=path)
        return answer.status, answer.body

    def _auth_headers(self) -> dict[str, str]:
        """The credentials' headers, asked for on every request: a rotating token refreshes itself."""
        return {setting["key"]: setting["value"] for setting in self.configuration.auth_settings().values()
                if setting.get("in") == "header" and setting.get("value")}

    def _send_generic(self, method: str, path: str, query: Mapping[str, Any] | None, headers: dict[str, str],
                      body: Any, timeout: tuple[float, float], bounds: _Bounds = _NO_BOUNDS) -> tuple[int, bytes]:
        if bounds.deadline is not None:
            timeout = (min(timeout[0], bounds.deadline), min(timeout[1], bounds.deadline))
        started = time.monotonic()
        response = self._call(self._api, method, path, query, headers, body, timeout)
        try:
            if bounds.max_bytes is None and bounds.deadline is None:
                return int(response.status), response.data
            return int(response.status), read_pieces(response, bounds.max_bytes, bounds.deadline, started)
        except (urllib3.exceptions.HTTPError, http.client.HTTPException, OSError) as exc:
            with contextlib.suppress(Exception):
                response.close()  # a connection with unread bytes must not go back to the pool
            raise ApiError.from_transport(exc, method=method, path=path) from exc
        finally:
            with contextlib.suppress(Exception):
                response.release_conn()

    def _call(
        self,
        api: Any,
        method: str,
        path: str,
        query: Mapping[str, Any] | None,
        headers: dict[str, str],
        body: Any,
        timeout: tuple[float, float],
    ) -> Any:
        """`ApiClient.call_api` on raw responses; every failure becomes ApiError."""
        try:
            return api.call_api(
                path,
                method,
                query_params=query_pairs(query),
                header_params=headers,
                body=body,
                auth_settings=["BearerToken"],
                response_types_map={},
                _return_http_data_only=True,
                _preload_content=False,
                _request_timeout=timeout,
            )
        except ApiException as exc:
            raise ApiError.from_api_exception(exc, method=method, path=path) from exc
        except AttributeError as exc:
            # 36.x: call_api does `e.body.decode()` on an ApiException whose body is None (TLS
            # errors are raised as ApiException(status=0) without a body).
            if isinstance(exc.__context__, ApiException):
                raise ApiError.from_api_exception(exc.__context__, method=method, path=path) from exc
            raise
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise ApiError.from_transport(exc, method=method, path=path) from exc

    def _report(self, verb: str, parsed: ParsedPath | None, path: str, code: int, seconds: float) -> None:
        if self._on_request is None:
            return
        resource = parsed.resource if parsed is not None else path
        if parsed is not None and parsed.subresource:
            resource = f"{parsed.resource}/{parsed.subresource}"
        with contextlib.suppress(Exception):  # metrics must never break a request
            self._on_request(verb, resource, code, seconds)

    @staticmethod
    def _object(result: dict[str, Any] | None, method: str, path: str) -> dict[str, Any]:
        if result is None:
            raise ApiError(0, "InvalidResponse", "empty response body", method=method, path=path)
        return result


def _request_pool(configuration: Any, pool_size: int) -> ConnectionPool | None:
    """The http.client pool for ordinary requests, with the configuration's TLS settings; None when
    requests must go through a proxy (left to urllib3, which speaks to proxies)."""
    if getattr(configuration, "proxy", None):
        return None
    context = functools.partial(
        tls_context,
        verify=bool(configuration.verify_ssl),
        ca_file=configuration.ssl_ca_cert or certifi.where(),
        cert_file=configuration.cert_file,
        key_file=configuration.key_file,
        check_hostname=configuration.assert_hostname is not False,
    )
    return ConnectionPool(str(configuration.host), context=context,
                          server_name=getattr(configuration, "tls_server_name", None),
                          max_idle=pool_size, connect_timeout=CONNECT_TIMEOUT)


def _copy_configuration(configuration: Any) -> Any:
    """A separate Configuration for the watch pool (same credentials and refresh hook)."""
    return copy.deepcopy(configuration)



