"""Kubernetes' own gang scheduling: a job's Workload (one template for the whole job) and its PodGroup
made from it, pods that point at the group with `spec.schedulingGroup`, the gang's size kept in step,
the Workload kept across a suspension, and the Pending condition saying what the group's status says."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from controller.job import gang, gang_workload
from controller.job.builders import build_service
from controller.job.children import ChildSituation, DeclaredChild, Step
from controller.job.gang_schedulers import Kubernetes, gang_scheduler
from controller.job.kinds import TENSORFLOWJOB, TFJOB
from controller.job.plan import Plan, PlanInputs, plan_job
from controller.job.preview import Settings, preview
from controller.options import ControllerOptions
from controller.owned import declarations
from tests.support.jobs import make_job, pods_for
from tfjob_api import conditions as cond
from tfjob_api.kubeflow_model import to_model

NOW = datetime(2026, 12, 3, 12, 0, 0, tzinfo=UTC)
KUBERNETES = gang_scheduler("kubernetes")
assert isinstance(KUBERNETES, Kubernetes)


def stored(obj: dict[str, Any], uid: str) -> dict[str, Any]:
    obj["metadata"].update(uid=uid, resourceVersion="4")
    return obj


def plan(job: dict[str, Any], group: dict[str, Any] | None, workload: dict[str, Any] | None = None,
         pods: list[dict[str, Any]] | None = None) -> Plan:
    return plan_job(PlanInputs(
        job, pods or [], build_service(job, TENSORFLOWJOB) if pods else None, now=NOW, kind=TENSORFLOWJOB,
        gang_view=gang.GangView(KUBERNETES, group),
        children={"Workload": DeclaredChild(workload, gang_workload.rule)}))


def test_a_new_job_gets_a_workload_its_pod_group_and_pods_pointing_at_the_group() -> None:
    job = make_job(worker=3, ps=2)
    out = plan(job, None)
    workload = out.child("Workload").create
    assert workload is not None and workload["apiVersion"] == "scheduling.k8s.io/v1beta1"
    assert workload["spec"]["podGroupTemplates"] == [{"name": "gang", "schedulingPolicy": {"gang": {"minCount": 5}}}]
    assert workload["spec"]["controllerRef"] == {"apiGroup": "kubeflow.org", "kind": "TensorFlowJob", "name": "j"}
    group = out.child("PodGroup").create
    assert group is not None and group["spec"] == {
        "workloadRef": {"workloadName": "j", "templateName": "gang"},
        "schedulingPolicy": {"gang": {"minCount": 5}}}
    assert len(out.create_pods) == 5  # at once: the scheduler holds them until the gang fits
    assert {p["spec"]["schedulingGroup"]["podGroupName"] for p in out.create_pods} == {"j"}
    assert {p["spec"]["schedulerName"] for p in out.create_pods} == {"default-scheduler"}


def test_min_available_and_priority_class_reach_the_template_and_the_group() -> None:
    job = make_job(worker=4, schedulingPolicy={"minAvailable": 3, "priorityClass": "high"})
    out = plan(job, None)
    template = out.child("Workload").create["spec"]["podGroupTemplates"][0]  # type: ignore[index]
    assert template == {"name": "gang", "schedulingPolicy": {"gang": {"minCount": 3}}, "priorityClassName": "high"}
    spec = out.child("PodGroup").create["spec"]  # type: ignore[index]
    assert spec["schedulingPolicy"] == {"gang": {"minCount": 3}} and spec["priorityClassName"] == "high"


def test_a_topology_key_asks_for_one_domain_for_the_whole_gang() -> None:
    out = plan(make_job(worker=3, schedulingPolicy={"topologyKey": "example.com/rack"}), None)
    constraints = {"topology": [{"key": "example.com/rack"}]}
    assert out.child("PodGroup").create["spec"]["schedulingConstraints"] == constraints  # type: ignore[index]
    template = out.child("Workload").create["spec"]["podGroupTemplates"][0]  # type: ignore[index]
    assert template["schedulingConstraints"] == constraints


def test_scaling_patches_only_the_gangs_size_of_the_group_and_of_the_template() -> None:
    job = make_job(worker=2, schedulingPolicy={"priorityClass": "high", "topologyKey": "rack"})
    group = stored(gang.build_pod_group(job, KUBERNETES, TENSORFLOWJOB), "pg-uid")
    workload = stored(gang_workload.build_workload(job, TENSORFLOWJOB), "wl-uid")
    scaled = make_job(worker=4)  # the priority class and topology are immutable: never patched away
    out = plan(scaled, group, workload)
    assert out.child("PodGroup").patch == (group, {"spec": {"schedulingPolicy": {"gang": {"minCount": 4}}}})
    _, patch = out.child("Workload").patch  # type: ignore[misc]
    assert patch == {"spec": {"podGroupTemplates": [
        {"name": "gang", "schedulingPolicy": {"gang": {"minCount": 4}},
         "schedulingConstraints": {"topology": [{"key": "rack"}]}, "priorityClassName": "high"}]}}


def test_a_group_in_step_with_the_job_is_left_alone() -> None:
    job = make_job(worker=2)
    group = stored(gang.build_pod_group(job, KUBERNETES, TENSORFLOWJOB), "pg-uid")
    workload = stored(gang_workload.build_workload(job, TENSORFLOWJOB), "wl-uid")
    out = plan(job, group, workload)
    assert out.child("PodGroup") == Step() and out.child("Workload") == Step()


def test_suspending_drops_the_pod_group_and_keeps_the_workload() -> None:
    job = make_job(worker=2, suspend=True)
    group = stored(gang.build_pod_group(job, KUBERNETES, TENSORFLOWJOB), "pg-uid")
    workload = stored(gang_workload.build_workload(job, TENSORFLOWJOB), "wl-uid")
    out = plan(job, group, workload)
    assert out.child("PodGroup").delete is group
    assert out.child("Workload") == Step()


def test_on_resume_the_pods_wait_for_the_old_pod_group_to_be_gone() -> None:
    job = make_job(worker=2)
    group = stored(gang.build_pod_group(job, KUBERNETES, TENSORFLOWJOB), "pg-uid")
    group["metadata"]["deletionTimestamp"] = "2026-12-03T11:59:00Z"
    workload = stored(gang_workload.build_workload(job, TENSORFLOWJOB), "wl-uid")
    out = plan(job, group, workload)
    assert out.create_pods == [] and out.child("PodGroup") == Step()
    gone = plan(job, None, workload)
    assert gone.child("PodGroup").create is not None and len(gone.create_pods) == 2


def test_a_finished_job_gives_back_its_workload() -> None:
    job = make_job(worker=1)
    workload = stored(gang_workload.build_workload(job, TENSORFLOWJOB), "wl-uid")
    step = gang_workload.rule(ChildSituation(job, TENSORFLOWJOB, workload, finished=True, suspended=False))
    assert step == Step(delete=workload)


def test_the_pending_condition_says_what_the_groups_status_says() -> None:
    job = make_job(worker=2)
    group = stored(gang.build_pod_group(job, KUBERNETES, TENSORFLOWJOB), "pg-uid")
    group["status"] = {"conditions": [{"type": "PodGroupInitiallyScheduled", "status": "False",
                                       "reason": "Unschedulable", "message": "0/1 nodes are available: Insufficient cpu"}]}
    pods = pods_for(job)
    for pod in pods:
        pod["spec"].pop("nodeName", None)
        pod["status"] = {"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
             "message": "minCount (2) cannot be satisfied: 0 scheduled, 1 remaining"}]}
    pending = cond.find(plan(job, group, pods=pods).status["conditions"], cond.PENDING)
    assert pending is not None and pending["reason"] == "Unschedulable"
    assert ("PodGroup j (kubernetes) is Unschedulable: 0/1 nodes are available: Insufficient cpu"
            in pending["message"])


def test_a_tfjob_gets_a_workload_pointing_back_at_the_tfjob() -> None:
    doc = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "j", "namespace": "ns", "uid": "u"},
           "spec": {"runPolicy": {"schedulingPolicy": {"minAvailable": 1}}, "tfReplicaSpecs": {
               "Worker": {"replicas": 2, "template": {"spec": {"containers": [{"name": "tensorflow", "image": "tf"}]}}}}}}
    workload = gang_workload.build_workload(to_model(doc), TFJOB)
    assert workload["spec"]["controllerRef"] == {"apiGroup": "kubeflow.org", "kind": "TFJob", "name": "j"}
    assert workload["metadata"]["ownerReferences"][0]["kind"] == "TFJob"
    assert workload["spec"]["podGroupTemplates"][0]["schedulingPolicy"] == {"gang": {"minCount": 1}}


def test_the_workload_is_declared_before_the_pod_group_and_only_under_kubernetes() -> None:
    kinds = [d.kind for d in declarations(ControllerOptions(gang_scheduler="kubernetes"))]
    assert kinds == ["Pod", "Service", "NetworkPolicy", "Workload", "PodGroup"]
    assert [d.kind for d in declarations(ControllerOptions(gang_scheduler="volcano"))] == [
        "Pod", "Service", "NetworkPolicy", "PodGroup"]
    assert [d.kind for d in declarations(ControllerOptions())] == ["Pod", "Service", "NetworkPolicy"]


def test_render_shows_the_workload_then_the_pod_group_then_the_pods() -> None:
    job = make_job(worker=2)
    shown = preview(job, TENSORFLOWJOB, Settings(scheduler=KUBERNETES), NOW).objects
    assert [o["kind"] for o in shown] == ["Workload", "PodGroup", "Service", "Pod", "Pod"]
