"""Failure rules and per-role budgets on a real API server with KWOK nodes: each action of
`spec.failurePolicy` (FailJob, Ignore, Count, RestartJob), a termination reason (OOMKilled), and a
role's own backoffLimit beside another role's."""

from __future__ import annotations

from typing import Any

from kube import resource_path
from tfjob_api.timeutil import parse_time

EXIT_3_FAILS = {"name": "bad-config", "action": "FailJob", "onExitCodes": {"operator": "In", "values": [3]}}


def uids(tfjobs: Any, name: str) -> dict[str, str]:
    return {p["metadata"]["name"]: p["metadata"]["uid"] for p in tfjobs.pods(name)}


def test_a_fail_job_rule_on_exit_code_3_fails_the_job_at_once_naming_the_rule(tfjobs: Any) -> None:
    tfjobs.create("fj", worker=tfjobs.role(2), backoffLimit=6, failurePolicy={"rules": [EXIT_3_FAILS]})
    before = {p["metadata"]["name"]: p["metadata"]["uid"] for p in tfjobs.wait_pods("fj", 2)}
    tfjobs.exit_pod("fj-worker-1", 3)
    failed = tfjobs.wait_condition("fj", "Failed", "PodFailurePolicy", timeout=30)
    assert "spec.failurePolicy.rules[0] (bad-config)" in failed["message"] and "exit code 3" in failed["message"]
    pod = tfjobs.api.get(resource_path("", "v1", "pods", tfjobs.namespace, "fj-worker-1"))
    exited = parse_time(pod["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"])
    assert (parse_time(failed["lastTransitionTime"]) - exited).total_seconds() <= 3  # one reconcile, no retry
    assert tfjobs.status("fj")["restartCount"] == 0
    assert pod["metadata"]["uid"] == before["fj-worker-1"]  # never recreated
    tfjobs.wait_for(lambda: any(e["reason"] == "PodFailurePolicy" for e in tfjobs.events("fj")), 30,
                    "a PodFailurePolicy event")


def test_an_oom_killed_worker_fails_the_job_under_an_oom_rule(tfjobs: Any) -> None:
    rule = {"action": "FailJob", "onReasons": ["OOMKilled"]}
    tfjobs.create("oom", worker=tfjobs.role(2), failurePolicy={"rules": [rule]})
    tfjobs.wait_pods("oom", 2)
    tfjobs.api.patch(resource_path("", "v1", "pods", tfjobs.namespace, "oom-worker-0", "status"), {"status": {
        "phase": "Failed", "containerStatuses": [{
            "name": "tensorflow", "image": tfjobs.role()["template"]["spec"]["containers"][0]["image"],
            "imageID": "", "ready": False, "restartCount": 0,
            "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}]}})
    failed = tfjobs.wait_condition("oom", "Failed", "PodFailurePolicy", timeout=30)
    assert "OOMKilled" in failed["message"] and "spec.failurePolicy.rules[0]" in failed["message"]


def test_an_ignore_rule_replaces_the_pod_without_counting(tfjobs: Any) -> None:
    rule = {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [42]}}
    tfjobs.create("ig", worker=tfjobs.role(2), backoffLimit=0, failurePolicy={"rules": [rule]})
    first = {p["metadata"]["name"]: p["metadata"]["uid"] for p in tfjobs.wait_pods("ig", 2)}
    tfjobs.exit_pod("ig-worker-0", 42)
    tfjobs.wait_for(lambda: uids(tfjobs, "ig").get("ig-worker-0") not in (None, first["ig-worker-0"]), 30,
                    "ig-worker-0 replaced")
    tfjobs.wait_condition("ig", "Running")
    assert tfjobs.condition("ig", "Failed") is None
    assert tfjobs.status("ig")["restartCount"] == 0
    assert any(e["reason"] == "PodFailurePolicy" and "Ignore" in e["message"] for e in tfjobs.events("ig"))


def test_a_restart_job_rule_restarts_every_pod_and_counts_once(tfjobs: Any) -> None:
    rule = {"action": "RestartJob", "roles": ["worker"], "onExitCodes": {"operator": "NotIn", "values": [137]}}
    tfjobs.create("rj", ps=tfjobs.role(1), worker=tfjobs.role(2), failurePolicy={"rules": [rule]})
    before = {p["metadata"]["name"]: p["metadata"]["uid"] for p in tfjobs.wait_pods("rj", 3)}
    tfjobs.wait_condition("rj", "Running")
    tfjobs.exit_pod("rj-worker-1", 5)
    tfjobs.wait_for(lambda: tfjobs.status("rj").get("restartCount") == 1, 30, "the restart to be counted")
    tfjobs.wait_condition("rj", "Running")
    after = {p["metadata"]["name"]: p["metadata"]["uid"] for p in tfjobs.wait_pods("rj", 3)}
    assert set(after) == set(before) and all(after[n] != before[n] for n in before)
    assert tfjobs.status("rj")["restartCount"] == 1


def test_a_worker_budget_of_one_fails_on_the_second_worker_failure_while_the_evaluator_keeps_its_own(
        tfjobs: Any) -> None:
    worker = {**tfjobs.role(2), "backoffLimit": 1}
    evaluator = {**tfjobs.role(1), "backoffLimit": 3}
    tfjobs.create("rb", worker=worker, evaluator=evaluator, backoffLimit=10)
    tfjobs.wait_pods("rb", 3)
    tfjobs.exit_pod("rb-evaluator-0", 1)
    tfjobs.wait_for(lambda: tfjobs.status("rb").get("restartCount") == 1, 30, "the evaluator's failure counted")
    tfjobs.wait_pods("rb", 3)
    tfjobs.exit_pod("rb-worker-0", 1)
    tfjobs.wait_for(lambda: tfjobs.status("rb").get("restartCount") == 2, 30, "the first worker failure counted")
    statuses = tfjobs.status("rb")["replicaStatuses"]
    assert (statuses["worker"]["restarts"], statuses["worker"]["restartsLeft"]) == (1, 0)
    assert (statuses["evaluator"]["restarts"], statuses["evaluator"]["restartsLeft"]) == (1, 2)
    assert tfjobs.condition("rb", "Failed") is None
    tfjobs.wait_pods("rb", 3)
    tfjobs.exit_pod("rb-worker-1", 1)
    failed = tfjobs.wait_condition("rb", "Failed", "BackoffLimitExceeded", timeout=30)
    assert "spec.worker.backoffLimit=1" in failed["message"]
    assert tfjobs.status("rb")["replicaStatuses"]["evaluator"]["restartsLeft"] == 2


def test_bad_rules_are_refused_at_apply_time_naming_the_field(tfjobs: Any) -> None:
    result = tfjobs.apply_yaml(
        "apiVersion: kubeflow.org/v1\nkind: TensorFlowJob\nmetadata: {name: bad-rules}\n"
        "spec:\n  worker: {replicas: 1, template: {spec: {containers: [{name: tensorflow, image: tf}]}}}\n"
        "  failurePolicy:\n    rules:\n    - {action: FailJob}\n"
        "    - {action: FailJob, onExitCodes: {operator: In, values: [0]}}\n"
        "    - {action: Ignore, roles: [evaluator]}\n")
    assert result.returncode != 0
    assert "spec.failurePolicy.rules[0]: Invalid value" in result.stderr and "at least one of roles" in result.stderr
    assert "spec.failurePolicy.rules[1].onExitCodes" in result.stderr and "cannot list 0" in result.stderr
    assert "names a role the job does not have" in result.stderr
    assert tfjobs.get("bad-rules") is None
