"""The gang schedulers the operator can target, behind one interface: `GangScheduler`.

`controller.job.gang` builds a job's PodGroup and points its pods at the group the same way for any
gang scheduler; what differs between schedulers is here, one class each, and nowhere else:

* `SchedulerPlugins` -- the kubernetes-sigs scheduler-plugins Coscheduling plugin
  (`scheduling.x-k8s.io/v1alpha1`): the group's `scheduleTimeoutSeconds`; pods join with the label
  `scheduling.x-k8s.io/pod-group`. The plugin holds the pods themselves at its Permit stage, so they
  are created at once;
* `Volcano` (`scheduling.volcano.sh/v1beta1`): the group's `queue` (default `default`) and
  `priorityClassName`; pods join with the annotations `scheduling.k8s.io/group-name` and
  `volcano.sh/task-spec` (the role). Volcano admits a group (phase Inqueue, later Running) before it
  places any of its pods, so -- as under Kubeflow's operator -- pods are created only then; its
  `Unschedulable` condition says why a group waits, and only its `Unschedulable` events say that the
  queue's quota holds it (`reads_events`: the operator watches the events on its PodGroups);
* `Kubernetes` -- Kubernetes' own gang scheduling (`scheduling.k8s.io/v1beta1`, beta in 1.37, behind
  the `GenericWorkload` gate): the default kube-scheduler places the group. The PodGroup is an
  instance of a template of the job's Workload (`uses_workload`: `controller.job.gang_workload` plans
  it), its gang policy is `schedulingPolicy.gang.minCount`, and pods join it with their own field
  `spec.schedulingGroup.podGroupName`. Its fields other than the gang's size are immutable, so only
  that is ever patched (`patched_fields`). With `topologyKey` the group's `schedulingConstraints`
  ask that the whole gang land in one domain of that node label. The scheduler holds the pods until
  the gang fits, so they are created at once; the group's `PodGroupInitiallyScheduled` condition
  says why it waits.

`gang_scheduler(name)` picks the class of `--gang-scheduler` once, at start (None for `none`). Pure.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

VOLCANO_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
VOLCANO_TASK_ANNOTATION = "volcano.sh/task-spec"
SCHEDULER_PLUGINS_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
DEFAULT_QUEUE = "default"


def phase(pod_group: Mapping[str, Any] | None) -> str:
    """A PodGroup's `status.phase` ("" when it has none yet)."""
    return str(((pod_group or {}).get("status") or {}).get("phase") or "")


@dataclass(frozen=True)
class GangScheduler(ABC):
    """One gang scheduler: its PodGroup API, the scheduler name the pods ask for (`scheduler_name`:
    `--gang-scheduler-name`, else the scheduler's usual one), and what only it does."""

    scheduler_name: str
    name: ClassVar[str]  # the --gang-scheduler value
    usual_scheduler_name: ClassVar[str]  # the name its scheduler is deployed with by default
    group: ClassVar[str]
    version: ClassVar[str]
    own_fields: ClassVar[tuple[str, ...]]
    """The PodGroup spec fields only this scheduler's group has (from the job's schedulingPolicy)."""
    plural: ClassVar[str] = "podgroups"
    kind: ClassVar[str] = "PodGroup"
    patched_fields: ClassVar[tuple[str, ...] | None] = None
    """The PodGroup spec fields brought back to what the job needs (None: all of them)."""
    uses_workload: ClassVar[bool] = False
    """Whether the job also has a Workload whose template its PodGroup is an instance of."""
    reads_events: ClassVar[bool] = False
    """Whether the scheduler says why a group waits only in events on it (the operator watches them)."""

    @property
    def install_hint(self) -> str:
        """What makes its PodGroup API served (the operator does not start without it)."""
        return f"install {self.name} (its CRDs and scheduler)"

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    def group_spec(self, job_name: str, size: int, resources: Mapping[str, str], policy: Mapping[str, Any],
                   existing: Mapping[str, Any] | None) -> dict[str, Any]:
        """The job's PodGroup spec: the gang's size (`minMember`) and resources, then the scheduler's
        own fields."""
        spec: dict[str, Any] = {"minMember": size}
        if resources:
            spec["minResources"] = dict(resources)
        return {**spec, **self.spec_fields(policy, existing)}

    @abstractmethod
    def spec_fields(self, policy: Mapping[str, Any], existing: Mapping[str, Any] | None) -> dict[str, Any]:
        """This scheduler's own fields of the job's PodGroup spec (`own_fields`), from the job's
        `schedulingPolicy`; `existing`: the group as it is, when there is one."""

    @abstractmethod
    def join(self, pod: dict[str, Any], group: str, task: str) -> None:
        """Make a new pod (built here, not shared) a member of the PodGroup `group`; `task`: the name
        of the pod's role in the gang."""

    def admitted(self, pod_group: Mapping[str, Any] | None) -> bool:
        """Whether the job's pods may be created, its PodGroup being `pod_group` (None: not there yet)."""
        return True

    def as_admitted(self, pod_group: Mapping[str, Any]) -> dict[str, Any]:
        """The PodGroup once the scheduler admitted it (what `render` plans the pods against)."""
        return dict(pod_group)

    def state(self, pod_group: Mapping[str, Any]) -> str:
        """The group's state in a word, as its scheduler keeps it (its phase)."""
        return phase(pod_group) or "new"

    def waiting_reason(self, pod_group: Mapping[str, Any], events: Sequence[Mapping[str, Any]] = ()) -> str:
        """Why the scheduler says the group waits, when it says ("" otherwise); `events`: the events
        on the group, when the scheduler `reads_events`."""
        return ""


@dataclass(frozen=True)
class SchedulerPlugins(GangScheduler):
    """scheduler-plugins' Coscheduling: the pods are created at once and held at its Permit stage."""

    name: ClassVar[str] = "scheduler-plugins"
    usual_scheduler_name: ClassVar[str] = "scheduler-plugins-scheduler"
    group: ClassVar[str] = "scheduling.x-k8s.io"
    version: ClassVar[str] = "v1alpha1"
    own_fields: ClassVar[tuple[str, ...]] = ("scheduleTimeoutSeconds",)

    def spec_fields(self, policy: Mapping[str, Any], existing: Mapping[str, Any] | None) -> dict[str, Any]:
        timeout = policy.get("scheduleTimeoutSeconds")
        return {"scheduleTimeoutSeconds": timeout} if timeout else {}

    def join(self, pod: dict[str, Any], group: str, task: str) -> None:
        metadata = pod["metadata"]
        metadata["labels"] = {**metadata["labels"], SCHEDULER_PLUGINS_GROUP_LABEL: group}


@dataclass(frozen=True)
class Volcano(GangScheduler):
    """Volcano: a queue per group, and pods only once the group is admitted."""

    name: ClassVar[str] = "volcano"
    usual_scheduler_name: ClassVar[str] = "volcano"
    group: ClassVar[str] = "scheduling.volcano.sh"
    version: ClassVar[str] = "v1beta1"
    own_fields: ClassVar[tuple[str, ...]] = ("queue", "priorityClassName")
    reads_events: ClassVar[bool] = True

    def spec_fields(self, policy: Mapping[str, Any], existing: Mapping[str, Any] | None) -> dict[str, Any]:
        """The queue: the job's, else the existing group's (it cannot move), else `default`."""
        fields: dict[str, Any] = {
            "queue": policy.get("queue") or ((existing or {}).get("spec") or {}).get("queue") or DEFAULT_QUEUE}
        if policy.get("priorityClass"):
            fields["priorityClassName"] = policy["priorityClass"]
        return fields

    def join(self, pod: dict[str, Any], group: str, task: str) -> None:
        metadata = pod["metadata"]
        metadata["annotations"] = {**(metadata.get("annotations") or {}),
                                   VOLCANO_GROUP_ANNOTATION: group, VOLCANO_TASK_ANNOTATION: task}

    def admitted(self, pod_group: Mapping[str, Any] | None) -> bool:
        """Volcano places no pod of a group it has not admitted: pods created before would only wait."""
        return pod_group is not None and phase(pod_group) not in ("", "Pending")

    def as_admitted(self, pod_group: Mapping[str, Any]) -> dict[str, Any]:
        return {**pod_group, "status": {**(pod_group.get("status") or {}), "phase": "Inqueue"}}

    def waiting_reason(self, pod_group: Mapping[str, Any], events: Sequence[Mapping[str, Any]] = ()) -> str:
        """Its newest `Unschedulable` event's message -- the one place Volcano says that the queue's
        quota holds the group (`queue resource quota insufficient`) -- then its `Unschedulable`
        condition's message (`5/0 tasks in gang unschedulable: ...`)."""
        said = ""
        for condition in (pod_group.get("status") or {}).get("conditions") or []:
            if (condition.get("type") == "Unschedulable" and condition.get("status") == "True"
                    and condition.get("message")):
                said = str(condition["message"])
        heard = [e for e in events if e.get("reason") == "Unschedulable" and e.get("message")]
        if not heard:
            return said
        newest = str(max(heard, key=_event_time)["message"])
        return f"{newest} ({said})" if said and newest not in said else newest


@dataclass(frozen=True)
class Kubernetes(GangScheduler):
    """Kubernetes' own Workload and PodGroup API: the default scheduler places the gang."""

    name: ClassVar[str] = "kubernetes"
    usual_scheduler_name: ClassVar[str] = "default-scheduler"
    group: ClassVar[str] = "scheduling.k8s.io"
    version: ClassVar[str] = "v1beta1"
    own_fields: ClassVar[tuple[str, ...]] = ("priorityClassName", "schedulingConstraints")
    patched_fields: ClassVar[tuple[str, ...] | None] = ("schedulingPolicy",)
    uses_workload: ClassVar[bool] = True

    @property
    def install_hint(self) -> str:
        return ("run Kubernetes 1.37 or later with the feature gate GenericWorkload=true (API server and "
                "scheduler) and --runtime-config=scheduling.k8s.io/v1beta1=true")

    def group_spec(self, job_name: str, size: int, resources: Mapping[str, str], policy: Mapping[str, Any],
                   existing: Mapping[str, Any] | None) -> dict[str, Any]:
        """An instance of the job's Workload's one template: the gang's size as `minCount` (the
        scheduler needs no resource sum: it tries the pods themselves)."""
        return {"workloadRef": {"workloadName": job_name, "templateName": WORKLOAD_TEMPLATE},
                **gang_policy(size), **self.spec_fields(policy, existing)}

    def spec_fields(self, policy: Mapping[str, Any], existing: Mapping[str, Any] | None) -> dict[str, Any]:
        """The priority class, and the topology domain the whole gang must fit in (`topologyKey`)."""
        return {**({"priorityClassName": policy["priorityClass"]} if policy.get("priorityClass") else {}),
                **topology(policy)}

    def join(self, pod: dict[str, Any], group: str, task: str) -> None:
        pod["spec"]["schedulingGroup"] = {"podGroupName": group}

    def admitted(self, pod_group: Mapping[str, Any] | None) -> bool:
        """Not while the job's group is on its way out (a suspension): the pods using it would keep
        the terminating group alive (the `PodGroupProtection` finalizer) and no new one could be made."""
        return pod_group is None or not pod_group["metadata"].get("deletionTimestamp")

    def state(self, pod_group: Mapping[str, Any]) -> str:
        """`Scheduled` once the scheduler placed the gang, else its reason for not yet
        (`Unschedulable`, `SchedulerError`), else `waiting for its pods` (never tried)."""
        condition = _initially_scheduled(pod_group)
        if condition is None:
            return "waiting for its pods"
        return "Scheduled" if condition.get("status") == "True" else str(condition.get("reason") or "not scheduled")

    def waiting_reason(self, pod_group: Mapping[str, Any], events: Sequence[Mapping[str, Any]] = ()) -> str:
        """The message of its `PodGroupInitiallyScheduled` condition while it is False."""
        condition = _initially_scheduled(pod_group)
        if condition is None or condition.get("status") == "True":
            return ""
        return str(condition.get("message") or "")


def _event_time(event: Mapping[str, Any]) -> str:
    """When an event last happened (RFC 3339 strings compare in time order)."""
    return str(event.get("lastTimestamp") or event.get("eventTime") or event.get("firstTimestamp") or "")


WORKLOAD_TEMPLATE = "gang"
"""The name of the one PodGroup template of a job's Workload (one gang for the whole job)."""


def gang_policy(size: int) -> dict[str, Any]:
    """A Kubernetes PodGroup's (or template's) `schedulingPolicy` for a gang of `size` pods."""
    return {"schedulingPolicy": {"gang": {"minCount": size}}}


def topology(policy: Mapping[str, Any]) -> dict[str, Any]:
    """A Kubernetes PodGroup's (or template's) `schedulingConstraints` for the job's `topologyKey`."""
    key = policy.get("topologyKey")
    return {"schedulingConstraints": {"topology": [{"key": key}]}} if key else {}


def _initially_scheduled(pod_group: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for condition in (pod_group.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "PodGroupInitiallyScheduled":
            return condition  # type: ignore[no-any-return]
    return None


SCHEDULERS: dict[str, type[GangScheduler]] = {"volcano": Volcano, "scheduler-plugins": SchedulerPlugins,
                                              "kubernetes": Kubernetes}
"""The `--gang-scheduler` values besides `none`, and their classes."""


def gang_scheduler(name: str, scheduler_name: str = "") -> GangScheduler | None:
    """The gang scheduler of `--gang-scheduler` (None for `none`); `scheduler_name` overrides the
    scheduler the pods ask for (the name the scheduler's profile was deployed with)."""
    if name in ("", "none"):
        return None
    chosen = SCHEDULERS.get(name)
    if chosen is None:
        raise ValueError(f"unknown gang scheduler {name!r}: volcano, scheduler-plugins, kubernetes or none")
    return chosen(scheduler_name or chosen.usual_scheduler_name)
