"""The job's Workload under Kubernetes' own gang scheduling (`--gang-scheduler=kubernetes`).

Kubernetes' Workload API (`scheduling.k8s.io/v1beta1`, beta in 1.37) splits a gang in two: the
Workload says what groups a workload is made of (its `podGroupTemplates`, each with a scheduling
policy), and a PodGroup is one running instance of a template, which the pods point at
(`spec.schedulingGroup`). Jobs, JobSets and LeaderWorkerSets of Kubernetes itself create both; so
does this operator, for every job: one Workload named after the job, owned by it, with one template
`gang` for the whole job (`minCount`: `minAvailable`, else every pod; with `topologyKey`, one
domain of that node label for the whole gang), and the PodGroup of
`controller.job.gang` as its instance.

The Workload is the job's description, not a place in a queue: it is created with the job, kept
while the job is suspended (its PodGroup goes, as under every gang scheduler, and a new one is made
from the same template on resume), patched when the gang's size changes (the only mutable field of
a template: templates can be neither added nor removed) and deleted when the job finishes, or with
the job by garbage collection. `rule` is its `ChildRule` (`controller.job.children`); it is declared
in `controller.owned`. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.job import gang
from controller.job.builders import owned_metadata
from controller.job.children import ChildSituation, Step
from controller.job.gang_schedulers import WORKLOAD_TEMPLATE, Kubernetes, gang_policy, topology
from controller.job.kinds import JobKind
from tfjob_api.names import JOB_NAME_LABEL

KIND = "Workload"
PLURAL = "workloads"


def template(job: Mapping[str, Any]) -> dict[str, Any]:
    """The Workload's one PodGroup template: the whole job as one gang."""
    policy = gang.policy(job)
    found: dict[str, Any] = {"name": WORKLOAD_TEMPLATE, **gang_policy(gang.min_member(job)), **topology(policy)}
    if policy.get("priorityClass"):
        found["priorityClassName"] = policy["priorityClass"]
    return found


def build_workload(job: Mapping[str, Any], kind: JobKind) -> dict[str, Any]:
    """The job's Workload: named after it, owned by it, pointing back at it (`controllerRef`)."""
    name = job["metadata"]["name"]
    return {
        "apiVersion": f"{Kubernetes.group}/{Kubernetes.version}",
        "kind": KIND,
        "metadata": owned_metadata(job, name, {JOB_NAME_LABEL: name}, {}, kind),
        "spec": {"controllerRef": {"apiGroup": kind.group, "kind": kind.name, "name": name},
                 "podGroupTemplates": [template(job)]},
    }


def _size(workload: Mapping[str, Any]) -> int | None:
    for found in (workload.get("spec") or {}).get("podGroupTemplates") or []:
        if found.get("name") == WORKLOAD_TEMPLATE:
            return (((found.get("schedulingPolicy") or {}).get("gang") or {}).get("minCount"))
    return None


def rule(situation: ChildSituation) -> Step:
    """Create the job's Workload while it is active (suspended included), bring its gang's size
    back to the job's, delete it once the job finished."""
    existing = situation.existing
    if existing is not None and existing["metadata"].get("deletionTimestamp"):
        return Step()  # on its way out: recreated once it is gone
    if situation.finished:
        return Step(delete=existing) if existing is not None else Step()
    if existing is None:
        return Step(create=build_workload(situation.job, situation.kind))
    size = gang.min_member(situation.job)
    if _size(existing) == size:
        return Step()
    templates = [{**found, **gang_policy(size)} if found.get("name") == WORKLOAD_TEMPLATE else found
                 for found in existing["spec"]["podGroupTemplates"]]
    return Step(patch=(existing, {"spec": {"podGroupTemplates": templates}}))
