"""The API server enforces the CRD's rules for the production fields with the same words as
`tfjob-operator validate`: a stall rule's port, a NetworkPolicy peer's shape."""

from __future__ import annotations

from typing import Any

import yaml

from tests.support.jobs import devcluster_role, tfjob


def applied(tfjobs_no_operator: Any, **spec: Any) -> tuple[int, str]:
    result = tfjobs_no_operator.apply_yaml(yaml.safe_dump(tfjob("j", spec)))
    return result.returncode, result.stderr


def test_an_http_stall_rule_without_a_port_is_rejected_at_apply(tfjobs_no_operator: Any) -> None:
    worker = {**devcluster_role(1), "stall": {"heartbeat": "http"}}
    code, error = applied(tfjobs_no_operator, worker=worker)
    assert code != 0
    assert "spec.worker.stall.port" in error and "port is required with heartbeat: http" in error


def test_a_peer_that_mixes_an_ip_block_and_a_selector_is_rejected_at_apply(tfjobs_no_operator: Any) -> None:
    peer = {"ipBlock": {"cidr": "10.0.0.0/8"}, "podSelector": {}}
    code, error = applied(tfjobs_no_operator, worker=devcluster_role(1),
                          networkPolicy={"enabled": True, "allowFrom": [peer]})
    assert code != 0
    assert "a peer is either an ipBlock, or a podSelector and/or a namespaceSelector" in error


def test_a_job_with_every_production_field_is_accepted_and_defaulted(tfjobs_no_operator: Any) -> None:
    worker = {**devcluster_role(1), "stall": {}}
    code, error = applied(tfjobs_no_operator, worker=worker, networkPolicy={"enabled": True})
    assert code == 0, error
    stored = tfjobs_no_operator.get("j")["spec"]
    assert stored["worker"]["stall"] == {"timeoutSeconds": 600, "startupSeconds": 600, "heartbeat": "file"}
    assert stored["networkPolicy"] == {"enabled": True, "otherPorts": "Allow"}
