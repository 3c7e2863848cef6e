"""The two kinds of job the operator serves -- TensorFlowJob and Kubeflow's TFJob -- and the one place
that knows how they differ.

Everything else (the loop, the planner, the builders, the `tfjob-operator` command) holds a `JobKind`
and asks it; nothing else asks which kind it holds. A kind says:

* where its objects live (group, version, plural) and its work-queue key: its identity, which
  `tfjob_api.kinds` defines for the user tools and the operator alike (a `JobKind` extends it);
* how its stored object becomes the job model the planner reads, and the planner's status becomes
  the status it stores: for a TensorFlowJob both are the object itself (its defaults applied), for a
  TFJob the translation of `controller.job.kubeflow`;
* how it is validated (by the reconciler, and as a document by `validate` and `render`);
* what its pods and Service carry: the owner reference naming it, and labels beyond the operator's
  own (a TFJob's: Kubeflow's, for Kubeflow's tools);
* what it takes part in: the job's own NetworkPolicy (`spec.networkPolicy`) and queueing through
  this operator's Kueue gate -- a TensorFlowJob does both; a TFJob has no `spec.networkPolicy`, and
  queues through the gate only while Kueue's own TFJob integration is off (`controller.kueue.tfjobs`);
* whether this operator runs a given job of the kind (a TensorFlowJob by its `spec.managedBy`, a TFJob
  by its `runPolicy.managedBy`), and whether MultiKueue runs it on a worker cluster instead;
* the fields it accepts but does not use (warned about until the job is created), and its
  conversion to a TensorFlowJob (`tfjob-operator convert`).

Pure.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from controller.job.kubeflow import labels as kubeflow_labels
from controller.job.kubeflow import ownership
from controller.job.kubeflow.convert import Conversion, convert
from controller.job.kubeflow.validation import validate_tfjob
from controller.job.validation import Problem, validate_job
from tfjob_api import crd, managed_by
from tfjob_api import kinds as api_kinds
from tfjob_api.defaults import apply_defaults
from tfjob_api.kubeflow_model import NO_GANG_SCHEDULER, ignored_fields, to_model
from tfjob_api.kubeflow_status import to_model_status, to_tfjob_status
from tfjob_api.names import GROUP

Check = Callable[[Any], list[Problem]]


@dataclass(frozen=True, eq=False)
class JobKind(api_kinds.Kind, ABC):
    """One kind of job: its identity (`tfjob_api.kinds.Kind`) and everything that differs between the
    kinds."""

    network_policy: bool
    """Whether its jobs get their own NetworkPolicy (`spec.networkPolicy`, the operator's default)."""
    kueue_gate: bool
    """Whether its jobs always queue through this operator's Kueue gate (`controller.kueue.gate`; a
    TFJob's do only while Kueue's own TFJob integration is off, `KueueGate.queues`)."""

    def owner_reference(self, job: Mapping[str, Any]) -> dict[str, Any]:
        """The controller owner reference its pods, Service and NetworkPolicy carry."""
        metadata = job["metadata"]
        return {
            "apiVersion": self.api_version,
            "kind": self.name,
            "name": metadata["name"],
            "uid": metadata.get("uid", ""),
            "controller": True,
            "blockOwnerDeletion": True,
        }

    @abstractmethod
    def model(self, stored: Mapping[str, Any]) -> dict[str, Any]:
        """The job model of a stored job (the planner's input, its status included; a new dict)."""

    @abstractmethod
    def model_status(self, stored_status: Mapping[str, Any]) -> dict[str, Any]:
        """The model's status of a stored status."""

    @abstractmethod
    def stored_status(self, model: Mapping[str, Any], status: dict[str, Any], previous: Mapping[str, Any],
                      now: str) -> dict[str, Any]:
        """The status to store for the planner's `status` (`previous`: the stored one)."""

    @abstractmethod
    def status_schema(self) -> Mapping[str, Any]:
        """The OpenAPI schema of its stored `status`, as its CRD states it (the limits the API server
        enforces on what the operator writes)."""

    @abstractmethod
    def validation(self, stored: Mapping[str, Any], model: Mapping[str, Any]) -> tuple[Mapping[str, Any], Check]:
        """What to validate and how (pure; the caller may remember the answer)."""

    @abstractmethod
    def validate(self, document: Any) -> list[Problem]:
        """The problems of a document of this kind as written (`tfjob-operator validate`)."""

    def pod_labels(self, job: Mapping[str, Any], role: str, index: int) -> dict[str, str]:
        """Labels its pods carry beyond the operator's own."""
        return {}

    def service_labels(self, job: Mapping[str, Any]) -> dict[str, str]:
        """Labels its Service carries beyond the operator's own."""
        return {}

    def serves(self, stored: Mapping[str, Any], serve_unmanaged: bool) -> bool:
        """Whether this operator runs the job (`serve_unmanaged`: whether it runs the jobs of its kind
        that name no controller)."""
        return True

    def dispatched(self, stored: Mapping[str, Any]) -> bool:
        """Whether Kueue's MultiKueue runs the (served) job on a worker cluster: here the operator keeps
        its Workload and nothing else (`controller.kueue.multikueue`)."""
        return False

    def ignored_fields(self, stored: Mapping[str, Any], gang_scheduling: bool = False) -> list[str]:
        """Its fields that are accepted but not used, each with why (warned about until created);
        `gang_scheduling`: whether the operator runs with a gang scheduler."""
        if (stored.get("spec") or {}).get("schedulingPolicy") and not gang_scheduling:
            return [f"spec.schedulingPolicy is not used: {NO_GANG_SCHEDULER}"]
        return []

    def to_tensorflowjob(self, document: Mapping[str, Any]) -> Conversion | None:
        """A (valid) document of this kind as the equivalent TensorFlowJob, with notes on what does
        not carry over (`tfjob-operator convert`); None when there is nothing to convert."""
        return None


@dataclass(frozen=True, eq=False)
class TensorFlowJobKind(JobKind):
    """This operator's own kind: the stored object is the job model, its defaults applied."""

    def model(self, stored: Mapping[str, Any]) -> dict[str, Any]:
        return apply_defaults(stored)

    def model_status(self, stored_status: Mapping[str, Any]) -> dict[str, Any]:
        return dict(stored_status)

    def stored_status(self, model: Mapping[str, Any], status: dict[str, Any], previous: Mapping[str, Any],
                      now: str) -> dict[str, Any]:
        return status

    def status_schema(self) -> Mapping[str, Any]:
        return crd.job_schema()["properties"]["status"]  # type: ignore[no-any-return]

    def validation(self, stored: Mapping[str, Any], model: Mapping[str, Any]) -> tuple[Mapping[str, Any], Check]:
        """The model (the job the planner reads) as a TensorFlowJob."""
        return model, validate_job

    def validate(self, document: Any) -> list[Problem]:
        return validate_job(document)

    def serves(self, stored: Mapping[str, Any], serve_unmanaged: bool) -> bool:
        """By its `spec.managedBy` (`tfjob_api.managed_by`): this operator's, unset, or MultiKueue's."""
        return managed_by.is_ours(stored) or managed_by.is_dispatched(stored)

    def dispatched(self, stored: Mapping[str, Any]) -> bool:
        return managed_by.is_dispatched(stored)


@dataclass(frozen=True, eq=False)
class TFJobKind(JobKind):
    """Kubeflow's TFJob: planned as its translation, stored as Kubeflow writes it."""

    def model(self, stored: Mapping[str, Any]) -> dict[str, Any]:
        return to_model(stored)

    def model_status(self, stored_status: Mapping[str, Any]) -> dict[str, Any]:
        return to_model_status(stored_status)

    def stored_status(self, model: Mapping[str, Any], status: dict[str, Any], previous: Mapping[str, Any],
                      now: str) -> dict[str, Any]:
        return to_tfjob_status(status, (model.get("kubeflow") or {}).get("replicaTypes") or {},
                               model["metadata"]["name"], previous, now)

    def status_schema(self) -> Mapping[str, Any]:
        return crd.tfjob_schema()["properties"]["status"]  # type: ignore[no-any-return]

    def validation(self, stored: Mapping[str, Any], model: Mapping[str, Any]) -> tuple[Mapping[str, Any], Check]:
        """The stored document as a TFJob, so problems name its own fields."""
        return stored, validate_tfjob

    def validate(self, document: Any) -> list[Problem]:
        return validate_tfjob(document)

    def pod_labels(self, job: Mapping[str, Any], role: str, index: int) -> dict[str, str]:
        """Kubeflow's labels, for Kubeflow's tools (its SDK, Kueue)."""
        return kubeflow_labels.pod_labels(job, role, index)

    def service_labels(self, job: Mapping[str, Any]) -> dict[str, str]:
        return kubeflow_labels.service_labels(job)

    def serves(self, stored: Mapping[str, Any], serve_unmanaged: bool) -> bool:
        """By its `runPolicy.managedBy` (`controller.job.kubeflow.ownership`)."""
        return ownership.serves(stored, serve_unmanaged)

    def ignored_fields(self, stored: Mapping[str, Any], gang_scheduling: bool = False) -> list[str]:
        return ignored_fields(stored, gang_scheduling)

    def to_tensorflowjob(self, document: Mapping[str, Any]) -> Conversion | None:
        return convert(document)


TENSORFLOWJOB: JobKind = TensorFlowJobKind(**api_kinds.TENSORFLOWJOB.identity(), network_policy=True, kueue_gate=True)
TFJOB: JobKind = TFJobKind(**api_kinds.TFJOB.identity(), network_policy=False, kueue_gate=False)
KINDS = (TENSORFLOWJOB, TFJOB)


def parse_key(key: str) -> tuple[JobKind, str]:
    """The kind of a work-queue key and its `namespace/name`."""
    if key.startswith(TFJOB.key_prefix):
        return TFJOB, key[len(TFJOB.key_prefix):]
    return TENSORFLOWJOB, key


def kind_of_owner(reference: Mapping[str, Any]) -> JobKind | None:
    """The kind an owner reference names, when it is one of the two (by group and kind)."""
    api_version = str(reference.get("apiVersion", ""))
    if not api_version.startswith(GROUP + "/"):
        return None
    return next((kind for kind in KINDS if kind.name == reference.get("kind")), None)


def kind_of_document(document: Any) -> JobKind:
    """The kind of a job document by its `kind` (a TFJob, else a TensorFlowJob: anything else is
    validated as one and its problems say so)."""
    if isinstance(document, Mapping) and document.get("kind") == TFJOB.name:
        return TFJOB
    return TENSORFLOWJOB
