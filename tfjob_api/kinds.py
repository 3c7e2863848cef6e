"""The two kinds of job -- this project's TensorFlowJob and Kubeflow's TFJob -- as the API names them.

A `Kind` is a kind's identity and nothing else: its name, where its objects live (group, version,
plural) and the prefix of its work-queue keys (`namespace/name` for a TensorFlowJob, as it always
was; `TFJob:namespace/name` for a TFJob: neither a namespace nor a name can hold a `:`). Defined here,
once, for both distributions: the user tools (`tfjobs.kinds`) extend it with how they read and scale a
job, the operator (`controller.job.kinds`) with how it plans, validates and stores one. Both build
their kinds from `TENSORFLOWJOB` and `TFJOB` (`Kind.identity`), so they cannot disagree on where a
kind lives, and the client keeps working without the operator installed.

Pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

from tfjob_api import kubeflow, names

__all__ = ["KINDS", "TENSORFLOWJOB", "TFJOB", "Identity", "Kind"]


class Identity(TypedDict):
    """A kind's identity as keyword arguments (`Kind.identity`)."""

    name: str
    group: str
    version: str
    plural: str
    key_prefix: str


@dataclass(frozen=True, eq=False)
class Kind:
    """A kind of job's identity: its name and API coordinates, and its work-queue key prefix.

    Compared by identity (`eq=False`): each kind exists once per module that defines it."""

    name: str
    group: str
    version: str
    plural: str
    key_prefix: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @property
    def resource(self) -> str:
        """`tensorflowjobs.kubeflow.org`, as kubectl names it in messages (and its CRD's name)."""
        return f"{self.plural}.{self.group}"

    def key(self, namespace: str, name: str) -> str:
        """Its work-queue key of the job `namespace/name`."""
        return f"{self.key_prefix}{namespace}/{name}"

    def identity(self) -> Identity:
        """Its identity's fields by name, to build an extension of this kind from
        (`SomeKind(**TFJOB.identity(), ...)`)."""
        return Identity(name=self.name, group=self.group, version=self.version, plural=self.plural,
                        key_prefix=self.key_prefix)


TENSORFLOWJOB = Kind(names.KIND, names.GROUP, names.VERSION, names.PLURAL, key_prefix="")
TFJOB = Kind(kubeflow.KIND, kubeflow.GROUP, kubeflow.VERSION, kubeflow.PLURAL, key_prefix=kubeflow.KIND + ":")
KINDS = (TENSORFLOWJOB, TFJOB)
