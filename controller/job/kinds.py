"""The two kinds of job the operator serves -- TensorFlowJob and Kubeflow's TFJob -- as one job model.

A work-queue key says which kind it is: `namespace/name` for a TensorFlowJob (as it always was),
`TFJob:namespace/name` for a TFJob (neither a namespace nor a name can hold a `:`). Each kind says
where its objects live and how its stored object becomes the job model the planner reads, and the
planner's status becomes the status it stores: for a TensorFlowJob both are the object itself (its
defaults applied), for a TFJob the translation of `controller.job.kubeflow`. Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from api import kubeflow
from api.defaults import apply_defaults
from api.names import GROUP, KIND, PLURAL, VERSION
from controller.job.kubeflow.model import to_model
from controller.job.kubeflow.status import to_model_status, to_tfjob_status
from controller.job.kubeflow.validation import validate_tfjob
from controller.job.validation import Problem, validate_job

Check = Callable[[Any], list[Problem]]


@dataclass(frozen=True)
class JobKind:
    name: str
    group: str
    version: str
    plural: str
    key_prefix: str

    @property
    def is_tfjob(self) -> bool:
        return self is TFJOB

    def key(self, namespace: str, name: str) -> str:
        return f"{self.key_prefix}{namespace}/{name}"

    def model(self, stored: Mapping[str, Any]) -> dict[str, Any]:
        """The job model of a stored job (the planner's input, its status included)."""
        return to_model(stored) if self.is_tfjob else apply_defaults(stored)

    def model_status(self, stored_status: Mapping[str, Any]) -> dict[str, Any]:
        return to_model_status(stored_status) if self.is_tfjob else dict(stored_status)

    def stored_status(self, model: Mapping[str, Any], status: dict[str, Any], previous: Mapping[str, Any],
                      now: str) -> dict[str, Any]:
        """The status to store for the planner's `status` (`previous`: the stored one)."""
        if not self.is_tfjob:
            return status
        return to_tfjob_status(status, (model.get("kubeflow") or {}).get("replicaTypes") or {},
                               model["metadata"]["name"], previous, now)

    def validation(self, stored: Mapping[str, Any], model: Mapping[str, Any]) -> tuple[Mapping[str, Any], Check]:
        """What to validate and how (pure; the caller may remember the answer): a TFJob's stored
        document as a TFJob, so problems name its own fields; a TensorFlowJob's model (the job the
        planner reads) as a TensorFlowJob."""
        return (stored, validate_tfjob) if self.is_tfjob else (model, validate_job)


TENSORFLOWJOB = JobKind(KIND, GROUP, VERSION, PLURAL, "")
TFJOB = JobKind(kubeflow.KIND, kubeflow.GROUP, kubeflow.VERSION, kubeflow.PLURAL, kubeflow.KIND + ":")


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
    return {KIND: TENSORFLOWJOB, kubeflow.KIND: TFJOB}.get(str(reference.get("kind")))
