"""What the operator will create for a job, asked of its own planner: `tfjob-operator render`.

A preview that assembled the objects itself would drift from what the operator writes (it did: a
TFJob's Master went to Volcano as task `chief`, where the operator writes `master`). So `preview`
builds nothing: it runs `plan_job` -- the reconciler's planner -- on the job as the operator first
sees it (its model, defaulted, with no status, no pods, no Service, no NetworkPolicy or PodGroup
yet) under the operator's settings, and returns the plan's creates in the order the reconciler
writes them: the NetworkPolicy, the Workload (`--gang-scheduler kubernetes`), the PodGroup, the
Service, the pods.

Two waits are looked past, so the preview shows the pods the job will have:

* a gang scheduler that admits a group before its pods may be created (Volcano): the pods are
  those planned once the group is admitted (`GangScheduler.as_admitted`);
* `spec.suspend`: the job is planned as resumed. (Kueue's admission is not consulted either.)

Pure: the caller gives the time the plan is made at.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from controller.job import gang, gang_workload, netpol
from controller.job.children import ChildSituation
from controller.job.draft import Plan
from controller.job.gang_schedulers import GangScheduler
from controller.job.kinds import JobKind
from controller.job.plan import PlanInputs, plan_job
from controller.job.profiles import Profile
from tfjob_api import conditions as cond


@dataclass(frozen=True)
class Settings:
    """The operator's flags that change what it creates (`run` and `render` share them)."""

    network_policy_default: bool = False
    scheduler: GangScheduler | None = None
    cluster_domain: str = ""
    profiles: Sequence[Profile] = ()


@dataclass(frozen=True)
class Preview:
    """The objects the operator creates for the job, in order; `failure`: why it would fail the job
    at once instead (then there are none)."""

    objects: list[dict[str, Any]]
    failure: str | None = None


def as_new(stored: Mapping[str, Any], kind: JobKind) -> dict[str, Any]:
    """The job's model as the operator first plans it: no status yet, not suspended."""
    model = kind.model(stored)
    return {**model, "spec": {**model["spec"], "suspend": False}, "status": {}}


def preview(stored: Mapping[str, Any], kind: JobKind, settings: Settings, now: datetime) -> Preview:
    """What the operator creates for the (valid) job document `stored` of `kind` under `settings`."""
    job = as_new(stored, kind)
    what, check = kind.validation(stored, job)
    scheduler = settings.scheduler

    def plan(group: Mapping[str, Any] | None) -> Plan:
        return plan_job(PlanInputs(
            job, [], None, now=now, cluster_domain=settings.cluster_domain,
            network_policy=netpol.PolicyView(settings.network_policy_default, None) if kind.network_policy else None,
            profiles=settings.profiles, problems=check(what), kind=kind,
            gang_view=gang.GangView(scheduler, group) if scheduler is not None else None))

    first = plan(None)
    failed = cond.find(first.status.get("conditions") or [], cond.FAILED)
    if failed is not None and failed.get("status") == "True":
        return Preview([], str(failed.get("message") or failed.get("reason")))
    pods = first.create_pods
    group = first.child("PodGroup").create
    if scheduler is not None and group is not None and not scheduler.admitted(group):
        pods = plan(scheduler.as_admitted(group)).create_pods
    workload = None
    if scheduler is not None and scheduler.uses_workload:
        workload = gang_workload.rule(ChildSituation(job, kind, None, finished=False, suspended=False)).create
    companions = [first.child(netpol.KIND).create, workload, group, first.create_service]
    return Preview([obj for obj in companions if obj is not None] + pods)
