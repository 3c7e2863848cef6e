"""The operator with `--gang-scheduler` under the manifests' ClusterRole: its PodGroup calls (list, watch,
create, patch, delete) are all granted, against the real PodGroup CRD, without one 403; and so are its
Workload and PodGroup calls under Kubernetes' own gang scheduling (`scheduling.k8s.io`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.support.jobs import devcluster_role

from ..conftest import CrdScheme, Operator, TfJobs
from ..test_operations import Grants, election, forbidden_lines, grants, operators_as, samples  # noqa: F401
from .test_gang_jobs import GANG_FLAGS, pod_group
from .test_gang_kubernetes_jobs import KUBERNETES_FLAGS, min_count, scheduling_object


@pytest.fixture
def default_scheme(crd_scheme: CrdScheme) -> None:
    """The default CRDs (TensorFlowJob alone), set before the session operator is stopped: switching
    restarts it."""
    crd_scheme.use("default")


def test_the_manifests_role_grants_every_pod_group_call_the_operator_makes(
        cluster: Any, pod_group_api: None, default_scheme: None, no_session_operator: None,
        grants: Grants, operators_as: Callable[..., Operator], tfjobs_no_operator: TfJobs,  # noqa: F811
) -> None:
    # Only this operator runs (the session's, with the admin's identity, would create what this one
    # is refused), and only in this namespace: earlier tests' namespaces may still be terminating
    # with their jobs, where every create is refused with a 403 (NamespaceTerminating) whatever the role.
    grants.grant_operator_roles()
    kubeconfig = cluster.service_account_kubeconfig(grants.namespace, grants.account)
    operator = operators_as(kubeconfig, [*election(grants.namespace), *GANG_FLAGS, "--namespace", grants.namespace])
    jobs = tfjobs_no_operator

    jobs.create("gang", worker=devcluster_role(2))  # list/watch, then create the PodGroup
    jobs.wait_for(lambda: pod_group(jobs.api, jobs.namespace, "gang") is not None, 60, "the job's PodGroup")
    jobs.patch("gang", {"worker": {"replicas": 3}})  # patch it
    jobs.wait_for(lambda: (pod_group(jobs.api, jobs.namespace, "gang") or {}).get("spec", {}).get("minMember") == 3,
                  60, "minMember 3")
    jobs.patch("gang", {"suspend": True})  # delete it
    jobs.wait_for(lambda: pod_group(jobs.api, jobs.namespace, "gang") is None, 60, "the PodGroup deleted")

    refused = {k: v for k, v in samples(operator).items() if k[0] == "tfjob_api_requests_total"
               and ("code", "403") in k[1]}
    refusals = [e["message"] for e in jobs.events("gang") if e["reason"].startswith("FailedCreate")]
    assert refused == {}, refusals
    assert forbidden_lines(operator) == []


def test_the_manifests_role_grants_every_workload_and_pod_group_call_under_kubernetes(
        cluster: Any, default_scheme: None, no_session_operator: None,
        grants: Grants, operators_as: Callable[..., Operator], tfjobs_no_operator: TfJobs,  # noqa: F811
) -> None:
    grants.grant_operator_roles()
    kubeconfig = cluster.service_account_kubeconfig(grants.namespace, grants.account)
    operator = operators_as(kubeconfig, [*election(grants.namespace), *KUBERNETES_FLAGS,
                                         "--namespace", grants.namespace])
    jobs = tfjobs_no_operator

    def group() -> dict[str, Any] | None:
        return scheduling_object(jobs.api, jobs.namespace, "podgroups", "gang")

    jobs.create("gang", worker=devcluster_role(2))  # list/watch, then create the Workload and PodGroup
    jobs.wait_for(lambda: group() is not None, 60, "the job's PodGroup")
    jobs.patch("gang", {"worker": {"replicas": 3}})  # patch both
    jobs.wait_for(lambda: min_count(group()) == 3 and min_count(
        scheduling_object(jobs.api, jobs.namespace, "workloads", "gang")) == 3, 60, "minCount 3")
    jobs.patch("gang", {"suspend": True})  # delete the PodGroup
    jobs.wait_for(lambda: group() is None, 60, "the PodGroup deleted")

    refused = {k: v for k, v in samples(operator).items() if k[0] == "tfjob_api_requests_total"
               and ("code", "403") in k[1]}
    assert refused == {}
    assert forbidden_lines(operator) == []
