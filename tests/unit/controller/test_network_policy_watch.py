"""NetworkPolicies are watched only when needed: from the start with `--network-policy=on`, otherwise
from the first job that asks for a policy. Until then no NetworkPolicy is read or written, so an
operator whose jobs ask for none needs no grant on them (client mocked)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from unittest.mock import Mock

import pytest
from pytest_mock import MockerFixture

from controller.controller import Controller
from controller.options import ControllerOptions
from controller.reconciler import Reconciler, RequeueError
from kube import Kube
from kube.clock import FakeClock
from tests.support.caches import FakeCaches
from tests.support.jobs import role, tfjob
from tests.support.queues import drain

NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)


def make_job(**network_policy: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"worker": role(1)}
    if network_policy:
        spec["networkPolicy"] = network_policy
    return tfjob("j", spec, namespace="ns", uid="job-uid", resourceVersion="10", generation=1)


@pytest.fixture
def kube(mocker: MockerFixture) -> Mock:
    client = mocker.Mock(spec=Kube)
    client.has_api.return_value = False
    client.create.side_effect = lambda path, body: body
    client.patch.side_effect = lambda path, body, **_: {**make_job(), "status": body.get("status", {}),
                                                         "metadata": {**make_job()["metadata"], "resourceVersion": "11"}}
    return client


class PolicyCache:
    """The reconciler's `owned_cache` for NetworkPolicies: records what it was asked, answers `ready`."""

    def __init__(self, ready: bool) -> None:
        self.ready, self.asked = ready, []  # type: list[bool]

    def __call__(self, kind: str, wanted: bool) -> bool:
        assert kind == "NetworkPolicy"
        self.asked.append(wanted)
        return self.ready


def reconciler(kube: Mock, job: dict[str, Any], cache: PolicyCache) -> Reconciler:
    return Reconciler(kube, FakeCaches(job), ControllerOptions(network_policy="off"), clock=FakeClock(wall=NOW),
                      owned_cache=cache)


def touched_network_policies(kube: Mock) -> bool:
    calls = [*kube.create.call_args_list, *kube.patch.call_args_list, *kube.delete.call_args_list,
             *kube.get.call_args_list]
    return any("networkpolicies" in str(c.args[0]) for c in calls)


def test_with_policies_off_the_controller_starts_no_network_policy_informer(kube: Mock) -> None:
    caches = Controller(kube).caches
    assert caches.network_policies is None
    assert "networkpolicies" not in caches.factory.informers


def test_with_policies_on_the_controller_watches_network_policies_from_the_start(kube: Mock) -> None:
    caches = Controller(kube, ControllerOptions(network_policy="on")).caches
    assert caches.network_policies is not None
    assert "networkpolicies" in caches.factory.informers


def test_a_job_that_wants_no_policy_is_reconciled_without_any_network_policy_call(kube: Mock) -> None:
    cache = PolicyCache(ready=False)
    outcome = reconciler(kube, make_job(), cache).reconcile("ns/j")
    assert cache.asked == [False]
    assert sorted(outcome.created) == ["j-worker-0", "service/j"]
    assert not touched_network_policies(kube)


def test_a_job_that_wants_a_policy_waits_for_the_policy_cache_before_creating_anything(kube: Mock) -> None:
    cache = PolicyCache(ready=False)
    with pytest.raises(RequeueError, match="NetworkPolicy cache"):
        reconciler(kube, make_job(enabled=True), cache).reconcile("ns/j")
    assert cache.asked == [True]
    assert not kube.create.called and not kube.patch.called


def test_a_job_that_wants_a_policy_gets_it_once_the_policy_cache_has_filled(kube: Mock) -> None:
    outcome = reconciler(kube, make_job(enabled=True), PolicyCache(ready=True)).reconcile("ns/j")
    assert "networkpolicy/j-tfjob" in outcome.created


def test_the_first_job_asking_for_a_policy_starts_the_network_policy_informer(kube: Mock) -> None:
    caches = Controller(kube).caches
    assert not caches.network_policy_cache(False)
    assert caches.network_policies is None
    assert not caches.network_policy_cache(True)  # started now; it has not listed yet
    assert caches.network_policies is not None
    assert "networkpolicies" in caches.factory.informers


def test_a_network_policy_informer_started_late_routes_its_events_to_the_owning_job(kube: Mock) -> None:
    controller = Controller(kube)
    controller.caches.network_policy_cache(True)
    informer = controller.caches.network_policies
    assert informer is not None
    policy = {"metadata": {"name": "j-tfjob", "namespace": "ns", "uid": "np-uid", "resourceVersion": "1",
                           "ownerReferences": [{"apiVersion": "kubeflow.org/v1", "kind": "TensorFlowJob",
                                                "name": "j", "uid": "job-uid", "controller": True}]}}
    informer.on_event("ADDED", policy)
    informer.on_event("DELETED", policy)
    assert drain(controller) == ["ns/j"]
