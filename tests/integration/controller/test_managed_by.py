"""`spec.managedBy` of a TensorFlowJob against the real API server and the session operator: only the
operator's own name and MultiKueue's are accepted, the field never changes, and a job MultiKueue runs
is never touched by the operator (without Kueue here, not even to queue it)."""

from __future__ import annotations

from typing import Any

import pytest

from kube import ApiError
from tests.support.jobs import tfjob

MULTIKUEUE = "kueue.x-k8s.io/multikueue"
OPERATOR = "tensorflowjob.kubeflow.org/tfjob-operator"


def test_an_unknown_managed_by_is_refused_at_admission_naming_the_field(tfjobs: Any) -> None:
    body = tfjob("other", {"worker": tfjobs.role(1), "managedBy": "example.com/other"}, namespace=tfjobs.namespace)
    with pytest.raises(ApiError) as refused:
        tfjobs.api.create(tfjobs.path(), body)
    assert refused.value.status == 422
    assert "spec.managedBy" in refused.value.message and MULTIKUEUE in refused.value.message


def test_managed_by_cannot_be_changed_nor_set_later(tfjobs: Any) -> None:
    tfjobs.create("named", worker=tfjobs.role(1), managedBy=OPERATOR, suspend=True)
    tfjobs.create("unnamed", worker=tfjobs.role(1), suspend=True)
    for name in ("named", "unnamed"):
        with pytest.raises(ApiError) as refused:
            tfjobs.patch(name, {"managedBy": MULTIKUEUE})
        assert refused.value.status == 422 and "spec.managedBy is immutable" in refused.value.message


def test_a_job_multikueue_runs_is_never_touched(tfjobs: Any) -> None:
    tfjobs.create("theirs", worker=tfjobs.role(1), managedBy=MULTIKUEUE)
    tfjobs.create("ours", worker=tfjobs.role(1), managedBy=OPERATOR)
    tfjobs.wait_condition("ours", "Running")  # the operator has seen both by now (one informer, in order)
    assert tfjobs.status("theirs") == {}
    assert tfjobs.pods("theirs") == [] and tfjobs.service("theirs") is None
