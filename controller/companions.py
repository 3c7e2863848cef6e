"""The objects a job's pods wait for -- its NetworkPolicy, its gang scheduler's PodGroup (and, under
Kubernetes' own gang scheduling, the Workload the PodGroup is made from) -- written against the API
server.

Both are owned by the job, both must exist before its pods (no pod runs without the isolation it
asked for; no pod reaches a gang scheduler before its group), and both are carried out the same way,
so one piece of code serves them: the planner says create, patch or delete; `carry_out` does it and
says whether the job's pods must wait. The rules:

* create: an AlreadyExists whose owner is the job means the cache was behind (carry on); one owned
  by something else is a name conflict, and the pods wait (a `Refusal` for the pure core to fold);
  an invalid body (422) fails the job with the kind's reason (`InvalidNetworkPolicy`,
  `InvalidSchedulingPolicy`); any other refusal holds the pods and is retried;
* patch: guarded by the resourceVersion it was computed from; gone or changed meanwhile means the
  watch brings the next reconcile;
* delete: UID-preconditioned; already gone is fine.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from controller.job.children import Step
from controller.job.gang_schedulers import GangScheduler
from controller.job.refusals import Cause, Refusal
from controller.outcome import Outcome, classify
from kube import ApiError, Kube, resource_path
from kube.retry import retry_transient

# Whether the existing object of (group, version, plural, name) is the job's; None: cannot tell now.
OwnerCheck = Callable[[Mapping[str, Any], str, str, str, str], "bool | None"]


@dataclass(frozen=True)
class Companion:
    """One kind of object the pods wait for."""

    kind: str  # as the job's messages name it
    group: str
    version: str
    plural: str
    invalid_reason: str  # the Failed reason when the API server rejects the body

    def path(self, namespace: str, name: str | None = None) -> str:
        return resource_path(self.group, self.version, self.plural, namespace, name)

    @property
    def tag(self) -> str:
        """How an outcome names it: `networkpolicy/<name>`, `podgroup/<name>`."""
        return self.kind.lower()


NETWORK_POLICY = Companion("NetworkPolicy", "networking.k8s.io", "v1", "networkpolicies", "InvalidNetworkPolicy")


WORKLOAD = Companion("Workload", "scheduling.k8s.io", "v1beta1", "workloads", "InvalidSchedulingPolicy")
"""Kubernetes' own Workload (`--gang-scheduler=kubernetes`), whose template the job's PodGroup instantiates."""


def pod_group(scheduler: GangScheduler) -> Companion:
    """The gang scheduler's PodGroup (`--gang-scheduler`, chosen once at start)."""
    return Companion(scheduler.kind, scheduler.group, scheduler.version, scheduler.plural, "InvalidSchedulingPolicy")


class CompanionWriter:
    """Carries out a `Step` of one companion for one job; `ours` reads whether an existing object
    is the job's (the reconciler's `_ours`)."""

    def __init__(self, kube: Kube, ours: OwnerCheck) -> None:
        self.kube = kube
        self.ours = ours

    def carry_out(self, companion: Companion, step: Step, job: Mapping[str, Any], foreign: bool,
                  outcome: Outcome, refusals: list[Refusal]) -> tuple[list[str], bool]:
        """(problems to retry for, whether the pods must wait because the companion the job needs
        does not exist); what the API server refused goes to `refusals`."""
        if step.delete is not None:
            return self._delete(companion, step.delete, outcome), False
        if step.patch is not None:
            return self._patch(companion, *step.patch, outcome=outcome, refusals=refusals), False
        if step.create is None:
            return [], False
        return self._create(companion, step.create, job, foreign, outcome, refusals)

    def _create(self, companion: Companion, body: dict[str, Any], job: Mapping[str, Any], foreign: bool,
                outcome: Outcome, refusals: list[Refusal]) -> tuple[list[str], bool]:
        name = body["metadata"]["name"]
        if foreign:
            refusals.append(Refusal(companion.kind, name, Cause.NAME_TAKEN))
            return [], True
        try:
            retry_transient(self.kube.create)(companion.path(body["metadata"]["namespace"]), body)
        except ApiError as error:
            outcome.server_asked_to_wait(error)
            if not error.already_exists:
                refusals.append(classify(companion.kind, name, error, companion.invalid_reason))
                return [], True
            owner = self.ours(job, companion.group, companion.version, companion.plural, name)
            if owner is True:
                return [], False  # the cache was behind
            if owner is None:
                return [f"create {companion.tag} {name}: it exists and its owner could not be read; retrying"], True
            refusals.append(Refusal(companion.kind, name, Cause.NAME_TAKEN))
            return [], True
        outcome.created.append(f"{companion.tag}/{name}")
        return [], False

    def _patch(self, companion: Companion, existing: Mapping[str, Any], patch: dict[str, Any], outcome: Outcome,
               refusals: list[Refusal]) -> list[str]:
        meta = existing["metadata"]
        try:
            retry_transient(self.kube.patch)(companion.path(meta["namespace"], meta["name"]),
                                             {**patch, "metadata": {"resourceVersion": meta["resourceVersion"]}})
        except ApiError as error:
            outcome.server_asked_to_wait(error)
            if error.not_found or error.conflict:
                return []  # gone or replaced meanwhile: its watch event brings the next reconcile
            if error.invalid:
                refusals.append(classify(companion.kind, meta["name"], error, companion.invalid_reason))
                return []
            return [f"patch {companion.tag} {meta['name']}: {error}"]
        outcome.updated.append(f"{companion.tag}/{meta['name']}")
        return []

    def _delete(self, companion: Companion, existing: Mapping[str, Any], outcome: Outcome) -> list[str]:
        meta = existing["metadata"]
        try:
            retry_transient(self.kube.delete)(companion.path(meta["namespace"], meta["name"]), uid=meta["uid"])
            outcome.deleted.append(f"{companion.tag}/{meta['name']}")
        except ApiError as error:
            if not (error.not_found or error.conflict):
                return [f"delete {companion.tag} {meta['name']}: {error}"]
        return []
