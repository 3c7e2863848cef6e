"""A disrupted member restarts the group (restartScope All): the pure rule, then the plan, on plain dicts."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

from controller.job.builders import build_service
from controller.job.disruptions import NODE_LOSS_HOLD, deletion_asked, group_restart, how
from controller.job.kinds import TENSORFLOWJOB
from controller.job.plan import PlanInputs, plan_job
from tests.support.jobs import make_job, pods_for
from tfjob_api.timeutil import format_time

NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)
EARLIER = format_time(NOW - timedelta(minutes=10))


def running_pods(job: dict[str, Any]) -> list[dict[str, Any]]:
    """The job's pods, Running, created ten minutes ago."""
    return pods_for(job, creationTimestamp=EARLIER)


def pod(pods: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(p for p in pods if p["metadata"]["name"] == name)


def deleted(target: dict[str, Any], seconds_ago: int = 1, grace: int = 30,
            reason: str | None = "EvictionByEvictionAPI") -> None:
    """`target` as the cache shows it after someone asked for its deletion `seconds_ago`."""
    asked = NOW - timedelta(seconds=seconds_ago)
    target["metadata"]["deletionTimestamp"] = format_time(asked + timedelta(seconds=grace))
    target["metadata"]["deletionGracePeriodSeconds"] = grace
    if reason is not None:
        target["status"]["conditions"] = [{"type": "DisruptionTarget", "status": "True", "reason": reason}]


def live(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for p in pods if not p["metadata"].get("deletionTimestamp")]


def names(objects: Any) -> list[str]:
    return sorted((getattr(o, "pod", o))["metadata"]["name"] for o in objects)


def run(job: dict[str, Any], pods: list[dict[str, Any]], **kwargs: Any) -> Any:
    return plan_job(PlanInputs(job, pods, build_service(job, TENSORFLOWJOB), now=NOW, kind=TENSORFLOWJOB, **kwargs))


def condition(plan: Any, kind: str) -> dict[str, Any] | None:
    return next((c for c in plan.status["conditions"] if c["type"] == kind), None)


def running_job(**spec: Any) -> dict[str, Any]:
    job = make_job(**spec)
    job["status"] = {"conditions": [{"type": "Running", "status": "True", "reason": "JobRunning",
                                     "lastTransitionTime": EARLIER}], "restartCount": 0}
    return job


# ---- the pure rule -----------------------------------------------------------------------------------

def test_an_evicted_worker_restarts_its_live_peers() -> None:
    job = make_job(ps=1, worker=2, restartScope="All")
    pods = running_pods(job)
    deleted(pod(pods, "j-worker-1"))
    found = group_restart(job["spec"], pods, live(pods), NOW)
    assert found is not None
    assert names(found.restart) == ["j-ps-0", "j-worker-0"]
    assert found.taken == ("j-worker-1 (evicted)",)


def test_restart_scope_pod_leaves_the_peers_alone() -> None:
    job = make_job(worker=2)
    pods = running_pods(job)
    deleted(pod(pods, "j-worker-1"))
    assert group_restart(job["spec"], pods, live(pods), NOW) is None


def test_replacements_younger_than_the_disruption_are_not_restarted_again() -> None:
    job = make_job(worker=2, restartScope="All")
    pods = running_pods(job)
    deleted(pod(pods, "j-worker-1"), seconds_ago=20)
    pod(pods, "j-worker-0")["metadata"]["creationTimestamp"] = format_time(NOW - timedelta(seconds=5))
    assert group_restart(job["spec"], pods, live(pods), NOW) is None


def test_a_shorter_grace_period_later_keeps_the_time_the_deletion_was_asked_for() -> None:
    target = running_pods(make_job(worker=1))[0]
    # The API server moves deletionTimestamp by the difference when the kubelet deletes with grace 0.
    target["metadata"]["deletionTimestamp"] = format_time(NOW - timedelta(seconds=25))
    target["metadata"]["deletionGracePeriodSeconds"] = 0
    assert deletion_asked(target) == NOW - timedelta(seconds=25)


def test_the_evaluator_is_no_member_of_the_group() -> None:
    job = make_job(worker=2, evaluator=1, restartScope="All")
    pods = running_pods(job)
    deleted(pod(pods, "j-evaluator-0"))
    assert group_restart(job["spec"], pods, live(pods), NOW) is None


def test_a_failed_evicted_member_restarts_the_group_unless_a_rule_claims_it() -> None:
    job = make_job(worker=2, restartScope="All")
    pods = running_pods(job)
    pod(pods, "j-worker-1")["status"] = {"phase": "Failed", "reason": "Evicted"}
    found = group_restart(job["spec"], pods, live(pods), NOW)
    assert found is not None and names(found.restart) == ["j-worker-0", "j-worker-1"]
    assert group_restart(job["spec"], pods, live(pods), NOW, uncounted=lambda _pod: False) is None


def test_succeeded_pods_are_left_out_of_the_restart() -> None:
    job = make_job(worker=3, restartScope="All", successPolicy="AllWorkers")
    pods = running_pods(job)
    pod(pods, "j-worker-2")["status"] = {"phase": "Succeeded"}
    deleted(pod(pods, "j-worker-1"))
    found = group_restart(job["spec"], pods, live(pods), NOW)
    assert found is not None and names(found.restart) == ["j-worker-0"]


def test_a_member_gone_without_a_trace_restarts_the_group() -> None:
    job = make_job(worker=2, restartScope="All")
    pods = [p for p in running_pods(job) if p["metadata"]["name"] != "j-worker-1"]
    found = group_restart(job["spec"], pods, live(pods), NOW, empty_slots=["j-worker-1"])
    assert found is not None and names(found.restart) == ["j-worker-0"]
    assert found.taken == ("j-worker-1 (gone)",)


def test_a_deletion_by_hand_reads_as_deleted() -> None:
    target = running_pods(make_job(worker=1))[0]
    deleted(target, reason=None)
    assert how(target) == "deleted"


# ---- in the plan -------------------------------------------------------------------------------------

def test_plan_deletes_the_peers_of_an_evicted_worker_and_counts_nothing() -> None:
    job = running_job(ps=1, worker=2, restartScope="All")
    pods = running_pods(job)
    deleted(pod(pods, "j-worker-1"))
    plan = run(job, pods)
    assert names(plan.delete_pods) == ["j-ps-0", "j-worker-0"]
    assert {d.reason for d in plan.delete_pods} == {"Disrupted"}
    assert not any(d.force for d in plan.delete_pods)  # each with its own grace period: TF saves on SIGTERM
    assert plan.status["restartCount"] == 0
    assert condition(plan, "Restarting")["reason"] == "Disrupted"
    assert condition(plan, "Running")["status"] == "False"
    assert [e.reason for e in plan.events] == ["Disrupted"]


def test_plan_never_counts_a_peer_that_failed_in_the_pass_that_saw_the_disruption() -> None:
    job = running_job(worker=2, restartScope="All")
    pods = running_pods(job)
    deleted(pod(pods, "j-worker-1"))
    peer = pod(pods, "j-worker-0")
    peer["status"] = {"phase": "Running", "containerStatuses": [
        {"name": "tensorflow", "restartCount": 1, "lastState": {"terminated": {"exitCode": 1}}}]}
    plan = run(job, pods)
    assert names(plan.delete_pods) == ["j-worker-0"]
    assert plan.status["restartCount"] == 0


def test_plan_never_fails_the_job_for_a_peer_whose_exit_follows_the_disruption() -> None:
    job = running_job(worker=(2, "ExitCode"), restartScope="All")
    pods = running_pods(job)
    deleted(pod(pods, "j-worker-1"))
    peer = pod(pods, "j-worker-0")
    peer["status"] = {"phase": "Failed", "containerStatuses": [
        {"name": "tensorflow", "restartCount": 0, "state": {"terminated": {"exitCode": 1}}}]}
    plan = run(job, pods)
    assert condition(plan, "Failed") is None
    assert names(plan.delete_pods) == ["j-worker-0"] and plan.status["restartCount"] == 0


def test_plan_after_the_restart_leaves_the_replacements_alone() -> None:
    job = running_job(worker=2, restartScope="All")
    pods = running_pods(job)
    deleted(pod(pods, "j-worker-1"))
    settled = copy.deepcopy(job)
    settled["status"] = run(job, pods).status  # the restart's status, written
    deleted(pod(pods, "j-worker-1"), seconds_ago=10, grace=30)  # still terminating, ten seconds on
    replacement = pod(pods, "j-worker-0")
    replacement["metadata"].update(uid="new-worker-0", creationTimestamp=format_time(NOW - timedelta(seconds=3)))
    replacement["status"] = {"phase": "Pending"}
    assert run(settled, pods).delete_pods == []


def test_plan_restarts_the_group_when_a_member_vanished_from_a_running_job() -> None:
    job = running_job(worker=2, restartScope="All")
    pods = [p for p in running_pods(job) if p["metadata"]["name"] != "j-worker-1"]
    plan = run(job, pods)
    assert names(plan.delete_pods) == ["j-worker-0"]
    assert "j-worker-1 (gone)" in condition(plan, "Restarting")["message"]


def test_plan_with_restart_scope_pod_replaces_only_the_evicted_pod() -> None:
    job = running_job(worker=2)
    pods = running_pods(job)
    deleted(pod(pods, "j-worker-1"))
    plan = run(job, pods)
    assert plan.delete_pods == [] and condition(plan, "Restarting") is None


def test_plan_lets_a_rule_count_a_failed_evicted_pod() -> None:
    job = running_job(worker=2, restartScope="All", failurePolicy={"rules": [
        {"action": "Count", "onPodConditions": ["DisruptionTarget"]}]})
    pods = running_pods(job)
    pod(pods, "j-worker-1")["status"] = {"phase": "Failed", "conditions": [
        {"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet"}]}
    plan = run(job, pods)
    assert plan.status["restartCount"] == 1
    assert condition(plan, "Restarting")["reason"] == "PodFailurePolicy"


def test_a_member_gone_unseen_restarts_peers_created_in_the_same_second() -> None:
    job = make_job(worker=2, restartScope="All")
    pods = [p for p in pods_for(job, creationTimestamp=format_time(NOW)) if p["metadata"]["name"] != "j-worker-1"]
    found = group_restart(job["spec"], pods, live(pods), NOW + timedelta(milliseconds=300), empty_slots=["j-worker-1"])
    assert found is not None and names(found.restart) == ["j-worker-0"]


# ---- a node lost without notice ------------------------------------------------------------------


def restarted_in_place(target: dict[str, Any], seconds_ago: float) -> None:
    """`target` Running again after its container exited 1 `seconds_ago` and the kubelet restarted it."""
    finished = format_time(NOW - timedelta(seconds=seconds_ago))
    target["status"] = {"phase": "Running", "containerStatuses": [
        {"name": "tensorflow", "restartCount": 1, "state": {"running": {"startedAt": finished}},
         "lastState": {"terminated": {"exitCode": 1, "finishedAt": finished}}}]}


def on_lost_node(pods: list[dict[str, Any]], name: str) -> None:
    pod(pods, name)["spec"]["nodeName"] = "lost-node"


def lost(candidate: dict[str, Any]) -> bool:
    return candidate["spec"].get("nodeName") == "lost-node"


def test_a_lost_node_restarts_the_group_once_a_peer_restarted_in_place() -> None:
    job = make_job(worker=2, restartScope="All")
    pods = running_pods(job)
    on_lost_node(pods, "j-worker-1")
    restarted_in_place(pod(pods, "j-worker-0"), seconds_ago=5)
    found = group_restart(job["spec"], pods, live(pods), NOW, node_lost=lost)
    assert found is not None
    assert found.taken == ("j-worker-1 (lost with its node)",)
    assert names(found.restart) == ["j-worker-0", "j-worker-1"]


def test_a_lost_node_whose_pods_train_on_restarts_nothing() -> None:
    job = make_job(worker=2, restartScope="All")
    pods = running_pods(job)
    on_lost_node(pods, "j-worker-1")  # cut off from the control plane, say: its peer has not failed
    assert group_restart(job["spec"], pods, live(pods), NOW, node_lost=lost) is None


def test_a_peer_restart_older_than_the_hold_is_no_sign_of_the_lost_node() -> None:
    job = make_job(worker=2, restartScope="All")
    pods = running_pods(job)
    on_lost_node(pods, "j-worker-1")
    restarted_in_place(pod(pods, "j-worker-0"), seconds_ago=NODE_LOSS_HOLD.total_seconds() + 30)
    assert group_restart(job["spec"], pods, live(pods), NOW, node_lost=lost) is None


def test_plan_counts_nothing_when_a_lost_node_broke_the_training() -> None:
    job = running_job(worker=2, restartScope="All")
    pods = running_pods(job)
    on_lost_node(pods, "j-worker-1")
    restarted_in_place(pod(pods, "j-worker-0"), seconds_ago=20)
    plan = run(job, pods, node_ready=lambda node: node != "lost-node")
    assert names(plan.delete_pods) == ["j-worker-0", "j-worker-1"]
    assert not any(d.force for d in plan.delete_pods)
    assert plan.status["restartCount"] == 0
    assert "j-worker-1 (lost with its node)" in condition(plan, "Restarting")["message"]
    assert condition(plan, "Restarting")["reason"] == "Disrupted"


def test_an_all_reduce_members_in_place_restart_waits_before_it_counts() -> None:
    job = running_job(worker=2, restartScope="All")
    pods = running_pods(job)
    restarted_in_place(pod(pods, "j-worker-0"), seconds_ago=10)
    plan = run(job, pods)
    assert plan.delete_pods == [] and plan.status["restartCount"] == 0
    assert plan.requeue_after is not None
    assert plan.requeue_after <= NODE_LOSS_HOLD.total_seconds() - 10


def test_an_all_reduce_members_in_place_restart_counts_after_the_hold() -> None:
    job = running_job(worker=2, restartScope="All")
    pods = running_pods(job)
    restarted_in_place(pod(pods, "j-worker-0"), seconds_ago=NODE_LOSS_HOLD.total_seconds() + 1)
    plan = run(job, pods)
    assert plan.status["restartCount"] == 1
    assert plan.status["replicaStatuses"]["worker"]["restarts"] == 1


def test_an_in_place_restart_counts_at_once_with_restart_scope_pod() -> None:
    job = running_job(worker=2)
    pods = running_pods(job)
    restarted_in_place(pod(pods, "j-worker-0"), seconds_ago=10)
    assert run(job, pods).status["restartCount"] == 1
