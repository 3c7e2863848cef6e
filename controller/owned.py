"""One declaration per object type a job owns besides its pods and Service, and the operator's list.

An owned type is watched, routed, observed, planned and written in five places -- the informer
caches (`controller.caches`), the event handlers (`controller.handlers`), the reconciler's observe
and act phases (`controller.reconciler`, `controller.companions`) and the plan
(`controller.job.children`) -- and each of them iterates over the declarations here rather than
naming a type, the way controller-runtime's `Owns()` wires a type into a controller. An
`OwnedType` says:

* its API coordinates and how the job's messages name it (`companion`: group, version, plural,
  kind -- also its key in `Plan.children` and in the caches -- and the reason a body the API server
  rejects fails the job with);
* its informer (`informer`: the name; always selected by the job-name label) and whether it is
  watched only from the first job that wants one (`lazy`: the NetworkPolicy with `--network-policy
  off`, so an operator whose jobs ask for none needs no grant on them);
* the name of a job's object (`object_name`), which job kinds have one (`for_kind`), and whether a
  job wants one (`wanted`: what starts a lazy type's informer; a job that wants one waits for it);
* how its events map to the job: always by the controlling owner reference (`owner_key`), an
  arrival joining the job's pod batch, a change or a deletion enqueueing it at once and lowering
  the job's deletion expectation;
* how the plan states the desired object: by the planner's own rule (None: NetworkPolicy and
  PodGroup, which the pods depend on), or by the declaration's `rule` (`ChildRule`);
* how it is written: created, patched under a resourceVersion guard and deleted by UID, and
  whether the job's pods wait for it (`holds_pods`), all in `controller.companions`.

Pods stay special: their expectations are per name and per UID, they are created in slow-start
batches and deleted for a reason that is counted, and their status feeds the job's; a shared shape
would have to carry all of that for one type. The Service stays special too, because it is created
beside the first pod batch, not before the pods, and it is deleted with a cleanPodPolicy. Kueue's
Workload is not declared here: the Kueue gate (`controller.kueue.gate`) creates and replaces it
before the plan, as the admission the plan depends on, not as a child the plan states.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from controller import companions
from controller.companions import Companion
from controller.job import gang_workload, netpol
from controller.job.children import ChildRule
from controller.job.kinds import JobKind
from controller.options import ControllerOptions

NETWORK_POLICY_INFORMER = "networkpolicies"
POD_GROUP_INFORMER = "podgroups"
WORKLOAD_INFORMER = "scheduling-workloads"  # not "workloads": Kueue's Workload informer has that name


def _same_name(job_name: str) -> str:
    return job_name


def _every_kind(_kind: JobKind) -> bool:
    return True


def _always(_job: Mapping[str, Any]) -> bool:
    return True


def _kinds_with_policies(kind: JobKind) -> bool:
    return kind.network_policy


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

    @property
    def kind(self) -> str:
        """The type's key in `Plan.children` and in the caches."""
        return self.companion.kind


def declarations(options: ControllerOptions, extra: Sequence[OwnedType] = ()) -> tuple[OwnedType, ...]:
    """The owned types of an operator run with `options`, in the order they are written (the
    NetworkPolicy first, then the gang scheduler's PodGroup -- under `--gang-scheduler=kubernetes`
    after the Workload it is made from, `controller.job.gang_workload` -- then `extra`)."""
    default_on = options.network_policy_default
    policy = OwnedType(companions.NETWORK_POLICY, NETWORK_POLICY_INFORMER, object_name=netpol.policy_name,
                       for_kind=_kinds_with_policies, wanted=partial(netpol.wanted, default_on=default_on),
                       lazy=not default_on)
    gang = options.gang
    group = () if gang is None else (OwnedType(companions.pod_group(gang), POD_GROUP_INFORMER),)
    workload = (OwnedType(companions.WORKLOAD, WORKLOAD_INFORMER, rule=gang_workload.rule),
                ) if gang is not None and gang.uses_workload else ()
    return (policy, *workload, *group, *extra)
