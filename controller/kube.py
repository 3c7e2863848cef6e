"""The Kubernetes API client boundary: the only module in the project that imports `kubernetes`.

Everything else in the operator works on raw JSON dicts and on the small API below. The reasons:

* The `kubernetes` package is pinned at 36.0.3, the last release of the old generated client. 37.x
  replaces `ApiClient.call_api(path, method, ...)` with `param_serialize` + `call_api(method, url)` and
  changes `ApiException`. Keeping every use of the package in this file means an upgrade touches one file.
* Typed model objects are slow to build (each one creates a `Configuration`) and the informers keep
  thousands of objects, so every request returns raw decoded JSON (`_preload_content=False`).
* One generic code path (`request(method, path, ...)`) serves every resource: core, custom resources and
  subresources alike. `resource_path()` builds the paths.

What this module decides, in one place:

* Configuration is built explicitly (never the global default, which races between threads), and the
  choice between a kubeconfig and in-cluster credentials is explicit (`Kube.load`).
* Two connection pools: one for ordinary requests (`pool_size` connections) and one for watches,
  because a watch holds its connection for minutes.
* Every failure is an `ApiError`: HTTP errors are classified by status plus the Status body's
  `reason`, transport errors (refused, reset, timeouts, TLS) become status 0. kube.py never retries;
  callers wrap calls with `controller.retry.retry_transient`.
* Client-side QPS/burst throttling (a blocking token bucket) on every request except watches, and an
  `on_request(verb, resource, code, seconds)` hook after every request, for metrics.
"""

from __future__ import annotations

import contextlib
import copy
import importlib
import importlib.util
import json
import os
import re
import socket
import sys
import threading
import time
import types
import weakref
from collections.abc import Callable, Iterator, Mapping
from types import SimpleNamespace
from typing import Any, NamedTuple

import urllib3


def _import_client_core() -> tuple[Any, Any]:
    """Import the parts of `kubernetes` this module uses, without the generated API and model classes.

    `import kubernetes` runs the package's `__init__`, which imports every generated API class and
    ~800 model classes (dynamic, watch, stream, leaderelection too): ~35 MB of RSS that nothing here
    uses, since every response is raw JSON. The operator needs only `ApiClient` (HTTP, auth, TLS),
    `Configuration`, the exceptions and the kubeconfig/in-cluster loaders. So, unless the whole
    package is already loaded (then it is simply reused), the two package `__init__`s are replaced by
    empty packages pointing at the real directories, and only the needed submodules are executed.
    `kubernetes.client.models` stays an empty package until `decode_as_model` (benchmarks) fills it.
    """
    if "kubernetes.client.api" not in sys.modules:  # the full package has not been imported
        spec = importlib.util.find_spec("kubernetes")
        if spec is None or spec.origin is None:
            raise ImportError("the kubernetes package is not installed")
        root = os.path.dirname(spec.origin)

        def empty_package(name: str, *parts: str) -> types.ModuleType:
            module = sys.modules.get(name)
            if module is None:
                module = types.ModuleType(name)
                module.__path__ = [os.path.join(root, *parts)]
                module.__package__ = name
                sys.modules[name] = module
            return module

        package = empty_package("kubernetes")
        client = empty_package("kubernetes.client", "client")
        package.client = client  # type: ignore[attr-defined]
        client.models = empty_package("kubernetes.client.models", "client", "models")  # type: ignore[attr-defined]
        client.ApiClient = importlib.import_module("kubernetes.client.api_client").ApiClient  # type: ignore[attr-defined]
        client.Configuration = importlib.import_module("kubernetes.client.configuration").Configuration  # type: ignore[attr-defined]
        package.config = importlib.import_module("kubernetes.config")  # type: ignore[attr-defined]
    return sys.modules["kubernetes.client"], sys.modules["kubernetes.config"]


k8s_client, k8s_config = _import_client_core()
ApiException = k8s_client.api_client.ApiException
ConfigException = k8s_config.ConfigException

__all__ = [
    "FENCED_REASON",
    "ApiError",
    "ApiException",
    "ConfigError",
    "Kube",
    "ParsedPath",
    "TokenBucket",
    "WatchStream",
    "decode_as_model",
    "parse_path",
    "resource_path",
]

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

_NEGATIVE_DISCOVERY_TTL = 10.0
_POSITIVE_DISCOVERY_TTL = 300.0
_MAX_MESSAGE_CHARS = 256

# Kubernetes Status reasons by HTTP status, for responses without a Status body (as client-go's
# NewGenericServerResponse does), so `reason` is always a Kubernetes reason, never "Not Found".
_DEFAULT_REASONS: dict[int, str] = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Gone",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}
_TRANSIENT_STATUSES = frozenset({0, 429, 500, 502, 503, 504})
_TIMEOUT_REASONS = frozenset({"Timeout", "ServerTimeout"})


FENCED_REASON = "WriteFenced"
"""ApiError reason (status 0) of a write refused locally by `Kube.write_fence`."""


class ConfigError(Exception):
    """No usable credentials: a bad kubeconfig, or no kubeconfig and not running in a cluster."""


class ApiError(Exception):
    """Any failed API call. `status` is the HTTP status, or 0 for transport errors.

    `reason` is the Kubernetes Status reason (`NotFound`, `AlreadyExists`, `Conflict`, `Invalid`,
    `Expired`, ...), derived from the status code when the server sent no Status body, or the
    transport exception's class name for status 0. `message` is the Status message (at most 256
    characters of any other body; raw bodies are never kept, so secrets do not reach the logs).
    `body` is the Status dict when the server sent one. `retry_after` is seconds from the
    `Retry-After` header or `details.retryAfterSeconds`.
    """

    def __init__(
        self,
        status: int,
        reason: str = "",
        message: str = "",
        *,
        retry_after: float | None = None,
        body: dict[str, Any] | None = None,
        method: str = "",
        path: str = "",
    ) -> None:
        self.status = status
        self.reason = reason or _DEFAULT_REASONS.get(status, "")
        self.message = message
        self.retry_after = retry_after
        self.body = body
        self.method = method
        self.path = path
        super().__init__(str(self))

    def __str__(self) -> str:
        where = f"{self.method} {self.path}: " if self.method or self.path else ""
        return f"{where}{self.status} {self.reason}: {self.message}".rstrip(": ")

    def __reduce__(self) -> tuple[Any, ...]:
        kwargs = {
            "retry_after": self.retry_after,
            "body": self.body,
            "method": self.method,
            "path": self.path,
        }
        return (_rebuild_api_error, (self.status, self.reason, self.message, kwargs))

    # --- classification -------------------------------------------------------------------------

    @property
    def not_found(self) -> bool:
        return self.status == 404

    @property
    def conflict(self) -> bool:
        """409 other than AlreadyExists: a stale resourceVersion or a precondition (UID) failure."""
        return self.status == 409 and self.reason != "AlreadyExists"

    @property
    def already_exists(self) -> bool:
        return self.status == 409 and self.reason == "AlreadyExists"

    @property
    def invalid(self) -> bool:
        return self.status == 422

    @property
    def gone(self) -> bool:
        """410, or reason Expired/Gone: the resourceVersion or continue token was compacted away."""
        return self.status == 410 or self.reason in ("Expired", "Gone")

    @property
    def forbidden(self) -> bool:
        return self.status == 403

    @property
    def namespace_terminating(self) -> bool:
        """403 because the namespace is being deleted (Status cause NamespaceTerminating): nothing
        can be created there any more, and everything in it is going away."""
        causes = ((self.body or {}).get("details") or {}).get("causes") or []
        return self.status == 403 and any(c.get("reason") == "NamespaceTerminating" for c in causes)

    @property
    def unauthorized(self) -> bool:
        return self.status == 401

    @property
    def quota_exceeded(self) -> bool:
        return self.status == 403 and "exceeded quota" in self.message

    @property
    def too_many_requests(self) -> bool:
        return self.status == 429

    @property
    def timeout(self) -> bool:
        """A server-side timeout (504 / reason Timeout or ServerTimeout) or a client-side one."""
        return self.reason in _TIMEOUT_REASONS or self.reason in ("ReadTimeoutError", "ConnectTimeoutError")

    @property
    def transient(self) -> bool:
        """Worth retrying as is: transport errors, 429, 500-504 and timeouts (not a fenced write)."""
        if self.reason == FENCED_REASON:
            return False
        return self.status in _TRANSIENT_STATUSES or self.timeout

    @property
    def too_large_resource_version(self) -> bool:
        """The server has not caught up with the requested resourceVersion yet (client-go relists)."""
        causes = ((self.body or {}).get("details") or {}).get("causes") or []
        if any(isinstance(c, dict) and c.get("reason") == "ResourceVersionTooLarge" for c in causes):
            return True
        return "Too large resource version" in self.message

    # --- construction ---------------------------------------------------------------------------

    @classmethod
    def from_status(cls, status: Mapping[str, Any], *, method: str = "", path: str = "") -> ApiError:
        """Build from a Status object, e.g. the object of a watch ERROR event."""
        details = status.get("details") or {}
        retry_after = details.get("retryAfterSeconds") if isinstance(details, dict) else None
        code = status.get("code")
        return cls(
            code if isinstance(code, int) else 0,
            str(status.get("reason") or ""),
            str(status.get("message") or ""),
            retry_after=float(retry_after) if isinstance(retry_after, int | float) else None,
            body=dict(status),
            method=method,
            path=path,
        )

    @classmethod
    def from_api_exception(cls, exc: ApiException, *, method: str = "", path: str = "") -> ApiError:
        """Classify a `kubernetes` ApiException by status and its Status body."""
        status = int(exc.status or 0)
        raw = exc.body
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes | bytearray) else (raw or "")
        decoded: Any = None
        if text:
            with contextlib.suppress(ValueError):
                decoded = json.loads(text)
        header_retry = _retry_after_header(exc.headers)
        if isinstance(decoded, dict) and decoded.get("kind") == "Status":
            err = cls.from_status(decoded, method=method, path=path)
            err.status = status or err.status
            if not decoded.get("reason"):
                err.reason = _DEFAULT_REASONS.get(err.status, "")
            if header_retry is not None:
                err.retry_after = header_retry
            return err
        message = text[:_MAX_MESSAGE_CHARS] if text else str(exc.reason or "")
        reason = _DEFAULT_REASONS.get(status, "") if status else _transport_reason(str(exc.reason or ""))
        return cls(status, reason, message, retry_after=header_retry, method=method, path=path)

    @classmethod
    def from_transport(cls, exc: BaseException, *, method: str = "", path: str = "") -> ApiError:
        """Wrap a urllib3/socket failure (refused, reset, timeout, TLS) as status 0."""
        inner = exc
        if isinstance(exc, urllib3.exceptions.MaxRetryError) and exc.reason is not None:
            inner = exc.reason
        reason = type(inner).__name__
        if isinstance(inner, urllib3.exceptions.NewConnectionError):
            reason = "NewConnectionError"  # a subclass of ConnectTimeoutError, but usually "refused"
        elif isinstance(inner, urllib3.exceptions.ConnectTimeoutError):
            reason = "ConnectTimeoutError"
        elif isinstance(inner, urllib3.exceptions.ReadTimeoutError | TimeoutError | socket.timeout):
            reason = "ReadTimeoutError"
        return cls(0, reason, str(inner)[:_MAX_MESSAGE_CHARS], method=method, path=path)


def _rebuild_api_error(status: int, reason: str, message: str, kwargs: dict[str, Any]) -> ApiError:
    return ApiError(status, reason, message, **kwargs)


def _transport_reason(text: str) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", first) else "TransportError"


def _retry_after_header(headers: Any) -> float | None:
    if not headers:
        return None
    value = None
    with contextlib.suppress(AttributeError):
        value = headers.get("Retry-After") or headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except (TypeError, ValueError):
        return None  # an HTTP date: the API server never sends one


# --- paths ------------------------------------------------------------------------------------------


def resource_path(
    group: str,
    version: str,
    plural: str,
    namespace: str | None = None,
    name: str | None = None,
    subresource: str | None = None,
) -> str:
    """The REST path of a collection, an object or a subresource.

    `resource_path("", "v1", "pods", "ns", "p", "status")` → `/api/v1/namespaces/ns/pods/p/status`;
    `resource_path("kubeflow.org", "v1", "tensorflowjobs")` → `/apis/kubeflow.org/v1/tensorflowjobs`
    (every namespace).
    """
    if subresource and not name:
        raise ValueError("a subresource needs an object name")
    parts = ["/api", version] if not group else ["/apis", group, version]
    if namespace:
        parts += ["namespaces", namespace]
    parts.append(plural)
    if name:
        parts.append(name)
    if subresource:
        parts.append(subresource)
    return "/".join(parts)


class ParsedPath(NamedTuple):
    group: str
    version: str
    namespace: str | None
    resource: str
    name: str | None
    subresource: str | None


_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})


def parse_path(path: str) -> ParsedPath | None:
    """The parts of a resource path, or None for non-resource paths (`/version`, discovery)."""
    segments = [s for s in path.split("?", 1)[0].split("/") if s]
    if len(segments) >= 3 and segments[0] == "api":
        group, version, rest = "", segments[1], segments[2:]
    elif len(segments) >= 4 and segments[0] == "apis":
        group, version, rest = segments[1], segments[2], segments[3:]
    else:
        return None
    namespace = None
    if rest[0] == "namespaces" and len(rest) >= 3 and not (len(rest) == 3 and rest[2] in _NAMESPACE_SUBRESOURCES):
        namespace, rest = rest[1], rest[2:]
    return ParsedPath(
        group,
        version,
        namespace,
        rest[0],
        rest[1] if len(rest) > 1 else None,
        "/".join(rest[2:]) if len(rest) > 2 else None,
    )


def _verb(method: str, parsed: ParsedPath | None) -> str:
    """The Kubernetes verb of a request: get/list/create/update/patch/delete/deletecollection."""
    has_name = parsed is None or parsed.name is not None  # a non-resource path is a plain get
    return {
        "GET": "get" if has_name else "list",
        "POST": "create",
        "PUT": "update",
        "PATCH": "patch",
        "DELETE": "delete" if has_name else "deletecollection",
    }.get(method, method.lower())


def _camel(key: str) -> str:
    """`label_selector` → `labelSelector`; `continue_` / `_continue` → `continue`."""
    stripped = key.strip("_")
    if "_" not in stripped:
        return stripped
    head, *tail = stripped.split("_")
    return head + "".join(t[:1].upper() + t[1:] for t in tail)


def _query_pairs(query: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for key, value in (query or {}).items():
        if value is None:
            continue
        values = value if isinstance(value, list | tuple) else [value]
        for v in values:
            text = ("true" if v else "false") if isinstance(v, bool) else str(v)
            pairs.append((_camel(key), text))
    return pairs


# --- client-side throttling -------------------------------------------------------------------------


class TokenBucket:
    """A blocking, thread-safe token bucket: `qps` tokens per second, at most `burst` saved up.

    `acquire()` reserves a token (the bucket may go into debt, like Go's `rate.Limiter.Wait`) and
    sleeps outside the lock until the reservation is due, so waiters are served in arrival order.
    """

    def __init__(
        self,
        qps: float,
        burst: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if qps <= 0:
            raise ValueError("qps must be > 0")
        self.qps = qps
        self.burst = max(1, burst)
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._tokens = float(self.burst)
        self._last = clock()

    def reserve(self) -> float:
        """Take a token; return the seconds to wait before using it."""
        with self._lock:
            now = self._clock()
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
            self._last = now
            self._tokens -= 1.0
            return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def acquire(self) -> float:
        """Block until a token is available; return the seconds waited."""
        delay = self.reserve()
        if delay > 0:
            self._sleep(delay)
        return delay


# --- watch streams ----------------------------------------------------------------------------------


class WatchStream:
    """An iterator of decoded watch events (`{"type": ..., "object": {...}}`) over one HTTP response.

    Iterating ends when the server closes the stream (its `timeoutSeconds` elapsed) or after
    `close()`. A broken connection or the client read timeout raises `ApiError` (status 0).
    `close()` may be called from another thread: it shuts the socket down so a blocked read returns
    at once, and the iterating thread then releases the connection.
    """

    def __init__(self, response: Any, *, method: str = "GET", path: str = "") -> None:
        self._response = response
        self._method = method
        self._path = path
        self._lock = threading.Lock()
        self._closed = False
        self._reading = False
        self._released = False
        self._events = self._iter_events()

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self

    def __next__(self) -> dict[str, Any]:
        return next(self._events)

    def __enter__(self) -> WatchStream:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Stop the stream; safe from any thread and more than once."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            reading = self._reading
        sock = _response_socket(self._response)
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        if not reading:
            self._release()

    def _release(self) -> None:
        with self._lock:
            if self._released:
                return
            self._released = True
        with contextlib.suppress(Exception):
            self._response.close()
        with contextlib.suppress(Exception):
            self._response.release_conn()

    def _iter_events(self) -> Iterator[dict[str, Any]]:
        with self._lock:
            if self._closed:
                return
            self._reading = True
        try:
            for line in self._iter_lines():
                if self._closed:
                    return
                try:
                    event = json.loads(line)
                except ValueError as exc:
                    raise ApiError(
                        0, "DecodeError", f"bad watch line: {exc}", method=self._method, path=self._path
                    ) from exc
                if isinstance(event, dict):
                    yield event
        except ApiError:
            if not self._closed:
                raise
        except (urllib3.exceptions.HTTPError, OSError, ValueError, AttributeError) as exc:
            # After close() the shut-down socket surfaces as a protocol/SSL/OS error: a normal end.
            if not self._closed:
                raise ApiError.from_transport(exc, method=self._method, path=self._path) from exc
        finally:
            with self._lock:
                self._reading = False
            self._release()

    def _iter_lines(self) -> Iterator[bytes]:
        pending = b""
        for chunk in self._response.stream(amt=None, decode_content=False):
            if not chunk:
                continue
            if isinstance(chunk, str):
                chunk = chunk.encode("utf-8")
            pending += chunk
            if b"\n" not in chunk:
                continue
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if line.strip():
                    yield line
        if pending.strip():
            yield pending  # a final line without its newline: json.loads decides whether it is whole


def _response_socket(response: Any) -> socket.socket | None:
    """The socket under a urllib3 response, found through the connection or the file object."""
    with contextlib.suppress(Exception):
        sock = response.connection.sock
        if sock is not None:
            return sock
    with contextlib.suppress(Exception):
        return response._fp.fp.raw._sock
    return None


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
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`configuration` is a `kubernetes.client.Configuration`; prefer the classmethods."""
        # No urllib3-level retries: a retried POST could create twice, and retry policy belongs to
        # the caller (controller.retry). Redirects are returned as they are.
        configuration.retries = urllib3.util.Retry(total=0, redirect=False)
        configuration.connection_pool_maxsize = pool_size  # read when the REST client is built
        self.configuration = configuration
        self._api = k8s_client.ApiClient(configuration=configuration)
        watch_configuration = _copy_configuration(configuration)
        watch_configuration.connection_pool_maxsize = watch_pool_size
        self._watch_api = k8s_client.ApiClient(configuration=watch_configuration)
        self._limiter = TokenBucket(qps, burst or max(1, int(qps))) if qps > 0 else None
        # Called as write_fence(method, path) before every write; False refuses it locally (a
        # leader that may have lost its lease must not write, e.g. after being frozen).
        self.write_fence: Callable[[str, str], bool] | None = None
        self._on_request = on_request
        self._request_timeout = request_timeout
        self._clock = clock
        self._discovery: dict[tuple[str, str], tuple[float, dict[str, Any] | None]] = {}
        self._discovery_lock = threading.Lock()
        self._watches: weakref.WeakSet[WatchStream] = weakref.WeakSet()
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
    ) -> dict[str, Any] | None:
        """One HTTP request; the decoded JSON response (None when the body is empty)."""
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
        started = self._clock()
        try:
            response = self._call(
                self._api, method, path, query, headers, body, (min(CONNECT_TIMEOUT, read_timeout), read_timeout)
            )
            code = int(response.status)
            try:
                data = response.data
            except (urllib3.exceptions.HTTPError, OSError) as exc:
                code = 0
                raise ApiError.from_transport(exc, method=method, path=path) from exc
            finally:
                with contextlib.suppress(Exception):
                    response.release_conn()
            if not data:
                return None
            try:
                decoded = json.loads(data)
            except ValueError as exc:
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
            self._report(_verb(method, parsed), parsed, path, code, self._clock() - started)

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
        started = self._clock()
        try:
            response = self._call(
                self._watch_api, "GET", path, params, headers, None, (CONNECT_TIMEOUT, read_timeout)
            )
            code = int(response.status)
        except ApiError as exc:
            code = exc.status
            raise
        finally:
            self._report("watch", parsed, path, code, self._clock() - started)
        stream = WatchStream(response, method="WATCH", path=path)
        with self._watches_lock:
            self._watches.add(stream)
        return stream

    # --- discovery ----------------------------------------------------------------------------

    def has_api(self, group: str, version: str, kind: str | None = None) -> bool:
        """Whether the server serves group/version (and `kind` in it). Cached: 5 min, misses 10 s."""
        resources = self._discover(group, version)
        if resources is None:
            return False
        if kind is None:
            return True
        return any(
            r.get("kind") == kind and "/" not in str(r.get("name", ""))
            for r in resources.get("resources") or []
        )

    def invalidate_discovery(self) -> None:
        with self._discovery_lock:
            self._discovery.clear()

    def _discover(self, group: str, version: str) -> dict[str, Any] | None:
        key = (group, version)
        now = self._clock()
        with self._discovery_lock:
            cached = self._discovery.get(key)
        if cached is not None and cached[0] > now:
            return cached[1]
        path = f"/api/{version}" if not group else f"/apis/{group}/{version}"
        try:
            resources: dict[str, Any] | None = self.get(path)
        except ApiError as exc:
            if not exc.not_found:
                raise
            resources = None
        ttl = _POSITIVE_DISCOVERY_TTL if resources is not None else _NEGATIVE_DISCOVERY_TTL
        with self._discovery_lock:
            self._discovery[key] = (now + ttl, resources)
        return resources

    # --- lifecycle ----------------------------------------------------------------------------

    def close(self) -> None:
        """Close open watches and both connection pools."""
        with self._watches_lock:
            watches = list(self._watches)
        for stream in watches:
            stream.close()
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
                query_params=_query_pairs(query),
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


def _copy_configuration(configuration: Any) -> Any:
    """A separate Configuration for the watch pool (same credentials and refresh hook)."""
    return copy.deepcopy(configuration)


# --- model decoding (benchmarks only) ---------------------------------------------------------------

_model_client: Any = None


def decode_as_model(raw_json: bytes | str, model: str) -> Any:
    """Decode raw JSON into a generated model object (e.g. 'V1Pod'), as the typed client would.

    Only for benchmarks that compare raw dicts against client models; the operator never uses it.
    """
    global _model_client
    if _model_client is None:
        _load_models()
        _model_client = k8s_client.ApiClient(configuration=k8s_client.Configuration())
    return _model_client.deserialize(SimpleNamespace(data=raw_json), model)


def _load_models() -> None:
    """Fill the empty `kubernetes.client.models` package left by `_import_client_core` (once)."""
    models = sys.modules.get("kubernetes.client.models")
    if models is not None and hasattr(models, "V1Pod"):
        return
    sys.modules.pop("kubernetes.client.models", None)
    k8s_client.models = importlib.import_module("kubernetes.client.models")
