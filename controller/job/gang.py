"""Gang scheduling: the job's PodGroup and what its pods carry for a gang scheduler (docs/production.md).

A job with parameter servers does nothing until every pod runs; placed piecemeal on a full cluster,
two jobs each hold part of the room and both wait forever. A gang scheduler places a group of pods
all at once or not at all. With `tfjob-operator run --gang-scheduler=volcano|scheduler-plugins`,
every job gets one PodGroup `<job>` owned by it, created before any of its pods, and its pods name
the gang scheduler and their group -- as Kubeflow's training operator does with
`--gang-scheduler-name`, from the same `schedulingPolicy` (`spec.schedulingPolicy` of a
TensorFlowJob, `spec.runPolicy.schedulingPolicy` of a TFJob, one field of the job model):

* `minMember`: `minAvailable`, else every pod of the job;
* `minResources`: as given, else the requests (a container's limits where it has no request) of the
  first `minMember` pods in role order (chief, ps, worker, evaluator). Kubeflow orders the roles by
  their pods' PriorityClass value; with none set, as is usual, the role order is as good, and it
  needs no PriorityClass lookup;
* Volcano (`scheduling.volcano.sh/v1beta1`): `queue` (default `default`), `priorityClassName`;
  pods carry the annotations `scheduling.k8s.io/group-name` and `volcano.sh/task-spec` (the role; a
  TFJob's replica type in lower case, `master` for a Master, as Kubeflow writes it);
* scheduler-plugins (`scheduling.x-k8s.io/v1alpha1`): `scheduleTimeoutSeconds`; pods carry the
  label `scheduling.x-k8s.io/pod-group`.

A pod template that names another scheduler keeps it (with a Warning event, as Kubeflow does): the
user asked for it. Pure: the planner decides when to create, patch or delete the PodGroup.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from controller.job.builders import owned_metadata
from controller.job.kinds import TENSORFLOWJOB, JobKind
from tfconfig import ROLES, role_replicas
from tfjob_api.names import JOB_NAME_LABEL
from tfjob_api.quantity import QuantityError, format_quantity, parse_quantity

VOLCANO_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
VOLCANO_TASK_ANNOTATION = "volcano.sh/task-spec"
SCHEDULER_PLUGINS_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
DEFAULT_QUEUE = "default"


@dataclass(frozen=True)
class GangScheduler:
    """One gang scheduler: its PodGroup API and the scheduler name the pods ask for."""

    name: str  # the --gang-scheduler value
    group: str
    version: str
    scheduler_name: str  # the pods' spec.schedulerName
    plural: str = "podgroups"
    kind: str = "PodGroup"

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @property
    def volcano(self) -> bool:
        return self.name == "volcano"


def gang_scheduler(name: str, scheduler_name: str = "") -> GangScheduler | None:
    """The gang scheduler of `--gang-scheduler` (None for `none`); `scheduler_name` overrides the
    scheduler the pods ask for (the name the scheduler's profile was deployed with)."""
    if name == "volcano":
        return GangScheduler("volcano", "scheduling.volcano.sh", "v1beta1", scheduler_name or "volcano")
    if name == "scheduler-plugins":
        return GangScheduler("scheduler-plugins", "scheduling.x-k8s.io", "v1alpha1",
                             scheduler_name or "scheduler-plugins-scheduler")
    if name in ("", "none"):
        return None
    raise ValueError(f"unknown gang scheduler {name!r}: volcano, scheduler-plugins or none")


@dataclass(frozen=True)
class GangView:
    """What the planner knows of a job's gang: the scheduler, and the PodGroup of the job's name in
    the cache when the job owns it (None when there is none)."""

    scheduler: GangScheduler
    existing: Mapping[str, Any] | None


def policy(job: Mapping[str, Any]) -> Mapping[str, Any]:
    return job["spec"].get("schedulingPolicy") or {}


def total_pods(job: Mapping[str, Any]) -> int:
    return sum(role_replicas(job["spec"], role) for role in ROLES)


def min_member(job: Mapping[str, Any]) -> int:
    wanted = policy(job).get("minAvailable")
    return int(wanted) if isinstance(wanted, int) and not isinstance(wanted, bool) else total_pods(job)


def pod_requests(template: Mapping[str, Any]) -> dict[str, Fraction]:
    """What one pod of a template asks for: its containers' requests, a limit where a resource has
    no request (the API server defaults the request to the limit)."""
    total: dict[str, Fraction] = {}
    for container in (template.get("spec") or {}).get("containers") or []:
        resources = container.get("resources") or {}
        asked = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
        for resource, value in asked.items():
            total[resource] = total.get(resource, Fraction(0)) + parse_quantity(value)
    return total


def min_resources(job: Mapping[str, Any]) -> dict[str, str]:
    """`schedulingPolicy.minResources`, else the requests of the first `minMember` pods."""
    given = policy(job).get("minResources")
    if given:
        return {resource: str(value) for resource, value in given.items()}
    left = min_member(job)
    total: dict[str, Fraction] = {}
    for role in ROLES:
        count = min(left, role_replicas(job["spec"], role))
        if count <= 0:
            continue
        for resource, value in pod_requests(job["spec"][role]["template"]).items():
            total[resource] = total.get(resource, Fraction(0)) + value * count
        left -= count
    return {resource: format_quantity(value) for resource, value in sorted(total.items()) if value}


def group_spec(job: Mapping[str, Any], scheduler: GangScheduler,
               existing: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The PodGroup's spec for the job. Volcano's queue: the job's, else the existing group's (it
    cannot move), else `default`."""
    settings = policy(job)
    spec: dict[str, Any] = {"minMember": min_member(job)}
    resources = min_resources(job)
    if resources:
        spec["minResources"] = resources
    if scheduler.volcano:
        spec["queue"] = (settings.get("queue") or ((existing or {}).get("spec") or {}).get("queue")
                         or DEFAULT_QUEUE)
        if settings.get("priorityClass"):
            spec["priorityClassName"] = settings["priorityClass"]
    elif settings.get("scheduleTimeoutSeconds"):
        spec["scheduleTimeoutSeconds"] = settings["scheduleTimeoutSeconds"]
    return spec


def build_pod_group(job: Mapping[str, Any], scheduler: GangScheduler, kind: JobKind = TENSORFLOWJOB) -> dict[str, Any]:
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
    changed = {field: value for field, value in desired.items()
               if not _same(field, current.get(field), value)}
    dropped = {field: None for field in ("minResources", "priorityClassName", "scheduleTimeoutSeconds")
               if field in current and field not in desired}
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


def decorate_pod(pod: dict[str, Any], job_name: str, task: str, scheduler: GangScheduler) -> str | None:
    """Point a new pod (built here, not shared) at the gang scheduler and its group (`task`: Volcano's
    name for the pod's role). Returns the other scheduler its template names, when it names one (the
    pod keeps it)."""
    spec = pod["spec"]
    other = spec.get("schedulerName")
    if not other:
        spec["schedulerName"] = scheduler.scheduler_name
    metadata = pod["metadata"]
    if scheduler.volcano:
        metadata["annotations"] = {**(metadata.get("annotations") or {}),
                                   VOLCANO_GROUP_ANNOTATION: job_name, VOLCANO_TASK_ANNOTATION: task}
    else:
        metadata["labels"] = {**metadata["labels"], SCHEDULER_PLUGINS_GROUP_LABEL: job_name}
    return other if other and other != scheduler.scheduler_name else None


def phase(pod_group: Mapping[str, Any] | None) -> str:
    return str(((pod_group or {}).get("status") or {}).get("phase") or "")


def admitted(view: GangView) -> bool:
    """Whether the job's pods may be created. Volcano admits a PodGroup into its queue (phase
    Inqueue, later Running) before it places pods, and places none of a group it has not admitted:
    pods created before that would only wait, so -- as with Kubeflow's operator -- none are. The
    coscheduler holds the pods themselves at its Permit stage, so it needs them created."""
    if not view.scheduler.volcano:
        return True
    return view.existing is not None and phase(view.existing) not in ("", "Pending")


def describe(view: GangView, job_name: str) -> str:
    """The PodGroup's state in words for the job's Pending condition: its phase, and Volcano's
    reason when it gave one (its `Unschedulable` condition)."""
    group = view.existing
    if group is None:
        return f"PodGroup {job_name} ({view.scheduler.name}) is being created"
    text = f"PodGroup {group['metadata']['name']} ({view.scheduler.name}) is {phase(group) or 'new'}"
    status = group.get("status") or {}
    for condition in status.get("conditions") or []:
        if condition.get("type") == "Unschedulable" and condition.get("status") == "True" and condition.get("message"):
            text += f": {condition['message']}"
            break
    return text  # no pod counts: they change with every pod, and the condition would with them
