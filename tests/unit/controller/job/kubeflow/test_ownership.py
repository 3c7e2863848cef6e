"""Which TFJobs this operator runs (`runPolicy.managedBy`)."""

from __future__ import annotations

import pytest

from controller.job.kubeflow.ownership import serves
from tests.support.kubeflow import replica, tfjob_manifest


def managed(value: str | None) -> dict:
    return tfjob_manifest("j", {"Worker": replica(1)}, **({"managedBy": value} if value else {}))


@pytest.mark.parametrize("serve_unmanaged", [True, False])
def test_a_tfjob_that_names_this_operator_is_always_served(serve_unmanaged: bool) -> None:
    assert serves(managed("tensorflowjob.kubeflow.org/tfjob-operator"), serve_unmanaged)


@pytest.mark.parametrize("other", ["kubeflow.org/training-operator", "kueue.x-k8s.io/multikueue"])
def test_a_tfjob_that_names_another_controller_is_never_served(other: str) -> None:
    assert not serves(managed(other), serve_unmanaged=True)


def test_a_tfjob_that_names_no_controller_is_served_by_default() -> None:
    assert serves(managed(None), serve_unmanaged=True)


def test_a_tfjob_that_names_no_controller_is_left_alone_during_a_hand_over() -> None:
    assert not serves(managed(None), serve_unmanaged=False)
