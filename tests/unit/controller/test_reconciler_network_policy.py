"""The reconciler writes the job's NetworkPolicy before its pods and fails closed: while a policy the job
wants cannot be created, no pod is; a policy the API server rejects fails the job (client mocked)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from unittest.mock import Mock

import pytest
from pytest_mock import MockerFixture

from controller.job import netpol
from controller.job.builders import build_service
from controller.job.kinds import TENSORFLOWJOB
from controller.options import ControllerOptions
from controller.reconciler import Reconciler, RequeueError
from kube import ApiError
from kube.clock import FakeClock
from tests.support.caches import FakeCaches
from tests.support.jobs import pods_for, role, tfjob
from tests.support.mock_kube import created_kinds, mock_kube
from tfjob_api.defaults import apply_defaults

NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)
POLICIES = "/apis/networking.k8s.io/v1/namespaces/ns/networkpolicies"


def make_job(workers: int = 2, **policy: Any) -> dict[str, Any]:
    return tfjob("j", {"worker": role(workers), "networkPolicy": {"enabled": True, **policy}}, namespace="ns",
                 uid="job-uid", resourceVersion="10", generation=1)


@pytest.fixture
def kube(mocker: MockerFixture) -> Mock:
    return mock_kube(mocker, make_job())


def reconciler(kube: Mock, caches: FakeCaches, default_on: bool = False) -> Reconciler:
    return Reconciler(kube, caches, ControllerOptions(network_policy="on" if default_on else "off"),
                      clock=FakeClock(wall=NOW))


def owned_policy(job: dict[str, Any]) -> dict[str, Any]:
    policy = netpol.build_network_policy(apply_defaults(job), TENSORFLOWJOB)
    policy["metadata"].update(uid="np-uid", resourceVersion="3")
    return policy


def test_the_policy_is_created_before_the_service_and_the_pods(kube: Mock) -> None:
    outcome = reconciler(kube, FakeCaches(make_job())).reconcile("ns/j")
    assert kube.create.call_args_list[0].args[0] == POLICIES
    assert created_kinds(kube)[0] == "NetworkPolicy"
    assert sorted(created_kinds(kube)[1:]) == ["Pod", "Pod", "Service"]
    assert "networkpolicy/j-tfjob" in outcome.created
    assert outcome.status_deferred  # pods were created: the status still waits for their events


def test_a_policy_the_cache_already_shows_is_not_created_again(kube: Mock) -> None:
    job = make_job()
    reconciler(kube, FakeCaches(job, policy=owned_policy(job))).reconcile("ns/j")
    assert "NetworkPolicy" not in created_kinds(kube)


def test_a_refused_policy_holds_the_pods_back_and_retries(kube: Mock) -> None:
    def create(path: str, body: dict[str, Any]) -> dict[str, Any]:
        if body["kind"] == "NetworkPolicy":
            raise ApiError(403, "Forbidden", "networkpolicies.networking.k8s.io is forbidden")
        return body

    kube.create.side_effect = create
    with pytest.raises(RequeueError):
        reconciler(kube, FakeCaches(make_job())).reconcile("ns/j")
    assert "Pod" not in created_kinds(kube)
    status = kube.patch.call_args.args[1]["status"]
    assert "startTime" not in status  # the clock does not start for pods held back


def test_a_policy_name_held_by_a_foreign_object_is_a_conflict_and_holds_the_pods(kube: Mock) -> None:
    job = make_job()
    foreign = {"metadata": {"name": "j-tfjob", "namespace": "ns", "uid": "other"}, "spec": {}}
    with pytest.raises(RequeueError):
        reconciler(kube, FakeCaches(job, policy=foreign)).reconcile("ns/j")
    assert created_kinds(kube) == ["Service"]
    running = next(c for c in kube.patch.call_args.args[1]["status"]["conditions"] if c["type"] == "Running")
    assert running["reason"] == "NameConflict"
    assert "NetworkPolicy j-tfjob already exists" in running["message"]
    kube.delete.assert_not_called()


def test_a_policy_that_exists_but_is_not_cached_yet_lets_the_pods_go(kube: Mock) -> None:
    def create(path: str, body: dict[str, Any]) -> dict[str, Any]:
        if body["kind"] == "NetworkPolicy":
            raise ApiError(409, "AlreadyExists", "exists")
        return body

    kube.create.side_effect = create
    kube.get.return_value = owned_policy(make_job())
    reconciler(kube, FakeCaches(make_job())).reconcile("ns/j")
    kube.get.assert_called_once_with(POLICIES + "/j-tfjob")
    assert created_kinds(kube).count("Pod") == 2


def test_a_policy_the_api_server_rejects_fails_the_job(kube: Mock) -> None:
    def create(path: str, body: dict[str, Any]) -> dict[str, Any]:
        if body["kind"] == "NetworkPolicy":
            raise ApiError(422, "Invalid", "spec.ingress[0].from[1].ipBlock.cidr: Invalid value")
        return body

    kube.create.side_effect = create
    reconciler(kube, FakeCaches(make_job())).reconcile("ns/j")
    status = kube.patch.call_args.args[1]["status"]
    failed = next(c for c in status["conditions"] if c["type"] == "Failed")
    assert failed["reason"] == "InvalidNetworkPolicy"
    assert "ipBlock.cidr: Invalid value" in failed["message"]
    assert "Pod" not in created_kinds(kube)


def test_a_changed_policy_is_patched_with_a_resource_version_precondition(kube: Mock) -> None:
    job = make_job()
    stale = owned_policy(job)
    stale["spec"]["ingress"][0]["ports"] = [{"protocol": "TCP", "port": 9999}]
    pods = pods_for(apply_defaults(job), node=None)
    service = build_service(apply_defaults(job), TENSORFLOWJOB)
    service["metadata"]["uid"] = "svc-uid"
    outcome = reconciler(kube, FakeCaches(job, pods, service, stale)).reconcile("ns/j")
    path, body = next(c.args for c in kube.patch.call_args_list if "networkpolicies" in c.args[0])
    assert path == POLICIES + "/j-tfjob"
    assert body["metadata"] == {"resourceVersion": "3"}
    assert body["spec"]["ingress"][0]["ports"] == [{"protocol": "TCP", "port": 2222}]
    assert outcome.updated == ["networkpolicy/j-tfjob"]


def test_a_policy_no_longer_wanted_is_deleted_by_uid(kube: Mock) -> None:
    job = make_job()
    stored = owned_policy(job)
    job["spec"]["networkPolicy"]["enabled"] = False
    reconciler(kube, FakeCaches(job, policy=stored)).reconcile("ns/j")
    kube.delete.assert_called_once_with(POLICIES + "/j-tfjob", uid="np-uid")


def test_by_default_a_job_that_does_not_ask_for_isolation_gets_no_policy(kube: Mock) -> None:
    job = tfjob("j", {"worker": role(2)}, namespace="ns", uid="job-uid", resourceVersion="10", generation=1)
    Reconciler(kube, FakeCaches(job), clock=FakeClock(wall=NOW)).reconcile("ns/j")
    assert sorted(created_kinds(kube)) == ["Pod", "Pod", "Service"]
