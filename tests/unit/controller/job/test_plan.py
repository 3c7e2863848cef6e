"""The lifecycle rules (docs/design.md §4) on plain dicts: observed pods in, a plan out."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

from controller.job.builders import build_service
from controller.job.kinds import TENSORFLOWJOB
from controller.job.plan import FORCE_DELETE_AFTER, PlanInputs, plan_job
from tests.support.jobs import make_job, pods_for
from tfjob_api.timeutil import format_time

NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)


def with_phase(pods: list[dict[str, Any]], name: str, phase: str, exit_code: int | None = None) -> None:
    pod = next(p for p in pods if p["metadata"]["name"] == name)
    pod["status"] = {"phase": phase}
    if exit_code is not None:
        pod["status"]["containerStatuses"] = [
            {"name": "tensorflow", "restartCount": 0, "state": {"terminated": {"exitCode": exit_code}}}]


def names(objects: list[Any]) -> list[str]:
    return sorted((getattr(o, "pod", o))["metadata"]["name"] for o in objects)


def condition(plan: Any, kind: str) -> dict[str, Any] | None:
    return next((c for c in plan.status["conditions"] if c["type"] == kind), None)


def run(job: dict[str, Any], pods: list[dict[str, Any]], service: Any = "default", **kwargs: Any) -> Any:
    if service == "default":
        service = build_service(job, TENSORFLOWJOB)
    return plan_job(PlanInputs(job, pods, service, now=kwargs.pop("now", NOW), kind=TENSORFLOWJOB, **kwargs))


def settle(job: dict[str, Any], plan: Any) -> dict[str, Any]:
    """The job as the API server would hold it after the plan's status write."""
    updated = copy.deepcopy(job)
    updated["status"] = plan.status
    return updated


# ---- creation and Running ------------------------------------------------------------------------

def test_new_job_creates_every_pod_and_the_service_and_sets_created_and_start_time() -> None:
    job = make_job(chief=1, ps=2, worker=4)
    plan = run(job, [], service=None)
    assert names(plan.create_pods) == sorted(["j-chief-0", "j-ps-0", "j-ps-1"] + [f"j-worker-{i}" for i in range(4)])
    assert plan.create_service["metadata"]["name"] == "j"
    assert condition(plan, "Created")["status"] == "True"
    assert plan.status["startTime"] == format_time(NOW)
    assert plan.status["state"] == "Created"
    assert plan.status["observedGeneration"] == 1


def test_all_pods_running_makes_the_job_running_with_replica_statuses() -> None:
    job = make_job(ps=2, worker=4)
    plan = run(job, pods_for(job))
    assert plan.create_pods == [] and plan.delete_pods == []
    assert condition(plan, "Running")["status"] == "True"
    assert plan.status["state"] == "Running"
    assert plan.status["replicaStatuses"]["worker"] == {
        "active": 4, "succeeded": 0, "failed": 0,
        "selector": "tensorflowjob.kubeflow.org/job-name=j,tensorflowjob.kubeflow.org/replica-type=worker"}


def test_a_jobs_first_running_is_told_by_its_condition_without_an_event() -> None:
    job = make_job(worker=2)
    plan = run(job, pods_for(job))
    assert condition(plan, "Running")["status"] == "True"
    assert [e.reason for e in plan.events] == []


def test_running_again_after_a_suspension_is_an_event() -> None:
    job = make_job(worker=2)
    job = settle(job, run(job, pods_for(job)))
    job["spec"]["suspend"] = True
    job = settle(job, run(job, pods_for(job)))
    job["spec"]["suspend"] = False
    plan = run(job, pods_for(job))
    assert condition(plan, "Running")["status"] == "True"
    assert "JobRunning" in [e.reason for e in plan.events]


def test_pending_pods_do_not_make_the_job_running() -> None:
    job = make_job(worker=2)
    plan = run(job, pods_for(job, phase="Pending"))
    assert condition(plan, "Running") is None


def test_unchanged_running_job_yields_identical_status() -> None:
    job = make_job(worker=2)
    first = run(job, pods_for(job))
    second = run(settle(job, first), pods_for(job), now=NOW + timedelta(seconds=30))
    assert second.status == first.status
    assert second.events == []


# ---- success -------------------------------------------------------------------------------------

def test_chief_success_succeeds_the_job_and_deletes_running_ps_and_workers() -> None:
    job = make_job(chief=1, ps=2, worker=2)
    pods = pods_for(job)
    with_phase(pods, "j-chief-0", "Succeeded", 0)
    plan = run(job, pods)
    assert condition(plan, "Succeeded")["status"] == "True"
    assert condition(plan, "Running") is None or condition(plan, "Running")["status"] == "False"
    assert plan.status["completionTime"] == format_time(NOW)
    assert names(plan.delete_pods) == ["j-ps-0", "j-ps-1", "j-worker-0", "j-worker-1"]
    assert plan.status["state"] == "Succeeded"


def test_worker_zero_success_succeeds_a_workers_only_job() -> None:
    job = make_job(worker=3)
    pods = pods_for(job)
    with_phase(pods, "j-worker-0", "Succeeded", 0)
    assert condition(run(job, pods), "Succeeded")["status"] == "True"


def test_worker_one_success_alone_does_not_succeed_the_job() -> None:
    job = make_job(worker=3)
    pods = pods_for(job)
    with_phase(pods, "j-worker-1", "Succeeded", 0)
    plan = run(job, pods)
    assert condition(plan, "Succeeded") is None
    assert plan.create_pods == []  # a finished worker is not re-run


def test_all_workers_policy_waits_for_every_worker() -> None:
    job = make_job(worker=2, successPolicy="AllWorkers")
    pods = pods_for(job)
    with_phase(pods, "j-worker-0", "Succeeded", 0)
    assert condition(run(job, pods), "Succeeded") is None
    with_phase(pods, "j-worker-1", "Succeeded", 0)
    assert condition(run(job, pods), "Succeeded")["status"] == "True"


def test_ps_success_never_decides() -> None:
    job = make_job(ps=1, worker=1)
    pods = pods_for(job)
    with_phase(pods, "j-ps-0", "Succeeded", 0)
    assert condition(run(job, pods), "Succeeded") is None


# ---- cleanPodPolicy ------------------------------------------------------------------------------

def finished_plan(policy: str) -> Any:
    job = make_job(chief=1, ps=1, worker=2, cleanPodPolicy=policy)
    pods = pods_for(job)
    with_phase(pods, "j-chief-0", "Succeeded", 0)
    with_phase(pods, "j-worker-1", "Succeeded", 0)
    return run(job, pods)


def test_clean_pod_policy_running_deletes_only_active_pods() -> None:
    plan = finished_plan("Running")
    assert names(plan.delete_pods) == ["j-ps-0", "j-worker-0"]
    assert plan.delete_service is None


def test_clean_pod_policy_all_deletes_every_pod_and_the_service() -> None:
    plan = finished_plan("All")
    assert names(plan.delete_pods) == ["j-chief-0", "j-ps-0", "j-worker-0", "j-worker-1"]
    assert plan.delete_service["metadata"]["name"] == "j"


def test_clean_pod_policy_none_deletes_nothing() -> None:
    plan = finished_plan("None")
    assert plan.delete_pods == [] and plan.delete_service is None


# ---- failures ------------------------------------------------------------------------------------

def test_worker_failure_with_never_fails_the_job_and_deletes_active_pods() -> None:
    job = make_job(worker=(3, "Never"))
    pods = pods_for(job)
    with_phase(pods, "j-worker-1", "Failed", 1)
    plan = run(job, pods)
    failed = condition(plan, "Failed")
    assert failed["status"] == "True" and failed["reason"] == "ReplicaFailed"
    assert "exit code 1" in failed["message"]
    assert names(plan.delete_pods) == ["j-worker-0", "j-worker-2"]
    assert condition(plan, "Succeeded") is None


def test_on_failure_pod_failure_is_recreated_and_counted() -> None:
    job = make_job(worker=2)
    first = run(job, pods_for(job))
    job = settle(job, first)
    pods = pods_for(job)
    with_phase(pods, "j-worker-1", "Failed", 1)
    plan = run(job, pods)
    assert names(plan.delete_pods) == ["j-worker-1"]
    assert plan.status["restartCount"] == 1
    assert condition(plan, "Restarting")["status"] == "True"
    assert condition(plan, "Running")["status"] == "False"
    assert plan.status["state"] == "Restarting"


def test_failed_pod_already_being_deleted_is_not_counted_twice() -> None:
    job = make_job(worker=2)
    pods = pods_for(job)
    with_phase(pods, "j-worker-1", "Failed", 1)
    first = run(job, pods)
    second = run(settle(job, first), pods, pending_deletes=frozenset({"uid-j-worker-1"}))
    assert second.status["restartCount"] == 1
    assert second.delete_pods == [] and second.create_pods == []


def test_pods_deleted_at_cleanup_stay_uncounted_while_the_cache_still_shows_them_running() -> None:
    job = make_job(chief=1, worker=2)
    pods = pods_for(job)
    with_phase(pods, "j-chief-0", "Succeeded", 0)
    cleanup = run(job, pods)
    assert names(cleanup.delete_pods) == ["j-worker-0", "j-worker-1"]
    # The job's own status update wakes it before the pods' deletionTimestamps reach the cache.
    deleted = frozenset(p["metadata"]["uid"] for p in pods if p["metadata"]["name"] != "j-chief-0")
    again = run(settle(job, cleanup), pods, pending_deletes=deleted)
    assert again.status["replicaStatuses"] == cleanup.status["replicaStatuses"]
    assert again.status["replicaStatuses"]["worker"]["active"] == 0


def test_replaced_pod_gets_recreated_once_gone_and_job_runs_again() -> None:
    job = make_job(worker=2)
    pods = pods_for(job)
    with_phase(pods, "j-worker-1", "Failed", 1)
    job = settle(job, run(job, pods))
    survivors = [p for p in pods if p["metadata"]["name"] != "j-worker-1"]
    plan = run(job, survivors)
    assert names(plan.create_pods) == ["j-worker-1"]
    job = settle(job, plan)
    plan = run(job, pods_for(job))
    assert condition(plan, "Running")["status"] == "True"
    assert condition(plan, "Restarting")["status"] == "False"
    assert plan.status["restartCount"] == 1


def test_backoff_limit_exceeded_fails_the_job() -> None:
    job = make_job(worker=2, backoffLimit=1)
    pods = pods_for(job)
    with_phase(pods, "j-worker-0", "Failed", 1)
    job = settle(job, run(job, pods))
    pods = pods_for(job)
    with_phase(pods, "j-worker-1", "Failed", 1)
    plan = run(job, pods)
    assert condition(plan, "Failed")["reason"] == "BackoffLimitExceeded"
    assert plan.status["restartCount"] == 2


def test_in_place_container_restarts_count_against_backoff_limit() -> None:
    job = make_job(worker=1, backoffLimit=2)
    pods = pods_for(job)
    pods[0]["status"]["containerStatuses"] = [{"name": "tensorflow", "restartCount": 3, "state": {"running": {}}}]
    plan = run(job, pods)
    assert plan.status["restartCount"] == 3
    assert condition(plan, "Failed")["reason"] == "BackoffLimitExceeded"


def test_exit_code_policy_retries_signals() -> None:
    job = make_job(worker=(2, "ExitCode"))
    pods = pods_for(job)
    with_phase(pods, "j-worker-0", "Failed", 137)
    plan = run(job, pods)
    assert names(plan.delete_pods) == ["j-worker-0"]
    assert condition(plan, "Failed") is None


def test_exit_code_policy_fails_on_program_errors() -> None:
    job = make_job(worker=(2, "ExitCode"))
    pods = pods_for(job)
    with_phase(pods, "j-worker-0", "Failed", 2)
    assert condition(run(job, pods), "Failed")["reason"] == "ReplicaFailed"


def test_restart_scope_all_restarts_every_pod_once() -> None:
    job = make_job(ps=1, worker=3, restartScope="All")
    pods = pods_for(job)
    with_phase(pods, "j-worker-2", "Failed", 1)
    plan = run(job, pods)
    assert names(plan.delete_pods) == ["j-ps-0", "j-worker-0", "j-worker-1", "j-worker-2"]
    assert plan.status["restartCount"] == 1


def test_evicted_pod_is_replaced_without_counting() -> None:
    job = make_job(worker=(2, "Never"))
    pods = pods_for(job)
    pods[1]["status"] = {"phase": "Failed", "reason": "Evicted"}
    plan = run(job, pods)
    assert names(plan.delete_pods) == ["j-worker-1"]
    assert plan.status["restartCount"] == 0
    assert condition(plan, "Failed") is None


def test_disruption_target_condition_is_not_counted() -> None:
    job = make_job(worker=2)
    pods = pods_for(job)
    pods[0]["status"] = {"phase": "Failed", "conditions": [{"type": "DisruptionTarget", "status": "True"}]}
    assert run(job, pods).status["restartCount"] == 0


def test_deleted_pod_is_recreated_without_counting() -> None:
    job = make_job(worker=3)
    job = settle(job, run(job, pods_for(job)))
    pods = [p for p in pods_for(job) if p["metadata"]["name"] != "j-worker-2"]
    plan = run(job, pods)
    assert names(plan.create_pods) == ["j-worker-2"]
    assert plan.status["restartCount"] == 0


# ---- topology ------------------------------------------------------------------------------------

def test_scale_up_replaces_stale_pods_and_creates_new_ones() -> None:
    old = make_job(ps=2, worker=2)
    pods = pods_for(old)
    new = make_job(ps=2, worker=4)
    plan = run(new, pods)
    assert names(plan.delete_pods) == ["j-ps-0", "j-ps-1", "j-worker-0", "j-worker-1"]
    assert names(plan.create_pods) == ["j-worker-2", "j-worker-3"]
    restarting = condition(plan, "Restarting")
    assert restarting["reason"] == "Rescaled"
    assert plan.status["restartCount"] == 0


def test_scale_down_deletes_extra_pods_and_replaces_the_rest() -> None:
    pods = pods_for(make_job(worker=4))
    plan = run(make_job(worker=2), pods)
    assert names(plan.delete_pods) == ["j-worker-0", "j-worker-1", "j-worker-2", "j-worker-3"]
    assert [d.reason for d in sorted(plan.delete_pods, key=lambda d: d.pod["metadata"]["name"])] == [
        "Rescaled", "Rescaled", "ScaledDown", "ScaledDown"]


def test_pods_with_current_tf_config_are_kept() -> None:
    job = make_job(ps=2, worker=2)
    assert run(job, pods_for(job)).delete_pods == []


def test_stray_pod_with_bad_labels_is_deleted() -> None:
    job = make_job(worker=1)
    pods = pods_for(job)
    stray = copy.deepcopy(pods[0])
    stray["metadata"]["name"] = "j-odd"
    stray["metadata"]["uid"] = "stray"
    stray["metadata"]["labels"]["tensorflowjob.kubeflow.org/replica-type"] = "master"
    assert names(run(job, [*pods, stray]).delete_pods) == ["j-odd"]


# ---- timers --------------------------------------------------------------------------------------

def test_active_deadline_requeues_for_the_remaining_time() -> None:
    job = make_job(worker=1, activeDeadlineSeconds=60)
    job["status"] = {"startTime": format_time(NOW - timedelta(seconds=45))}
    assert run(job, pods_for(job)).requeue_after == 15


def test_active_deadline_passed_fails_and_deletes_active_pods() -> None:
    job = make_job(worker=2, activeDeadlineSeconds=5)
    job["status"] = {"startTime": format_time(NOW - timedelta(seconds=5))}
    plan = run(job, pods_for(job))
    assert condition(plan, "Failed")["reason"] == "DeadlineExceeded"
    assert names(plan.delete_pods) == ["j-worker-0", "j-worker-1"]


def test_ttl_requeues_until_expiry_then_deletes_the_job() -> None:
    job = make_job(worker=1, ttlSecondsAfterFinished=3)
    pods = pods_for(job)
    with_phase(pods, "j-worker-0", "Succeeded", 0)
    finished = settle(job, run(job, pods))
    early = run(finished, pods, now=NOW + timedelta(seconds=1))
    assert early.requeue_after == 2 and not early.delete_job
    assert run(finished, pods, now=NOW + timedelta(seconds=3)).delete_job


def test_terminal_job_never_changes_state_again() -> None:
    job = make_job(worker=1)
    pods = pods_for(job)
    with_phase(pods, "j-worker-0", "Succeeded", 0)
    finished = settle(job, run(job, pods))
    with_phase(pods, "j-worker-0", "Failed", 1)
    later = run(finished, pods, now=NOW + timedelta(seconds=10))
    assert condition(later, "Succeeded")["status"] == "True"
    assert condition(later, "Failed") is None
    assert later.create_pods == []


# ---- suspend -------------------------------------------------------------------------------------

def test_suspended_at_create_makes_no_pods() -> None:
    plan = run(make_job(worker=2, suspend=True), [], service=None)
    assert plan.create_pods == [] and plan.create_service is None
    assert condition(plan, "Suspended")["status"] == "True"
    assert plan.status["state"] == "Suspended"
    assert "startTime" not in plan.status


def test_suspend_while_running_deletes_pods_and_service() -> None:
    job = make_job(worker=2)
    job = settle(job, run(job, pods_for(job)))
    job["spec"]["suspend"] = True
    plan = run(job, pods_for(job))
    assert names(plan.delete_pods) == ["j-worker-0", "j-worker-1"]
    assert plan.delete_service is not None
    assert condition(plan, "Running")["status"] == "False"
    assert plan.status["replicaStatuses"]["worker"]["active"] == 0


def test_resume_recreates_pods_with_a_new_start_time() -> None:
    job = make_job(worker=2, suspend=True)
    job["status"] = {"startTime": "2026-01-01T00:00:00Z"}
    job = settle(job, run(job, []))
    job["spec"]["suspend"] = False
    plan = run(job, [], service=None)
    assert len(plan.create_pods) == 2
    assert plan.status["startTime"] == format_time(NOW)
    suspended = condition(plan, "Suspended")
    assert suspended["status"] == "False" and suspended["reason"] == "Resumed"


# ---- dead nodes ----------------------------------------------------------------------------------

def test_pod_stuck_terminating_on_dead_node_is_force_deleted_after_the_bound() -> None:
    job = make_job(worker=1)
    pods = pods_for(job)
    pods[0]["metadata"]["deletionTimestamp"] = format_time(NOW - timedelta(seconds=FORCE_DELETE_AFTER))
    plan = run(job, pods, node_ready=lambda _n: False)
    assert [(d.pod["metadata"]["name"], d.force) for d in plan.delete_pods] == [("j-worker-0", True)]


def test_pod_terminating_on_dead_node_waits_for_the_bound() -> None:
    job = make_job(worker=1)
    pods = pods_for(job)
    pods[0]["metadata"]["deletionTimestamp"] = format_time(NOW - timedelta(seconds=5))
    plan = run(job, pods, node_ready=lambda _n: False)
    assert plan.delete_pods == []
    assert plan.requeue_after == FORCE_DELETE_AFTER - 5


def test_pod_terminating_on_healthy_node_is_left_to_the_kubelet() -> None:
    job = make_job(worker=1)
    pods = pods_for(job)
    pods[0]["metadata"]["deletionTimestamp"] = format_time(NOW - timedelta(seconds=100))
    assert run(job, pods, node_ready=lambda _n: True).delete_pods == []


def test_invalid_spec_fails_the_job_with_the_problem() -> None:
    job = make_job(worker=1)
    job["spec"]["worker"]["template"]["spec"]["containers"][0]["image"] = ""
    failed = condition(run(job, []), "Failed")
    assert failed["reason"] == "InvalidSpec"
    assert "spec.worker.template.spec.containers[0].image: must not be empty" in failed["message"]


def test_gate_holds_a_job_suspended_with_the_given_reason() -> None:
    plan = run(make_job(worker=2), [], service=None, gate=("WaitingForAdmission", "waiting for quota in LocalQueue lq"))
    assert plan.create_pods == []
    suspended = condition(plan, "Suspended")
    assert (suspended["status"], suspended["reason"]) == ("True", "WaitingForAdmission")
    assert "LocalQueue lq" in suspended["message"]


def test_gate_closing_on_a_running_job_deletes_its_pods() -> None:
    job = make_job(worker=2)
    job = settle(job, run(job, pods_for(job)))
    plan = run(job, pods_for(job), gate=("Preempted", "preempted by a higher priority job"))
    assert names(plan.delete_pods) == ["j-worker-0", "j-worker-1"]
    assert condition(plan, "Suspended")["reason"] == "Preempted"
    assert condition(plan, "Running")["status"] == "False"


def test_failure_counted_before_a_crash_is_not_counted_again() -> None:
    job = make_job(worker=2)
    pods = pods_for(job)
    with_phase(pods, "j-worker-1", "Failed", 1)
    first = run(job, pods)
    assert first.status["countedFailedPods"] == ["uid-j-worker-1"]
    # The operator died after writing the status but before deleting the pod: a new one sees it again.
    second = run(settle(job, first), pods)
    assert second.status["restartCount"] == 1
    assert names(second.delete_pods) == ["j-worker-1"]


def test_counted_failed_pods_are_forgotten_once_gone() -> None:
    job = make_job(worker=2)
    pods = pods_for(job)
    with_phase(pods, "j-worker-1", "Failed", 1)
    job = settle(job, run(job, pods))
    plan = run(job, [p for p in pods if p["metadata"]["name"] != "j-worker-1"])
    assert "countedFailedPods" not in plan.status
    assert plan.status["restartCount"] == 1


def test_pods_found_without_a_start_time_start_the_deadline_clock() -> None:
    job = make_job(worker=2, activeDeadlineSeconds=30)  # the previous operator died before writing startTime
    plan = run(job, pods_for(job))
    assert plan.status["startTime"] == format_time(NOW)
    assert plan.requeue_after == 30


def test_plans_in_two_threads_do_not_wait_on_each_other_for_the_serialised_cluster(mocker: Any) -> None:
    import threading

    from controller.job import plan as plan_module

    first_inside, release_first, second_done = threading.Event(), threading.Event(), threading.Event()
    real_of = plan_module.SerializedCluster.of

    def slow_for_the_first_job(job: Any, domain: str) -> Any:
        if job["metadata"]["name"] == "first":
            first_inside.set()
            release_first.wait(10)
        return real_of(job, domain)

    def named(name: str) -> dict[str, Any]:
        job = make_job(worker=1)
        job["metadata"]["name"] = name
        return job

    mocker.patch.object(plan_module.SerializedCluster, "of", side_effect=slow_for_the_first_job)
    first = threading.Thread(target=run, args=(named("first"), []))
    first.start()
    try:
        assert first_inside.wait(10)
        second = threading.Thread(target=lambda: (run(named("second"), []), second_done.set()))
        second.start()
        assert second_done.wait(5), "the second plan waited for the first plan's cluster"
    finally:
        release_first.set()
        first.join(10)
