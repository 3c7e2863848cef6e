"""Gang scheduling: the job's PodGroup and what its pods carry for a gang scheduler (docs/production.md).

A job with parameter servers does nothing until every pod runs; placed piecemeal on a full cluster,
two jobs each hold part of the room and both wait forever. A gang scheduler places a group of pods
all at once or not at all. With `tfjob-operator run --gang-scheduler=volcano|scheduler-plugins|
kubernetes`, every job gets one PodGroup `<job>` owned by it, created before any of its pods, and its pods name
the gang scheduler and their group -- as Kubeflow's training operator does with
`--gang-scheduler-name`, from the same `schedulingPolicy` (`spec.schedulingPolicy` of a
TensorFlowJob, `spec.runPolicy.schedulingPolicy` of a TFJob, one field of the job model):

* `minMember` (Kubernetes' own: `schedulingPolicy.gang.minCount`): `minAvailable`, else every pod
  of the job;
* `minResources`: as given, else the requests (a container's limits where it has no request) of the
  first `minMember` pods in role order (chief, ps, worker, evaluator), in canonical form (memory
  asked in `Mi` or `Gi` summed to `2560Mi`, not `2684354560`). Kubeflow orders the roles by
  their pods' PriorityClass value; with none set, as is usual, the role order is as good, and it
  needs no PriorityClass lookup;
* the fields only one scheduler's group has, how its pods join the group, and when they may be
  created: the scheduler's (`controller.job.gang_schedulers`, one class per scheduler behind
  `GangScheduler`; nothing here asks which scheduler it holds). A pod's task name -- Volcano's
  `volcano.sh/task-spec` -- is its role, a TFJob's replica type in lower case (`master` for a
  Master), as Kubeflow writes it.

A pod template that names another scheduler keeps it (with a Warning event, as Kubeflow does): the
user asked for it. Pure: the planner decides when to create, patch or delete the PodGroup.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from controller.job.builders import owned_metadata
from controller.job.gang_schedulers import GangScheduler
from controller.job.kinds import JobKind
from tfconfig import ROLES, role_replicas
from tfjob_api.names import JOB_NAME_LABEL
from tfjob_api.quantity import QuantityError, format_quantity, is_binary, parse_quantity


@dataclass(frozen=True)
class GangView:
    """What the planner knows of a job's gang: the scheduler, the PodGroup of the job's name in the
    cache when the job owns it (None when there is none), and the events on that group."""

    scheduler: GangScheduler
    existing: Mapping[str, Any] | None
    events: Sequence[Mapping[str, Any]] = ()  # on the PodGroup, when the scheduler `reads_events`


def policy(job: Mapping[str, Any]) -> Mapping[str, Any]:
    return job["spec"].get("schedulingPolicy") or {}


def total_pods(job: Mapping[str, Any]) -> int:
    return sum(role_replicas(job["spec"], role) for role in ROLES)


def min_member(job: Mapping[str, Any]) -> int:
    wanted = policy(job).get("minAvailable")
    return int(wanted) if isinstance(wanted, int) and not isinstance(wanted, bool) else total_pods(job)


def _asked(template: Mapping[str, Any]) -> list[tuple[str, str | int | float]]:
    """Each container's (resource, quantity) of a template: its requests, a limit where a resource
    has no request (the API server defaults the request to the limit)."""
    found: list[tuple[str, str | int | float]] = []
    for container in (template.get("spec") or {}).get("containers") or []:
        resources = container.get("resources") or {}
        found.extend({**(resources.get("limits") or {}), **(resources.get("requests") or {})}.items())
    return found


def pod_requests(template: Mapping[str, Any]) -> dict[str, Fraction]:
    """What one pod of a template asks for, by resource."""
    total: dict[str, Fraction] = {}
    for resource, value in _asked(template):
        total[resource] = total.get(resource, Fraction(0)) + parse_quantity(value)
    return total


def min_resources(job: Mapping[str, Any]) -> dict[str, str]:
    """`schedulingPolicy.minResources`, else the requests of the first `minMember` pods."""
    given = policy(job).get("minResources")
    if given:
        return {resource: str(value) for resource, value in given.items()}
    left = min_member(job)
    total: dict[str, Fraction] = {}
    binary: set[str] = set()  # resources asked for in binary units: written back in one ("2560Mi")
    for role in ROLES:
        count = min(left, role_replicas(job["spec"], role))
        if count <= 0:
            continue
        template = job["spec"][role]["template"]
        binary.update(resource for resource, value in _asked(template) if is_binary(value))
        for resource, value in pod_requests(template).items():
            total[resource] = total.get(resource, Fraction(0)) + value * count
        left -= count
    return {resource: format_quantity(value, binary=resource in binary)
            for resource, value in sorted(total.items()) if value}


def group_spec(job: Mapping[str, Any], scheduler: GangScheduler,
               existing: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The PodGroup's spec for the job, as its scheduler words the gang's size and resources and its
    own fields (`existing`: the group as it is, when there is one)."""
    return scheduler.group_spec(job["metadata"]["name"], min_member(job), min_resources(job), policy(job), existing)


def build_pod_group(job: Mapping[str, Any], scheduler: GangScheduler, kind: JobKind) -> dict[str, Any]:
    """The job's PodGroup: named after the job, its annotations copied (as Kubeflow does), owned by it."""
    name = job["metadata"]["name"]
    annotations = dict(job["metadata"].get("annotations") or {})
    annotations.pop("kubectl.kubernetes.io/last-applied-configuration", None)
    return {
        "apiVersion": scheduler.api_version,
        "kind": scheduler.kind,
        "metadata": owned_metadata(job, name, {JOB_NAME_LABEL: name}, annotations, kind),
        "spec": group_spec(job, scheduler),
    }


def spec_patch(existing: Mapping[str, Any], job: Mapping[str, Any], scheduler: GangScheduler) -> dict[str, Any] | None:
    """The merge patch that brings the job's PodGroup to what the job needs now (a role scaled,
    someone edited it); None when it already is. Quantities are compared by value."""
    current = existing.get("spec") or {}
    desired = group_spec(job, scheduler, existing)
    patched = scheduler.patched_fields
    changed = {field: value for field, value in desired.items()
               if (patched is None or field in patched) and not _same(field, current.get(field), value)}
    dropped = {field: None for field in ("minResources", *scheduler.own_fields)
               if field in current and field not in desired and (patched is None or field in patched)}
    if not changed and not dropped:
        return None
    if "minResources" in changed:  # replaced whole: a resource no longer asked for must go
        changed["minResources"] = {**{r: None for r in current.get("minResources") or {}},
                                   **desired["minResources"]}
    return {"spec": {**changed, **dropped}}


def _same(field: str, current: Any, desired: Any) -> bool:
    if field != "minResources" or not isinstance(current, Mapping):
        return bool(current == desired)
    try:
        return ({r: parse_quantity(v) for r, v in current.items()}
                == {r: parse_quantity(v) for r, v in desired.items()})
    except QuantityError:
        return False


def task_name(job: Mapping[str, Any], role: str) -> str:
    """The name of a role's pods in the gang: the role, or a TFJob's replica type in lower case
    (`master` for a Master), as Kubeflow's operator writes it."""
    return str(((job.get("kubeflow") or {}).get("replicaTypes") or {}).get(role, role)).lower()


def decorate_pod(pod: dict[str, Any], job_name: str, task: str, scheduler: GangScheduler) -> str | None:
    """Point a new pod (built here, not shared) at the gang scheduler and its group (`task`: the name
    of the pod's role in the gang, `task_name`). Returns the other scheduler its template names, when
    it names one (the pod keeps it)."""
    spec = pod["spec"]
    other = spec.get("schedulerName")
    if not other:
        spec["schedulerName"] = scheduler.scheduler_name
    scheduler.join(pod, job_name, task)
    return other if other and other != scheduler.scheduler_name else None


def admitted(view: GangView) -> bool:
    """Whether the job's pods may be created: when its scheduler places pods only of a group it has
    admitted (Volcano), not before -- they would only wait -- as with Kubeflow's operator."""
    return view.scheduler.admitted(view.existing)


def describe(view: GangView, job_name: str) -> str:
    """The PodGroup's state in words for the job's Pending condition: its state, and the scheduler's
    reason when it gave one (Volcano's `Unschedulable` events and condition, Kubernetes'
    `PodGroupInitiallyScheduled` condition)."""
    group = view.existing
    if group is None:
        return f"PodGroup {job_name} ({view.scheduler.name}) is being created"
    text = f"PodGroup {group['metadata']['name']} ({view.scheduler.name}) is {view.scheduler.state(group)}"
    reason = view.scheduler.waiting_reason(group, view.events)
    if reason:
        text += f": {reason}"
    return text  # no pod counts: they change with every pod, and the condition would with them
