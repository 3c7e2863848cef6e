"""One declaration per object type a job owns -- Pods, its Service, its NetworkPolicy, its gang
scheduler's PodGroup (and, under `--gang-scheduler=kubernetes`, the scheduling Workload it is made
from), its Kueue Workload -- and the operator's list of them.

An owned type is watched, routed, observed, planned and written in five places -- the informer
caches (`controller.caches`), the event handlers (`controller.handlers`), the reconciler's observe
and act phases (`controller.reconciler`, `controller.companions`) and the plan
(`controller.job.children`) -- and each of them iterates over the declarations here rather than
naming a type, the way controller-runtime's `Owns()` wires a type into a controller. An
`OwnedType` says:

* its API coordinates and how the job's messages name it (`companion`: group, version, plural,
  kind -- also its key in `Plan.children` and in the caches, unless `key` says otherwise -- and
  the reason a body the API server rejects fails the job with);
* its informer and cache (`informer`: the name; `label_selector`: which objects are watched, the
  job-name label for all but the Workload, which Kueue labels with the job's UID; `store`: how they
  are cached -- pods projected to what the planner reads and indexed by node, the others with
  their repeated strings shared) and whether it is watched only from the first job that wants one
  (`lazy`: the NetworkPolicy with `--network-policy off`, so an operator whose jobs ask for none
  needs no grant on them);
* how its events map to the job (`routing`): always by the controlling owner reference, then
  `PODS` (an arrival lowers the creation expectation and joins the job's pod batch, routine
  updates are batched, failures and deletions go in at once), `ROUTINE` (an arrival -- almost
  always the object the job's reconcile just created -- joins the pod batch; a change or a deletion
  enqueues the job at once) or `AT_ONCE` (every event: the Kueue Workload, whose admission the
  job waits for); a deletion seen lowers the job's deletion expectation;
* the name of a job's object (`object_name`), which job kinds have one (`for_kind`), and whether a
  job wants one (`wanted`: what starts a lazy type's informer; a job that wants one waits for it);
* how the plan states the desired objects and who writes them (`writer`):
  - `COMPANION` -- the plan carries one `Step` per type in `Plan.children`, from the planner's own
    rule (NetworkPolicy and PodGroup, which the pods depend on) or from the declaration's `rule`
    (`ChildRule`); `controller.companions` creates them before the pods, patches under a
    resourceVersion guard and deletes by UID, and the pods wait for those that `holds_pods`;
  - `PODS` -- the plan's `create_pods` / `delete_pods`, written by the reconciler in slow-start
    batches with expectations per pod name (creates) and UID (deletes), and deleted for a reason
    that is counted; their status feeds the job's;
  - `SERVICE` -- the plan's `create_service` / `delete_service`, created beside the first pod batch
    (not before the pods) and deleted with the job's cleanPodPolicy;
  - `KUEUE` -- `controller.kueue.gate` creates and replaces it before the plan: the admission the
    plan depends on, not a child the plan states.

The pods' and the Service's writers stay their own because what they carry (slow start, counted
deletions, per-name expectations) belongs to them alone; what every type shares -- coordinates,
informer, cache, routing, ownership -- is declared here, once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from functools import partial
from typing import Any

from controller import companions
from controller.companions import Companion
from controller.job import gang_workload, netpol, podcache
from controller.job.children import ChildRule
from controller.job.kinds import JobKind
from controller.kueue import protocol as kueue
from controller.options import ControllerOptions
from informers.store import Store, default_indexers, slim_and_share
from tfjob_api.names import JOB_NAME_LABEL

POD_INFORMER = "pods"
SERVICE_INFORMER = "services"
NETWORK_POLICY_INFORMER = "networkpolicies"
POD_GROUP_INFORMER = "podgroups"
KUEUE_WORKLOAD_INFORMER = "workloads"
SCHEDULING_WORKLOAD_INFORMER = "scheduling-workloads"  # Kubernetes' own, not Kueue's
NODE_INDEX = "node"


class Routing(Enum):
    """How a type's events reach the owning job (see the module docstring)."""

    PODS = "pods"
    ROUTINE = "routine"
    AT_ONCE = "at once"


class Writer(Enum):
    """Who writes a type's objects, from which part of the plan (see the module docstring)."""

    COMPANION = "companion"
    PODS = "pods"
    SERVICE = "service"
    KUEUE = "kueue"


def _same_name(job_name: str) -> str:
    return job_name


def _every_kind(_kind: JobKind) -> bool:
    return True


def _always(_job: Mapping[str, Any]) -> bool:
    return True


def _kinds_with_policies(kind: JobKind) -> bool:
    return kind.network_policy


def _index_by_node(obj: Mapping[str, Any]) -> list[str]:
    node = (obj.get("spec") or {}).get("nodeName")
    return [node] if node else []


def shared_store() -> Store:
    """Thousands of jobs and Services repeat the same strings: the store caches one copy."""
    return Store(default_indexers(), transform=slim_and_share)


def pod_store() -> Store:
    """Pods as the pod cache keeps them (`controller.job.podcache`), indexed by node as well."""
    return Store({**default_indexers(), NODE_INDEX: _index_by_node}, transform=podcache.project)


@dataclass(frozen=True)
class OwnedType:
    """One object type a job owns (see the module docstring for what each field decides)."""

    companion: Companion
    informer: str
    object_name: Callable[[str], str] = _same_name
    for_kind: Callable[[JobKind], bool] = _every_kind
    wanted: Callable[[Mapping[str, Any]], bool] = _always
    rule: ChildRule | None = None
    lazy: bool = False
    holds_pods: bool = True
    routing: Routing = Routing.ROUTINE
    writer: Writer = Writer.COMPANION
    label_selector: str = JOB_NAME_LABEL
    store: Callable[[], Store] = shared_store
    key: str | None = None

    @property
    def kind(self) -> str:
        """The type's key in `Plan.children` and in the caches."""
        return self.key or self.companion.kind


POD = OwnedType(Companion("Pod", "", "v1", "pods", "InvalidPodTemplate"), POD_INFORMER,
                routing=Routing.PODS, writer=Writer.PODS, store=pod_store)
SERVICE = OwnedType(Companion("Service", "", "v1", "services", "InvalidService"), SERVICE_INFORMER,
                    writer=Writer.SERVICE)
# Keyed apart from Kubernetes' own scheduling.k8s.io Workload, which a gang scheduler may declare.
KUEUE_WORKLOAD = OwnedType(
    Companion(kueue.WORKLOAD_KIND, kueue.GROUP, kueue.VERSION, kueue.WORKLOAD_PLURAL, "InvalidWorkload"),
    KUEUE_WORKLOAD_INFORMER, routing=Routing.AT_ONCE, writer=Writer.KUEUE, label_selector=kueue.JOB_UID_LABEL,
    key=f"{kueue.WORKLOAD_KIND}.{kueue.GROUP}")


def declarations(options: ControllerOptions, extra: Sequence[OwnedType] = (), *,
                 kueue_workloads: bool = False) -> tuple[OwnedType, ...]:
    """The owned types of an operator run with `options`, in the order they are watched and written:
    the pods and the Service, then the companions (the NetworkPolicy, the gang scheduler's PodGroup --
    under `--gang-scheduler=kubernetes` after the Workload it is made from, `controller.job.gang_workload`
    -- then `extra`), then the Kueue Workload when Kueue is used (`kueue_workloads`: decided by the
    caller, which may have to ask the API server)."""
    default_on = options.network_policy_default
    policy = OwnedType(companions.NETWORK_POLICY, NETWORK_POLICY_INFORMER, object_name=netpol.policy_name,
                       for_kind=_kinds_with_policies, wanted=partial(netpol.wanted, default_on=default_on),
                       lazy=not default_on)
    gang = options.gang
    group = () if gang is None else (OwnedType(companions.pod_group(gang), POD_GROUP_INFORMER),)
    scheduling = (OwnedType(companions.WORKLOAD, SCHEDULING_WORKLOAD_INFORMER, rule=gang_workload.rule),
                  ) if gang is not None and gang.uses_workload else ()
    queueing = (KUEUE_WORKLOAD,) if kueue_workloads else ()
    return (POD, SERVICE, policy, *scheduling, *group, *extra, *queueing)


def written_by(owned: Sequence[OwnedType], writer: Writer) -> tuple[OwnedType, ...]:
    """The declared types one writer carries out, in their declared order."""
    return tuple(declared for declared in owned if declared.writer is writer)
