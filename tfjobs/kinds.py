"""The two kinds of job the user tools work on: this project's TensorFlowJob and Kubeflow's TFJob.

With the Kubeflow install (`manifests/kubeflow/`), `kubectl get tfjob` means Kubeflow's TFJob kind, served
by the same operator, so the tools must list, describe, wait for, follow and delete both. Everything
that reads a job (`jobview`, `describe`, `progress`, `tables`) reads the job model — a TensorFlowJob's
shape: roles `chief`/`ps`/`worker`/`evaluator` at the top of the spec, `status.state`,
`status.replicaStatuses` by role. A `JobKind` says where a kind lives and how one of its jobs reads as
that model (`view`): a TensorFlowJob already is it; a TFJob goes through the operator's own translation
(`tfjob_api.kubeflow_model`), so the tools and the operator never disagree on a TFJob's roles or state.
What a user gets back from `get` or `wait_for` is always the object as stored. A kind's identity (its
name, group, version, plural) is `tfjob_api.kinds`', which the operator's kinds extend too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tfjob_api import kinds, kubeflow, names
from tfjob_api.kubeflow_model import replica_types, to_model
from tfjobs.connection import api_path

__all__ = ["KINDS", "TENSORFLOWJOB", "TFJOB", "JobKind", "kind_named", "kind_of"]


def _as_stored(job: Mapping[str, Any]) -> dict[str, Any]:
    return dict(job)


def _tensorflowjob_scale(job: Mapping[str, Any], role: str, replicas: int) -> dict[str, Any]:
    return {"spec": {role: {"replicas": replicas}}}


def _tfjob_scale(job: Mapping[str, Any], role: str, replicas: int) -> dict[str, Any]:
    """The merge patch of one replica type, under the key the job spells it with (`Worker`, `worker`)."""
    written = {kubeflow.canonical_type(str(key)): key for key in ((job.get("spec") or {}).get("tfReplicaSpecs") or {})}
    replica_type = replica_types(job)[role]
    return {"spec": {"tfReplicaSpecs": {written.get(replica_type, replica_type): {"replicas": replicas}}}}


@dataclass(frozen=True, eq=False)
class JobKind(kinds.Kind):
    """A kind of job as the user tools work on it: its identity, and how one of its jobs reads as the
    job model and is scaled."""

    view: Callable[[Mapping[str, Any]], dict[str, Any]]  # a job of this kind as the job model
    scale_patch: Callable[[Mapping[str, Any], str, int], dict[str, Any]]  # (job, role, replicas) → merge patch

    def path(self, namespace: str | None, name: str | None = None) -> str:
        return api_path(self.group, self.version, self.plural, namespace, name)


TENSORFLOWJOB = JobKind(**kinds.TENSORFLOWJOB.identity(), view=_as_stored, scale_patch=_tensorflowjob_scale)
TFJOB = JobKind(**kinds.TFJOB.identity(), view=to_model, scale_patch=_tfjob_scale)
KINDS = (TENSORFLOWJOB, TFJOB)


def kind_named(text: str) -> JobKind:
    """The kind a user names: `TensorFlowJob`, `tfjob`, `tfjobs`, `tensorflowjobs.kubeflow.org`, ..."""
    wanted = text.strip().lower().removesuffix(f".{names.GROUP}")
    for kind in KINDS:
        if wanted in (kind.name.lower(), kind.plural, kind.plural.removesuffix("s")):
            return kind
    raise ValueError(f"unknown kind {text!r}; choose from {', '.join(kind.name for kind in KINDS)}")


def kind_of(job: Mapping[str, Any]) -> JobKind:
    """The kind of a job object (TensorFlowJob when it does not say)."""
    return kind_named(str(job.get("kind") or names.KIND))
