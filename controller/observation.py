"""What one reconcile reads about one job before planning, and what carrying out its plan accrues.

`Observation` is the observe phase's result: the job as stored and as modelled, the status to plan
from, its pods, its Service and each declared owned object (`controller.owned`) as the informer
caches show them -- an object of the right name that the job does not control is recorded as
foreign: never planned from, never written over. `Acting` is the act phase's running state: the
job as the last status write left it, what was done, what the API server refused, and whether the
pods wait for an owned object. Plain data: the reconciler fills both.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from controller.job.draft import Plan
from controller.job.kinds import JobKind
from controller.job.refusals import Refusal
from controller.kueue.gate import Decision
from controller.outcome import Outcome
from kube import ApiError


@dataclass(frozen=True)
class ObservedChild:
    """The job's object of one owned type: the cached object when the job controls it, and whether
    an object the job does not control holds its name."""

    existing: Mapping[str, Any] | None
    foreign: bool


@dataclass(frozen=True)
class Observation:
    """One job as the caches show it, read once per reconcile."""

    key: str
    kind: JobKind
    cache_version: str | None  # the resourceVersion the informer cache holds (for the status overlay)
    stored: Mapping[str, Any]  # the job as the API server has it
    job: Mapping[str, Any]  # its model, what the planner reads
    planned: Mapping[str, Any]  # the model with the status the last pass left unwritten, if any
    pending_creates: frozenset[str]  # pod names created whose ADDED event has not come yet
    pods: list[Mapping[str, Any]]
    service: Mapping[str, Any] | None  # the job's own Service (None: none, or a foreign one)
    foreign_service: bool
    owned: Mapping[str, ObservedChild]  # by kind, for the types that apply to this job now
    decision: Decision | None  # the Kueue gate's, for a queued job

    @property
    def name(self) -> str:
        return str(self.job["metadata"]["name"])


@dataclass
class Acting:
    """The act phase of one reconcile, as far as it has gone."""

    seen: Observation
    plan: Plan
    job: Mapping[str, Any]  # the model, with the metadata and status of the last status write
    stored: Mapping[str, Any]  # likewise, as the API server has it
    outcome: Outcome
    problems: list[str] = field(default_factory=list)  # to retry for
    refusals: list[Refusal] = field(default_factory=list)  # what the API server would not take, in order
    hold_pods: bool = False  # an owned object the pods wait for does not exist
    service_created: Future[tuple[ApiError | None, bool | None]] | None = None
