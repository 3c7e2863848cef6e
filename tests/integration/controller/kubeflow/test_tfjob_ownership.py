"""Never two controllers on one TFJob: one that names another controller in `runPolicy.managedBy` is
left alone, and an operator run with `--kubeflow-tfjob=off` reads and writes no TFJob at all."""

from __future__ import annotations

from typing import Any

from tests.support.kubeflow import as_tfjob


def test_a_tfjob_managed_by_kubeflows_operator_is_left_untouched(kubeflow_tfjobs: Any) -> None:
    theirs = as_tfjob("theirs", {"worker": kubeflow_tfjobs.role(1), "managedBy": "kubeflow.org/training-operator"},
                      namespace=kubeflow_tfjobs.namespace)
    kubeflow_tfjobs.api.create(kubeflow_tfjobs.path(), theirs)
    kubeflow_tfjobs.create("ours", worker=kubeflow_tfjobs.role(1))
    kubeflow_tfjobs.wait_condition("ours", "Running")  # the operator has seen both by now (one informer)
    assert kubeflow_tfjobs.stored_status("theirs") == {}
    assert kubeflow_tfjobs.pods("theirs") == [] and kubeflow_tfjobs.service("theirs") is None


def test_an_operator_with_tfjobs_off_reads_and_writes_no_tfjob(kubeflow_tfjobs: Any, no_session_operator: None,
                                                               start_operator: Any) -> None:
    operator = start_operator(["--kubeflow-tfjob=off"])
    kubeflow_tfjobs.create("ignored", worker=kubeflow_tfjobs.role(1))
    tensorflowjob = {"apiVersion": "kubeflow.org/v1", "kind": "TensorFlowJob",
                     "metadata": {"name": "served", "namespace": kubeflow_tfjobs.namespace},
                     "spec": {"worker": kubeflow_tfjobs.role(1)}}
    kubeflow_tfjobs.api.create(kubeflow_tfjobs.path().replace("/tfjobs", "/tensorflowjobs"), tensorflowjob)
    kubeflow_tfjobs.wait_for(lambda: len(kubeflow_tfjobs.pods("served", include_terminating=False)) == 1, 60,
                             "the TensorFlowJob's pod (the operator works)")
    assert kubeflow_tfjobs.stored_status("ignored") == {}
    assert kubeflow_tfjobs.pods("ignored") == []
    metrics = operator.metrics()
    assert 'resource="tensorflowjobs"' in metrics
    assert 'resource="tfjobs"' not in metrics  # no TFJob informer: not even a list or a watch
