"""`spec.managedBy` of a TensorFlowJob: the values the CRD accepts, its immutability, who runs the job."""

from __future__ import annotations

from typing import Any

from controller.job.kinds import TENSORFLOWJOB
from controller.job.validation import validate_job
from tests.support.jobs import role, tfjob
from tfjob_api import crd, managed_by


def with_managed_by(value: str | None) -> dict[str, Any]:
    job = tfjob("j", {"worker": role(1)})
    if value is not None:
        job["spec"]["managedBy"] = value
    return job


def test_the_crd_accepts_the_operator_and_multikueue_and_keeps_the_field_immutable() -> None:
    spec = crd.job_schema()["properties"]["spec"]
    assert spec["properties"]["managedBy"]["enum"] == ["tensorflowjob.kubeflow.org/tfjob-operator",
                                                       "kueue.x-k8s.io/multikueue"]
    [rule] = [r for r in spec["x-kubernetes-validations"] if "oldSelf" in r["rule"]]
    assert rule["message"] == "spec.managedBy is immutable"


def test_an_unknown_managed_by_is_a_problem_naming_the_field() -> None:
    problems = validate_job(with_managed_by("example.com/other"))
    assert [p.path for p in problems] == ["spec.managedBy"]
    assert "kueue.x-k8s.io/multikueue" in problems[0].message


def test_the_operator_runs_jobs_naming_it_or_none_and_keeps_only_the_workload_of_dispatched_ones() -> None:
    assert TENSORFLOWJOB.serves(with_managed_by(None), serve_unmanaged=False)
    assert TENSORFLOWJOB.serves(with_managed_by(managed_by.VALUES[0]), serve_unmanaged=False)
    assert not TENSORFLOWJOB.dispatched(with_managed_by(managed_by.VALUES[0]))
    dispatched = with_managed_by("kueue.x-k8s.io/multikueue")
    assert TENSORFLOWJOB.serves(dispatched, serve_unmanaged=False) and TENSORFLOWJOB.dispatched(dispatched)


def test_a_job_another_controller_manages_is_not_served() -> None:
    assert not TENSORFLOWJOB.serves(with_managed_by("example.com/other"), serve_unmanaged=True)
