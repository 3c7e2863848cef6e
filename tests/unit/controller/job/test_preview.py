"""`render`'s objects are the planner's creates for the job as the operator first sees it: the same
objects in the order the reconciler writes them, Volcano's pods as created once the group is
admitted, a suspended job as resumed, a job the planner would fail reported instead."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from controller.job import gang, netpol
from controller.job.gang_schedulers import VOLCANO_TASK_ANNOTATION, SchedulerPlugins, Volcano
from controller.job.kinds import TENSORFLOWJOB, TFJOB
from controller.job.plan import PlanInputs, plan_job
from controller.job.preview import Settings, preview
from tests.support.jobs import container, role, tfjob
from tests.support.kubeflow import replica, tfjob_manifest
from tfjob_api.defaults import apply_defaults
from tfjob_api.kubeflow_model import to_model

NOW = datetime(2026, 12, 2, 12, 0, 0, tzinfo=UTC)


def job(**spec: Any) -> dict[str, Any]:
    return tfjob("j", {"ps": role(1), "worker": role(2, containers=[container(requests={"cpu": "1"})]), **spec},
                 namespace="ns")


def kinds_and_names(objects: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(o["kind"], o["metadata"]["name"]) for o in objects]


def test_the_objects_are_the_planners_creates_in_the_order_they_are_written() -> None:
    settings = Settings(network_policy_default=True, scheduler=SchedulerPlugins("scheduler-plugins-scheduler"))
    shown = preview(job(), TENSORFLOWJOB, settings, NOW)
    planned = plan_job(PlanInputs(apply_defaults(job()), [], None, now=NOW, kind=TENSORFLOWJOB,
                       network_policy=netpol.PolicyView(True, None),
                       gang_view=gang.GangView(SchedulerPlugins("scheduler-plugins-scheduler"), None)))
    assert shown.failure is None
    assert shown.objects == [planned.child("NetworkPolicy").create, planned.child("PodGroup").create, planned.create_service,
                             *planned.create_pods]
    assert kinds_and_names(shown.objects) == [("NetworkPolicy", "j-tfjob"), ("PodGroup", "j"), ("Service", "j"),
                                              ("Pod", "j-ps-0"), ("Pod", "j-worker-0"), ("Pod", "j-worker-1")]


def test_volcano_pods_are_shown_as_the_operator_creates_them_once_the_group_is_admitted() -> None:
    shown = preview(job(), TENSORFLOWJOB, Settings(scheduler=Volcano("volcano")), NOW)
    group = shown.objects[0]
    admitted = {**group, "status": {"phase": "Inqueue"}}
    later = plan_job(PlanInputs(apply_defaults(job()), [], shown.objects[1], now=NOW, kind=TENSORFLOWJOB,
                     gang_view=gang.GangView(Volcano("volcano"), admitted)))
    assert kinds_and_names(shown.objects[:2]) == [("PodGroup", "j"), ("Service", "j")]
    assert shown.objects[2:] == later.create_pods and len(later.create_pods) == 3


def test_a_tfjob_masters_volcano_task_is_master_as_the_operator_writes_it() -> None:
    document = tfjob_manifest("m", {"Master": replica(1), "Worker": replica(1)}, metadata={"namespace": "ns"})
    document["kind"] = "TFJob"
    shown = preview(document, TFJOB, Settings(scheduler=Volcano("volcano")), NOW)
    tasks = {o["metadata"]["name"]: o["metadata"]["annotations"][VOLCANO_TASK_ANNOTATION]
             for o in shown.objects if o["kind"] == "Pod"}
    assert tasks == {"m-chief-0": "master", "m-worker-0": "worker"}
    group = {**shown.objects[0], "status": {"phase": "Running"}}
    created = plan_job(PlanInputs(to_model(document), [], None, now=NOW, kind=TFJOB, problems=[],
                       gang_view=gang.GangView(Volcano("volcano"), group))).create_pods
    assert [o for o in shown.objects if o["kind"] == "Pod"] == created


def test_a_suspended_job_is_shown_as_it_is_once_resumed() -> None:
    shown = preview(job(suspend=True), TENSORFLOWJOB, Settings(), NOW)
    assert kinds_and_names(shown.objects) == [("Service", "j"), ("Pod", "j-ps-0"), ("Pod", "j-worker-0"),
                                              ("Pod", "j-worker-1")]


def test_a_job_with_a_status_is_shown_as_new() -> None:
    finished = {**job(), "status": {"conditions": [{"type": "Succeeded", "status": "True", "reason": "JobSucceeded"}]}}
    assert len(preview(finished, TENSORFLOWJOB, Settings(), NOW).objects) == 4


def test_a_job_the_planner_would_fail_is_reported_with_nothing_shown() -> None:
    shown = preview(job(worker=role(-1)), TENSORFLOWJOB, Settings(), NOW)
    assert shown.objects == []
    assert shown.failure is not None and "replicas" in shown.failure
