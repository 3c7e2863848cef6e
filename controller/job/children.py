"""What a plan says about the objects a job owns besides its pods and Service, one type at a time.

A job's NetworkPolicy, its gang scheduler's PodGroup and any other owned type declared in
`controller.owned` are all planned and written the same way, so the plan carries one `Step` per
type, keyed by the type's kind (`Plan.children`), instead of create/patch/delete fields per type.

Most of those types are planned by the planner's own rules, because the job's pods depend on them
(the PodGroup's admission gates pod creation). A type that nothing else depends on brings its plan
rule with it (`ChildRule`): a pure function of `ChildSituation` -- the job, the object the cache
shows, and whether the job is finished or suspended -- so adding such a type takes one declaration
and one rule, and no edit of the planner. Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from controller.job.kinds import JobKind


@dataclass
class Step:
    """What the plan says to do with one owned object (at most one of the three)."""

    create: dict[str, Any] | None = None
    patch: tuple[Mapping[str, Any], dict[str, Any]] | None = None  # (the object, the merge patch)
    delete: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class ChildSituation:
    """What a declared plan rule sees of one job and its object of the rule's type."""

    job: Mapping[str, Any]  # the job's model
    kind: JobKind  # whose objects are owned by and labelled for the job's kind
    existing: Mapping[str, Any] | None  # the job's object in the cache (None: there is none)
    finished: bool  # Succeeded or Failed
    suspended: bool  # spec.suspend, or held by a gate such as Kueue


ChildRule = Callable[[ChildSituation], Step]


@dataclass(frozen=True)
class DeclaredChild:
    """A declared type's cached object for one job, and the rule that plans it."""

    existing: Mapping[str, Any] | None
    rule: ChildRule
