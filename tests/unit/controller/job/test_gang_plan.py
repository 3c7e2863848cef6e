"""The planner keeps one PodGroup per job under a gang scheduler: created with the first pods, patched when a
role scales, deleted when the job is suspended or finished; Volcano's pods wait for their group's admission,
and the Pending condition names the group's phase."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from controller.job import gang
from controller.job.builders import build_service
from controller.job.gang_schedulers import SCHEDULER_PLUGINS_GROUP_LABEL, VOLCANO_TASK_ANNOTATION, gang_scheduler
from controller.job.kinds import TENSORFLOWJOB, TFJOB
from controller.job.plan import Plan, PlanInputs, plan_job
from tests.support.jobs import make_job, pods_for
from tfjob_api import conditions as cond
from tfjob_api.kubeflow_model import to_model

NOW = datetime(2026, 12, 2, 12, 0, 0, tzinfo=UTC)
VOLCANO = gang_scheduler("volcano")
PLUGINS = gang_scheduler("scheduler-plugins")
assert VOLCANO is not None and PLUGINS is not None


def existing(job: dict[str, Any], scheduler: gang.GangScheduler, phase: str = "") -> dict[str, Any]:
    group = gang.build_pod_group(job, scheduler, TENSORFLOWJOB)
    group["metadata"].update(uid="pg-uid", resourceVersion="4")
    if phase:
        group["status"] = {"phase": phase}
    return group


def plan(job: dict[str, Any], scheduler: gang.GangScheduler, group: dict[str, Any] | None,
         pods: list[dict[str, Any]] | None = None) -> Plan:
    return plan_job(PlanInputs(job, [] if pods is None else pods, None if pods is None else build_service(job, TENSORFLOWJOB),
                    now=NOW, gang_view=gang.GangView(scheduler, group), kind=TENSORFLOWJOB))


def test_a_new_job_gets_its_pod_group_and_decorated_pods_in_one_plan() -> None:
    job = make_job(worker=3)
    out = plan(job, PLUGINS, None)
    assert out.child("PodGroup").create == gang.build_pod_group(job, PLUGINS, TENSORFLOWJOB)
    assert len(out.create_pods) == 3
    assert {p["spec"]["schedulerName"] for p in out.create_pods} == {"scheduler-plugins-scheduler"}
    assert {p["metadata"]["labels"][SCHEDULER_PLUGINS_GROUP_LABEL] for p in out.create_pods} == {"j"}


def test_without_a_gang_scheduler_no_pod_group_is_planned_and_pods_are_plain() -> None:
    out = plan_job(PlanInputs(make_job(worker=2), [], None, now=NOW, kind=TENSORFLOWJOB))
    assert out.child("PodGroup").create is None and out.child("PodGroup").delete is None
    assert all("schedulerName" not in p["spec"] for p in out.create_pods)


def test_volcano_pods_wait_until_their_pod_group_is_admitted() -> None:
    job = make_job(worker=2)
    waiting = plan(job, VOLCANO, existing(job, VOLCANO, "Pending"))
    assert waiting.create_pods == []
    pending = cond.find(waiting.status["conditions"], cond.PENDING)
    assert pending is not None and pending["reason"] == "PodGroupPending"
    assert "PodGroup j (volcano) is Pending" in pending["message"]
    admitted = plan(job, VOLCANO, existing(job, VOLCANO, "Inqueue"))
    assert len(admitted.create_pods) == 2


def test_volcanos_unschedulable_reason_reaches_the_pending_condition() -> None:
    job = make_job(worker=2)
    group = existing(job, VOLCANO, "Pending")
    group["status"]["conditions"] = [{"type": "Unschedulable", "status": "True",
                                      "message": "2/2 tasks in gang unschedulable: queue resource quota insufficient"}]
    pending = cond.find(plan(job, VOLCANO, group).status["conditions"], cond.PENDING)
    assert pending is not None and pending["message"].endswith("queue resource quota insufficient.")


def test_volcanos_queue_quota_event_is_the_reason_the_job_gives() -> None:
    job = make_job(worker=5)
    group = existing(job, VOLCANO, "Pending")
    group["status"]["conditions"] = [{"type": "Unschedulable", "status": "True", "reason": "NotEnoughResources",
                                      "message": "5/0 tasks in gang unschedulable: pod group is not ready, 5 minAvailable"}]
    events = [{"reason": "Unschedulable", "type": "Normal", "message": message, "lastTimestamp": at,
               "involvedObject": {"uid": "pg-uid"}}
              for message, at in (("an older word", "2026-12-02T11:00:00Z"),
                                  ("queue resource quota insufficient", "2026-12-02T11:59:00Z"))]
    out = plan_job(PlanInputs(job, [], None, now=NOW, kind=TENSORFLOWJOB,
                              gang_view=gang.GangView(VOLCANO, group, events)))
    pending = cond.find(out.status["conditions"], cond.PENDING)
    assert pending is not None and pending["reason"] == "PodGroupPending"
    assert ("PodGroup j (volcano) is Pending: queue resource quota insufficient (5/0 tasks in gang unschedulable: "
            "pod group is not ready, 5 minAvailable)") in pending["message"]


def test_pods_the_coscheduler_holds_report_its_reason_and_the_groups_phase() -> None:
    job = make_job(worker=2)
    pods = pods_for(job, "Pending", node=None)
    for pod in pods:
        pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                        "message": "rejected due to timeout after waiting 10s at plugin Coscheduling"}]
    pending = cond.find(plan(job, PLUGINS, existing(job, PLUGINS, "Pending"), pods).status["conditions"], cond.PENDING)
    assert pending is not None and pending["status"] == "True" and pending["reason"] == "Unschedulable"
    assert "at plugin Coscheduling" in pending["message"]
    assert pending["message"].endswith("; PodGroup j (scheduler-plugins) is Pending")


def test_scaling_a_role_patches_the_pod_group() -> None:
    job = make_job(worker=2)
    group = existing(job, PLUGINS)
    scaled = make_job(worker=4)
    out = plan(scaled, PLUGINS, group, pods_for(job))
    assert out.child("PodGroup").patch is not None
    assert out.child("PodGroup").patch[0] is group and out.child("PodGroup").patch[1] == {"spec": {"minMember": 4}}


def test_an_unchanged_job_leaves_its_pod_group_alone() -> None:
    job = make_job(worker=2)
    out = plan(job, PLUGINS, existing(job, PLUGINS, "Running"), pods_for(job))
    assert (out.child("PodGroup").create, out.child("PodGroup").patch, out.child("PodGroup").delete) == (None, None, None)


def test_suspending_the_job_deletes_its_pod_group_and_resuming_creates_one() -> None:
    job = make_job(worker=2, suspend=True)
    group = existing(job, PLUGINS, "Running")
    assert plan(job, PLUGINS, group, pods_for(job)).child("PodGroup").delete is group
    resumed = make_job(worker=2)
    assert plan(resumed, PLUGINS, None).child("PodGroup").create is not None


def test_a_finished_job_gives_its_pod_group_back() -> None:
    job = make_job(worker=1)
    done = plan(job, PLUGINS, existing(job, PLUGINS, "Running"), pods_for(job, "Succeeded"))
    assert cond.is_true(done.status["conditions"], cond.SUCCEEDED)
    finished = {**job, "status": done.status}
    group = existing(job, PLUGINS, "Finished")
    assert plan(finished, PLUGINS, group, pods_for(job, "Succeeded")).child("PodGroup").delete is group


def test_a_pod_group_being_deleted_is_neither_patched_nor_recreated_yet() -> None:
    job = make_job(worker=2)
    group = existing(make_job(worker=1), PLUGINS)
    group["metadata"]["deletionTimestamp"] = "2026-12-02T11:59:00Z"
    out = plan(job, PLUGINS, group, pods_for(job))
    assert (out.child("PodGroup").create, out.child("PodGroup").patch) == (None, None)


def test_a_template_with_its_own_scheduler_gets_a_warning_event() -> None:
    job = make_job(worker=1)
    job["spec"]["worker"]["template"]["spec"]["schedulerName"] = "custom"
    out = plan(job, PLUGINS, None)
    assert out.create_pods[0]["spec"]["schedulerName"] == "custom"
    assert [e.reason for e in out.events if e.type == "Warning"] == ["SetPodTemplateSchedulerName"]


def test_a_tfjob_masters_volcano_task_is_named_as_kubeflow_names_it() -> None:
    tfjob_doc = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "j", "namespace": "ns",
                                                                              "uid": "tf-uid"},
                 "spec": {"tfReplicaSpecs": {
                     "Master": {"replicas": 1, "template": {"spec": {"containers": [{"name": "tensorflow",
                                                                                     "image": "tf"}]}}},
                     "Worker": {"replicas": 1, "template": {"spec": {"containers": [{"name": "tensorflow",
                                                                                     "image": "tf"}]}}}}}}
    group = existing(to_model(tfjob_doc), VOLCANO, "Inqueue")
    out = plan_job(PlanInputs(to_model(tfjob_doc), [], None, now=NOW, gang_view=gang.GangView(VOLCANO, group), kind=TFJOB,
                   problems=[]))
    tasks = {p["metadata"]["name"]: p["metadata"]["annotations"][VOLCANO_TASK_ANNOTATION] for p in out.create_pods}
    assert tasks == {"j-chief-0": "master", "j-worker-0": "worker"}


def test_a_volcano_gang_whose_pod_group_is_being_created_is_not_pending_and_warns_of_nothing() -> None:
    out = plan(make_job(worker=2), VOLCANO, None)
    assert out.children["PodGroup"].create is not None
    assert cond.find(out.status["conditions"], cond.PENDING) is None
    assert [e for e in out.events if e.type == "Warning"] == []
