"""What the client raises when the API server says no or cannot be reached, and when there are no credentials.

The client is installed beside other Kubernetes tools (the Kubeflow SDK, KFP), so it talks through the
official `kubernetes` package's public API and turns its `ApiException` (or a broken connection) into
one `ClusterApiError` that says what happened: the HTTP status (0 when the server was never reached), the
Kubernetes `reason` from the Status body, and its message. Raw bodies are never kept beyond a short
message, so secrets do not reach a notebook's output.

A 404 comes in two shapes that mean different things: a Status object (no object of that name) and
the API server's bare `404 page not found` (nothing serves the path at all: a kind whose CRD is
missing or not accepted). `ClusterApiError.no_such_path` tells them apart, and `KindNotServed` is the second
explained (`tfjobs.served` reads the kind's CRD to say why and what to do).

Why not the operator's `kube.ApiError` and `kube.ConfigError`: they belong to the operator's
distribution, which a user of this client does not install (the client imports none of its packages),
and `kube` sits below `tfjob_api` in the operator's layers, so it cannot build on a class of the client
either. They also read different things: `kube` classifies the answers of the operator's own HTTP stack
for its retries, this module the official client's `ApiException`. So the two stay apart, named apart:
`ClusterApiError` and `CredentialsError` here, `ApiError` and `ConfigError` in `kube`.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["ClusterApiError", "CredentialsError", "KindNotServed"]

_MAX_MESSAGE_CHARS = 300

# A reason for answers without a Status body, so `reason` is always a Kubernetes reason.
_DEFAULT_REASONS = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 409: "Conflict",
                    410: "Gone", 422: "Invalid", 429: "TooManyRequests", 500: "InternalError",
                    503: "ServiceUnavailable", 504: "Timeout"}


class CredentialsError(Exception):
    """No usable credentials: no kubeconfig could be loaded and the process is not in a pod."""


class ClusterApiError(Exception):
    """A failed API call: `status` (0: the server was not reached), `reason`, `message`, and
    `status_object`: whether the server answered with a Kubernetes Status (False for a bare HTTP
    error, such as the `404 page not found` of a path nothing serves)."""

    def __init__(self, status: int, reason: str, message: str = "", *, status_object: bool = True) -> None:
        super().__init__(f"{status} {reason}: {message}" if message else f"{status} {reason}")
        self.status = status
        self.reason = reason
        self.message = message
        self.status_object = status_object

    @property
    def not_found(self) -> bool:
        return self.status == 404

    @property
    def no_such_path(self) -> bool:
        """A 404 without a Status object: nothing on the server serves the path (a kind whose CRD is
        absent, not accepted or not established), rather than no object of that name."""
        return self.status == 404 and not self.status_object

    @property
    def already_exists(self) -> bool:
        return self.status == 409 and self.reason == "AlreadyExists"

    @property
    def conflict(self) -> bool:
        return self.status == 409 and self.reason != "AlreadyExists"

    @property
    def gone(self) -> bool:
        return self.status == 410 or self.reason in ("Expired", "Gone")

    @classmethod
    def from_exception(cls, exc: Any) -> ClusterApiError:
        """From the official client's `ApiException` (its status, reason and Status body)."""
        status = int(getattr(exc, "status", 0) or 0)
        reason = _DEFAULT_REASONS.get(status, str(getattr(exc, "reason", "") or "Unknown"))
        message = ""
        status_object = False
        body = getattr(exc, "body", None)
        if isinstance(body, bytes):
            body = body.decode("utf-8", errors="replace")
        if body:
            try:
                decoded = json.loads(body)
            except ValueError:
                message = str(body)
            else:
                if isinstance(decoded, dict):
                    status_object = True
                    reason = str(decoded.get("reason") or reason)
                    message = str(decoded.get("message") or "")
                else:
                    message = str(body)
        # A bare error's body ends with a newline ("404 page not found\n"): a message is one line's text.
        return cls(status, reason, message.strip()[:_MAX_MESSAGE_CHARS], status_object=status_object)

    @classmethod
    def from_status(cls, status: dict[str, Any]) -> ClusterApiError:
        """From a Status object (a watch's ERROR event)."""
        return cls(int(status.get("code") or 0), str(status.get("reason") or "Unknown"),
                   str(status.get("message") or "")[:_MAX_MESSAGE_CHARS])

    @classmethod
    def unreachable(cls, exc: BaseException) -> ClusterApiError:
        """The server was not reached, or the connection broke (status 0)."""
        return cls(0, type(exc).__name__, str(exc)[:_MAX_MESSAGE_CHARS])


class KindNotServed(ClusterApiError):
    """The API server does not serve a kind of job: a request for it answered `404 page not found`.

    `message` says which kind, its CRD (`crd`, e.g. `tfjobs.kubeflow.org`) and why — it is not
    installed, or the condition that fails (`condition`: the CRD's condition as stored, e.g.
    NamesAccepted=False when its names clash with another CRD of its group), or the CRD could not
    be read — and what to do. Made by `tfjobs.served.not_served`; still a `ClusterApiError` (404 NotFound)."""

    def __init__(self, kind: str, crd: str, message: str, condition: dict[str, Any] | None = None) -> None:
        super().__init__(404, "NotFound", message, status_object=False)
        self.kind = kind
        self.crd = crd
        self.condition = condition

    def __str__(self) -> str:
        return self.message
