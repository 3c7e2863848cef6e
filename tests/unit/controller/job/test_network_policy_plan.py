"""The planner decides the job's NetworkPolicy: create it when wanted and missing, patch it back when the
job's ports or peers (or someone's edit) changed it, delete it when no longer wanted."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest

from controller.job import netpol
from controller.job.builders import build_service
from controller.job.kinds import TENSORFLOWJOB
from controller.job.plan import PlanInputs, plan_job
from controller.job.validation import validate_job
from tests.support.jobs import container, make_job, pods_for, role, tfjob

NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)
PEER_MESSAGE = "a peer is either an ipBlock, or a podSelector and/or a namespaceSelector"


def with_policy(job: dict[str, Any], **settings: Any) -> dict[str, Any]:
    job = copy.deepcopy(job)
    job["spec"]["networkPolicy"] = {"otherPorts": "Allow", **settings}
    return job


def existing(job: dict[str, Any]) -> dict[str, Any]:
    policy = netpol.build_network_policy(job, TENSORFLOWJOB)
    policy["metadata"].update(uid="np-uid", resourceVersion="5")
    return policy


def plan(job: dict[str, Any], policy: dict[str, Any] | None, default_on: bool = False, **kwargs: Any) -> Any:
    return plan_job(PlanInputs(job, kwargs.pop("pods", pods_for(job)), build_service(job, TENSORFLOWJOB), now=NOW,
                    network_policy=netpol.PolicyView(default_on, policy), kind=TENSORFLOWJOB, **kwargs))


def test_a_job_that_asks_for_isolation_gets_its_policy_created() -> None:
    job = with_policy(make_job(worker=2), enabled=True)
    result = plan(job, None)
    assert result.child("NetworkPolicy").create == netpol.build_network_policy(job, TENSORFLOWJOB)
    assert result.child("NetworkPolicy").create["metadata"]["ownerReferences"][0]["uid"] == "job-uid"


def test_the_operator_default_gives_a_job_without_the_field_its_policy() -> None:
    assert plan(make_job(worker=1), None, default_on=True).child("NetworkPolicy").create is not None


def test_a_job_can_refuse_the_operator_default() -> None:
    assert plan(with_policy(make_job(worker=1), enabled=False), None, default_on=True).child("NetworkPolicy").create is None


def test_without_a_wish_or_a_default_there_is_no_policy() -> None:
    result = plan(make_job(worker=1), None)
    assert (result.child("NetworkPolicy").create, result.child("NetworkPolicy").patch, result.child("NetworkPolicy").delete) == (None,) * 3


def test_an_unchanged_policy_is_left_alone() -> None:
    job = with_policy(make_job(worker=2), enabled=True)
    result = plan(job, existing(job))
    assert (result.child("NetworkPolicy").create, result.child("NetworkPolicy").patch) == (None, None)


def test_the_api_servers_defaulted_protocols_do_not_look_like_a_change() -> None:
    job = with_policy(make_job(worker=2), enabled=True)
    stored = existing(job)
    for rule in stored["spec"]["ingress"]:
        for port in rule["ports"]:
            port.setdefault("protocol", "TCP")
    assert plan(job, stored).child("NetworkPolicy").patch is None


def test_empty_selector_fields_the_api_server_drops_do_not_look_like_a_change() -> None:
    job = with_policy(make_job(worker=2), enabled=True,
                      allowFrom=[{"namespaceSelector": {"matchLabels": {}}, "podSelector": {"matchExpressions": []}},
                                 {"ipBlock": {"cidr": "10.0.0.0/8", "except": []}}])
    stored = existing(job)
    for rule in stored["spec"]["ingress"]:
        for peer in rule.get("from") or []:
            for selector in ("namespaceSelector", "podSelector"):
                if selector in peer:
                    peer[selector] = {k: v for k, v in peer[selector].items() if v}
            if "ipBlock" in peer:
                peer["ipBlock"].pop("except", None)
    assert plan(job, stored).child("NetworkPolicy").patch is None


def test_a_new_tf_port_patches_the_policy() -> None:
    job = with_policy(make_job(worker=2), enabled=True)
    stored = existing(job)
    moved = copy.deepcopy(job)
    moved["spec"]["worker"]["template"]["spec"]["containers"][0]["ports"] = [{"name": "tfjob-port",
                                                                              "containerPort": 3333}]
    target, patch = plan(moved, stored, pods=[]).child("NetworkPolicy").patch
    assert target is stored
    assert patch["spec"]["ingress"][0]["ports"] == [{"protocol": "TCP", "port": 3333}]


def test_a_hand_edited_policy_is_patched_back() -> None:
    job = with_policy(make_job(worker=1), enabled=True)
    edited = existing(job)
    edited["spec"]["ingress"][0]["from"] = [{"podSelector": {}}]
    _, patch = plan(job, edited).child("NetworkPolicy").patch
    assert patch["spec"]["ingress"] == netpol.policy_spec(job)["ingress"]


def test_turning_isolation_off_deletes_the_policy() -> None:
    job = with_policy(make_job(worker=1), enabled=True)
    stored = existing(job)
    assert plan(with_policy(job, enabled=False), stored).child("NetworkPolicy").delete is stored


def test_a_policy_being_deleted_is_waited_for() -> None:
    job = with_policy(make_job(worker=1), enabled=True)
    stored = existing(job)
    stored["metadata"]["deletionTimestamp"] = "2026-11-29T11:59:59Z"
    result = plan(job, stored)
    assert (result.child("NetworkPolicy").create, result.child("NetworkPolicy").patch) == (None, None)


def test_a_suspended_job_keeps_its_policy_and_a_finished_one_is_left_alone() -> None:
    job = with_policy(make_job(worker=1), enabled=True)
    suspended = with_policy(job, enabled=True)
    suspended["spec"]["suspend"] = True
    assert plan(suspended, None, pods=[]).child("NetworkPolicy").create is not None
    finished = copy.deepcopy(job)
    finished["status"] = {"conditions": [{"type": "Succeeded", "status": "True", "reason": "JobSucceeded"}]}
    assert plan(finished, None, pods=[]).child("NetworkPolicy").create is None


def test_without_a_view_the_planner_leaves_network_policies_alone() -> None:
    job = with_policy(make_job(worker=1), enabled=True)
    assert plan_job(PlanInputs(job, [], None, now=NOW, kind=TENSORFLOWJOB)).child("NetworkPolicy").create is None


def test_the_policy_opens_every_other_tcp_port_as_ranges_and_all_of_udp_and_sctp() -> None:
    job = make_job(chief=1, worker=1)
    job["spec"]["chief"]["template"]["spec"]["containers"][0]["ports"] = [{"name": "tfjob-port",
                                                                           "containerPort": 5000}]
    other = netpol.policy_spec(job)["ingress"][1]
    assert "from" not in other
    assert other["ports"] == [
        {"protocol": "TCP", "port": 1, "endPort": 2221}, {"protocol": "TCP", "port": 2223, "endPort": 4999},
        {"protocol": "TCP", "port": 5001, "endPort": 65535}, {"protocol": "UDP"}, {"protocol": "SCTP"}]


def test_adjacent_and_edge_ports_leave_no_empty_range() -> None:
    assert netpol.other_tcp_ranges([1, 3, 65535]) == [{"protocol": "TCP", "port": 2},
                                                      {"protocol": "TCP", "port": 4, "endPort": 65534}]


@pytest.mark.parametrize(("peer", "path", "message"), [
    ({}, "spec.networkPolicy.allowFrom[0]", PEER_MESSAGE),
    ({"ipBlock": {"cidr": "10.0.0.0/8"}, "podSelector": {}}, "spec.networkPolicy.allowFrom[0]", PEER_MESSAGE),
    ({"ipBlock": {"cidr": "10.0.0.300/8"}}, "spec.networkPolicy.allowFrom[0].ipBlock.cidr",
     "'10.0.0.300/8' is not a CIDR (e.g. 10.0.0.0/16)"),
    ({"ipBlock": {"cidr": "10.0.0.7"}}, "spec.networkPolicy.allowFrom[0].ipBlock.cidr",
     "'10.0.0.7' is not a CIDR (e.g. 10.0.0.0/16)"),
])
def test_a_bad_peer_is_rejected_naming_the_field(peer: dict[str, Any], path: str, message: str) -> None:
    job = tfjob("j", {"worker": role(1, containers=[container()]), "networkPolicy": {"allowFrom": [peer]}},
                namespace="ns")
    assert [(p.path, p.message) for p in validate_job(job)] == [(path, message)]
