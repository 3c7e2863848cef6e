"""Every failed API call is one `ApiError`, classified the way client-go's `apierrors` does.

HTTP errors are classified by status plus the Status body's `reason`; transport errors (refused,
reset, timeouts, TLS) become status 0. Callers ask the error what it is (`not_found`, `conflict`,
`transient`, ...) instead of comparing numbers. Raw bodies are never kept beyond a short message,
so secrets do not reach the logs. This module knows nothing of the `kubernetes` package: the client
hands it the failed response's status, body and headers (`from_api_exception` is duck-typed).
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import ssl
from collections.abc import Mapping
from typing import Any, Protocol

import urllib3

from kube.transport import ConnectFailed

__all__ = ["FENCED_REASON", "ApiError", "ConfigError", "HttpErrorLike"]

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


class HttpErrorLike(Protocol):
    """What `ApiError.from_api_exception` reads of the client's HTTP error (its ApiException)."""

    status: Any
    reason: Any
    body: Any
    headers: Any


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
    def from_api_exception(cls, exc: HttpErrorLike, *, method: str = "", path: str = "") -> ApiError:
        """Classify the API client's HTTP error (its ApiException) by status and its Status body."""
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
        """Wrap a connection failure (refused, reset, timeout, TLS) of either HTTP stack as status 0."""
        inner = exc
        if isinstance(exc, urllib3.exceptions.MaxRetryError) and exc.reason is not None:
            inner = exc.reason
        reason = type(inner).__name__
        if isinstance(inner, ConnectFailed):  # the http.client pool's: named as urllib3 names them
            timed_out = isinstance(inner.cause, TimeoutError | socket.timeout)
            reason = "ConnectTimeoutError" if timed_out else "NewConnectionError"
            if isinstance(inner.cause, ssl.SSLError):
                reason = "SSLError"
        elif isinstance(inner, ssl.SSLError):
            reason = "SSLError"
        elif isinstance(inner, urllib3.exceptions.NewConnectionError):
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
