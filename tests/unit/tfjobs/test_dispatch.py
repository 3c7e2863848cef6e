"""Where a job MultiKueue dispatched runs, as the manager's Workload says (`tfjobs.dispatch`)."""

from __future__ import annotations

from tfjobs import dispatch


def test_both_kinds_are_dispatched_by_their_managed_by() -> None:
    assert dispatch.dispatched({"spec": {"managedBy": "kueue.x-k8s.io/multikueue"}})
    assert dispatch.dispatched({"spec": {"runPolicy": {"managedBy": "kueue.x-k8s.io/multikueue"}}})
    assert not dispatch.dispatched({"spec": {"managedBy": "tensorflowjob.kubeflow.org/tfjob-operator"}})
    assert not dispatch.dispatched({"spec": {}})


def test_the_workload_with_a_cluster_name_says_where() -> None:
    workloads = [{"status": {}}, {"status": {"clusterName": "worker-2"}}]
    assert dispatch.placement(workloads) == "worker-2"
    assert dispatch.placement([{"status": {"nominatedClusterNames": ["a", "b"]}}]) == ""


def test_the_workloads_are_selected_by_the_jobs_uid() -> None:
    assert dispatch.workload_selector({"metadata": {"uid": "u-1"}}) == "kueue.x-k8s.io/job-uid=u-1"
