"""Unit tests of `tfjobs.describe`: the text of `kubectl tfjob describe`, from plain dicts."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from tests.support.jobs import make_job, pods_for
from tfjobs.describe import EVENTS_SHOWN, describe, job_problems

NOW = datetime(2030, 1, 1, 0, 10, tzinfo=UTC)
PVC_MESSAGE = '0/4 nodes are available: persistentvolumeclaim "training-data" not found.'


def section(text: str, title: str) -> str:
    start = text.index(f"{title}:\n")
    end = text.find("\n\n", start)
    return text[start:end if end >= 0 else None]


def running_job(**roles: int) -> dict[str, Any]:
    job = make_job(**roles)
    job["metadata"]["creationTimestamp"] = "2030-01-01T00:00:00Z"
    job["status"] = {"state": "Running", "restartCount": 1, "startTime": "2030-01-01T00:00:01Z",
                     "conditions": [{"type": "Running", "status": "True", "reason": "JobRunning",
                                     "message": "running", "lastTransitionTime": "2030-01-01T00:05:00Z"}],
                     "replicaStatuses": {"worker": {"active": 2, "succeeded": 0, "failed": 0}}}
    return job


def event(name: str, reason: str, message: str, when: str, kind: str = "Pod", kind_of: str = "Warning") -> dict[str, Any]:
    return {"involvedObject": {"kind": kind, "name": name}, "reason": reason, "message": message, "type": kind_of,
            "lastTimestamp": when, "count": 1}


def test_a_pending_pod_names_the_missing_pvc_in_the_problems() -> None:
    job = running_job(worker=2)
    pods = pods_for(job)
    pods[1]["spec"].pop("nodeName")
    pods[1]["status"] = {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": PVC_MESSAGE}]}

    text = describe(job, pods, [], NOW)

    problems = section(text, "Problems")
    assert f"worker-1 (j-worker-1, Pending): Unschedulable: {PVC_MESSAGE}" in problems
    assert "worker-0" not in problems


def test_every_slot_is_listed_with_its_pod_task_node_and_restarts() -> None:
    job = running_job(chief=1, worker=2)
    pods = pods_for(job)
    pods[2]["status"] = {"phase": "Running", "containerStatuses": [{"name": "tensorflow", "restartCount": 2,
                                                                     "state": {"running": {}}}]}

    rows = [line.split() for line in section(describe(job, pods, [], NOW), "Pods").splitlines()[1:]]

    assert rows[0] == ["SLOT", "POD", "STATUS", "NODE", "RESTARTS", "TASK", "AGE"]
    assert [r[:6] for r in rows[1:]] == [["chief-0", "j-chief-0", "Running", "node-1", "0", "chief:0"],
                                          ["worker-0", "j-worker-0", "Running", "node-1", "0", "worker:0"],
                                          ["worker-1", "j-worker-1", "Running", "node-1", "2", "worker:1"]]


def test_a_slot_without_its_pod_is_shown_missing_while_the_job_runs() -> None:
    job = running_job(worker=2)

    pods_section = section(describe(job, pods_for(job)[:1], [], NOW), "Pods")

    assert pods_section.splitlines()[-1].split() == ["worker-1", "-", "missing"]


def test_the_header_gives_state_restarts_and_roles() -> None:
    text = describe(running_job(worker=2), [], [], NOW)

    assert "State:        Running - JobRunning: running" in text
    assert "Restarts:     1 (backoffLimit 6, 5 left)" in text
    assert section(text, "Roles").splitlines()[2].split() == ["worker", "2", "2", "0", "0", "OnFailure", "0", "-"]


def test_each_role_shows_its_restarts_and_what_is_left_of_its_budget() -> None:
    job = running_job(worker=2, evaluator=1)
    job["spec"]["worker"]["backoffLimit"] = 3
    job["status"]["replicaStatuses"] = {"worker": {"active": 2, "restarts": 2, "restartsLeft": 1},
                                        "evaluator": {"active": 1, "restarts": 4}}

    rows = section(describe(job, [], [], NOW), "Roles").splitlines()[2:]

    assert [r.split() for r in rows] == [["worker", "2", "2", "0", "0", "OnFailure", "2", "1", "of", "3"],
                                         ["evaluator", "1", "1", "0", "0", "OnFailure", "4", "-"]]


def test_the_failure_rules_are_listed_in_order() -> None:
    job = running_job(worker=2)
    job["spec"]["failurePolicy"] = {"rules": [
        {"name": "bad-config", "action": "FailJob", "onExitCodes": {"operator": "In", "values": [3]}},
        {"action": "Ignore", "roles": ["worker"], "onReasons": ["Evicted"]}]}

    rules = section(describe(job, [], [], NOW), "Failure rules (first match wins)").splitlines()[1:]

    assert rules == ["  0. bad-config: exit code In [3] -> FailJob", "  1. role worker, reason Evicted -> Ignore"]


def test_the_last_events_of_the_job_and_its_pods_are_shown_oldest_first() -> None:
    job = running_job(worker=1)
    events = [event("j-worker-0", f"Reason{i}", f"message {i}", f"2030-01-01T00:0{i % 10}:00Z")
              for i in range(EVENTS_SHOWN + 5)]
    events.append(event("j", "JobRunning", "TensorFlowJob j is running.", "2030-01-01T00:09:30Z",
                        kind="TensorFlowJob", kind_of="Normal"))

    lines = section(describe(job, pods_for(job), events, NOW), "Events").splitlines()

    assert len(lines) == 2 + EVENTS_SHOWN
    assert lines[-1].split()[:4] == ["30s", "Normal", "JobRunning", "tfjob/j"]
    assert "Reason0 " not in "\n".join(lines)


def test_job_problems_say_why_a_job_waits_or_failed() -> None:
    suspended = {"status": {"state": "Suspended", "conditions": [
        {"type": "Suspended", "status": "True", "reason": "WaitingForAdmission", "message": "waiting for quota"}]}}
    quota = {"status": {"state": "Created", "conditions": [
        {"type": "Created", "status": "True", "reason": "JobCreated"},
        {"type": "Running", "status": "False", "reason": "QuotaExceeded", "message": "exceeded quota: q"}]}}

    assert job_problems(suspended) == ["Suspended: WaitingForAdmission: waiting for quota"]
    assert job_problems(quota) == ["not running: QuotaExceeded: exceeded quota: q"]
    assert job_problems(running_job(worker=1)) == []


def test_a_job_multikueue_dispatched_names_its_worker_cluster_and_expects_no_pods_here() -> None:
    job = running_job(worker=2)
    text = describe(job, [], [], NOW, runs_on="worker-1")
    assert "Runs on:      worker cluster worker-1 (dispatched by MultiKueue: its pods are there)" in text
    assert section(text, "Pods").splitlines()[-1].strip() == "<none>"


def test_a_dispatched_job_not_placed_yet_says_so() -> None:
    assert "Runs on:      <no worker cluster yet>" in describe(running_job(worker=1), [], [], NOW, runs_on="")


def test_a_job_placed_by_kueues_topology_shows_its_workload_and_the_rack_it_landed_in() -> None:
    job = running_job(worker=5)
    assignment = {"levels": ["tfjob-test/block", "tfjob-test/rack", "kubernetes.io/hostname"], "slices": [
        {"domainCount": 3, "valuesPerLevel": [{"universal": "b1"}, {"universal": "r2"},
                                              {"individual": {"prefix": "node-", "roots": ["a", "b", "c"]}}],
         "podCounts": {"individual": [2, 2, 1]}}]}
    workload = {"metadata": {"name": "tensorflowjob-job-abcde"}, "status": {"admission": {
        "clusterQueue": "cq", "podSetAssignments": [{"name": "worker", "topologyAssignment": assignment}]}}}
    text = describe(job, [], [], NOW, workload=workload)
    assert "Workload:     tensorflowjob-job-abcde (admitted by ClusterQueue cq)" in text
    assert "Placement:    worker: tfjob-test/block=b1,tfjob-test/rack=r2 (5 pods) on 3 hosts" in text


def test_a_job_without_a_workload_shows_no_queue_lines() -> None:
    text = describe(running_job(worker=2), [], [], NOW)
    assert "Workload:" not in text and "Placement:" not in text


def test_a_resumed_training_says_when_from_which_step_and_what_the_interruption_cost() -> None:
    job = running_job(worker=2)
    job["status"]["progress"] = {"step": 95, "totalSteps": 1000, "percent": 9, "lastUpdateTime": "2030-01-01T00:09:30Z",
                                 "lastResume": {"time": "2030-01-01T00:07:00Z", "step": 91, "stepBefore": 100,
                                                "stepsLost": 9}}
    text = describe(job, pods_for(job), [], NOW)
    assert ("Resumed:      at step 91, 3m ago (2030-01-01T00:07:00Z); last step seen before the interruption: 100; "
            "9 step(s) lost") in text.splitlines()


def test_a_training_never_interrupted_has_no_resumed_line() -> None:
    job = running_job(worker=2)
    job["status"]["progress"] = {"step": 95, "lastUpdateTime": "2030-01-01T00:09:30Z"}
    assert "Resumed:" not in describe(job, pods_for(job), [], NOW)
