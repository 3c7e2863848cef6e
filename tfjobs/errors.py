"""What the client raises when the API server says no or cannot be reached, and when there are no credentials.

The client is installed beside other Kubernetes tools (the Kubeflow SDK, KFP), so it talks through the
official `kubernetes` package's public API and turns its `ApiException` (or a broken connection) into
one `ApiError` that says what happened: the HTTP status (0 when the server was never reached), the
Kubernetes `reason` from the Status body, and its message. Raw bodies are never kept beyond a short
message, so secrets do not reach a notebook's output.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["ApiError", "ConfigError"]

_MAX_MESSAGE_CHARS = 300

# A reason for answers without a Status body, so `reason` is always a Kubernetes reason.
_DEFAULT_REASONS = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 409: "Conflict",
                    410: "Gone", 422: "Invalid", 429: "TooManyRequests", 500: "InternalError",
                    503: "ServiceUnavailable", 504: "Timeout"}


class ConfigError(Exception):
    """No usable credentials: no kubeconfig could be loaded and the process is not in a pod."""


class ApiError(Exception):
    """A failed API call: `status` (0: the server was not reached), `reason`, `message`."""

    def __init__(self, status: int, reason: str, message: str = "") -> None:
        super().__init__(f"{status} {reason}: {message}" if message else f"{status} {reason}")
        self.status = status
        self.reason = reason
        self.message = message

    @property
    def not_found(self) -> bool:
        return self.status == 404

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
    def from_exception(cls, exc: Any) -> ApiError:
        """From the official client's `ApiException` (its status, reason and Status body)."""
        status = int(getattr(exc, "status", 0) or 0)
        reason = _DEFAULT_REASONS.get(status, str(getattr(exc, "reason", "") or "Unknown"))
        message = ""
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
                    reason = str(decoded.get("reason") or reason)
                    message = str(decoded.get("message") or "")
        return cls(status, reason, message[:_MAX_MESSAGE_CHARS])

    @classmethod
    def from_status(cls, status: dict[str, Any]) -> ApiError:
        """From a Status object (a watch's ERROR event)."""
        return cls(int(status.get("code") or 0), str(status.get("reason") or "Unknown"),
                   str(status.get("message") or "")[:_MAX_MESSAGE_CHARS])

    @classmethod
    def unreachable(cls, exc: BaseException) -> ApiError:
        """The server was not reached, or the connection broke (status 0)."""
        return cls(0, type(exc).__name__, str(exc)[:_MAX_MESSAGE_CHARS])
