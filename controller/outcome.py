"""What one reconcile did (`Outcome`), and how the API server's refusals are classified (`classify`).

Shared by the reconciler and the writer of a job's companion objects (`controller.companions`),
which both record into one outcome and hand refusals to the pure core
(`controller.job.refusals.fold_refusals`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from controller.job.refusals import Cause, Refusal
from kube import ApiError


@dataclass
class Outcome:
    """What one reconcile did, for the log line and for tests."""

    requeue_after: float | None = None
    created: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    status_written: bool = False
    status_deferred: bool = False  # left for the reconcile the pods' starts or `requeue_after` bring
    job_deleted: bool = False
    errors: list[str] = field(default_factory=list)
    retry_after: float | None = None  # the longest Retry-After among the errors

    def requeue_in(self, seconds: float) -> None:
        """Look again after `seconds` at the latest (the sooner of this and any requeue planned)."""
        self.requeue_after = seconds if self.requeue_after is None else min(self.requeue_after, seconds)

    def server_asked_to_wait(self, error: ApiError) -> None:
        if error.retry_after:
            self.retry_after = max(self.retry_after or 0.0, float(error.retry_after))


def classify(kind: str, name: str, error: ApiError, invalid_reason: str = "InvalidPodTemplate") -> Refusal:
    """What the API server's refusal to create (or patch) `kind` `name` was, for the pure core."""
    if error.invalid:
        return Refusal(kind, name, Cause.INVALID, error.message, invalid_reason)
    if error.already_exists:
        return Refusal(kind, name, Cause.NAME_TAKEN)
    if error.quota_exceeded:
        return Refusal(kind, name, Cause.QUOTA, error.message)
    if error.not_found or error.namespace_terminating:
        return Refusal(kind, name, Cause.GOING_AWAY)
    return Refusal(kind, name, Cause.OTHER, str(error))


def owned_by(obj: Mapping[str, Any], job_uid: str) -> bool:
    return any(ref.get("controller") and ref.get("uid") == job_uid
               for ref in (obj.get("metadata") or {}).get("ownerReferences") or [])
