"""A job's PodGroup and its pods' decoration for each gang scheduler, as Kubeflow's operator writes them."""

from __future__ import annotations

from typing import Any

import pytest

from controller.job import gang
from controller.job.builders import build_pods
from controller.job.gang_schedulers import (
    SCHEDULER_PLUGINS_GROUP_LABEL,
    VOLCANO_GROUP_ANNOTATION,
    VOLCANO_TASK_ANNOTATION,
    GangScheduler,
    SchedulerPlugins,
    Volcano,
    gang_scheduler,
)
from controller.job.kinds import TENSORFLOWJOB, TFJOB
from tests.support.jobs import container, make_job, role, tfjob
from tfjob_api.defaults import apply_defaults
from tfjob_api.kubeflow_model import to_model

VOLCANO = gang_scheduler("volcano")
PLUGINS = gang_scheduler("scheduler-plugins")
assert VOLCANO is not None and PLUGINS is not None


def sized_job(**policy: Any) -> dict[str, Any]:
    """A chief of 2 CPU, two ps of 1 CPU/1Gi, three workers of 500m/2Gi (limits only: requests default to them)."""
    worker = role(3, containers=[container(resources={"limits": {"cpu": "500m", "memory": "2Gi"}})])
    spec: dict[str, Any] = {
        "chief": role(1, containers=[container(requests={"cpu": "2"})]),
        "ps": role(2, containers=[container(requests={"cpu": "1", "memory": "1Gi"})]),
        "worker": worker,
    }
    if policy:
        spec["schedulingPolicy"] = policy
    return apply_defaults(tfjob("j", spec, namespace="ns", uid="job-uid", annotations={"team": "vision"}))


def test_min_member_is_every_pod_unless_min_available_says_otherwise() -> None:
    assert gang.min_member(sized_job()) == 6
    assert gang.min_member(sized_job(minAvailable=3)) == 3


def test_min_resources_sum_the_requests_of_every_pod() -> None:
    assert gang.min_resources(sized_job()) == {"cpu": "5500m", "memory": "8Gi"}


def test_min_resources_count_only_the_first_min_available_pods_in_role_order() -> None:
    # chief (2 CPU) and both ps (1 CPU, 1Gi each): the workers are not part of the gang's minimum
    assert gang.min_resources(sized_job(minAvailable=3)) == {"cpu": "4", "memory": "2Gi"}


def test_min_resources_the_job_gives_are_kept_as_written() -> None:
    assert gang.min_resources(sized_job(minResources={"cpu": 20, "nvidia.com/gpu": "4"})) == {
        "cpu": "20", "nvidia.com/gpu": "4"}


def test_a_volcano_pod_group_has_the_queue_priority_and_the_jobs_annotations() -> None:
    group = gang.build_pod_group(sized_job(queue="research", priorityClass="high"), VOLCANO, TENSORFLOWJOB)
    assert group["apiVersion"] == "scheduling.volcano.sh/v1beta1"
    assert group["metadata"]["name"] == "j"
    assert group["metadata"]["annotations"] == {"team": "vision"}
    assert group["metadata"]["ownerReferences"][0]["uid"] == "job-uid"
    assert group["spec"] == {"minMember": 6, "minResources": gang.min_resources(sized_job()),
                             "queue": "research", "priorityClassName": "high"}


def test_a_volcano_pod_group_without_a_queue_is_in_the_default_queue() -> None:
    assert gang.build_pod_group(sized_job(), VOLCANO, TENSORFLOWJOB)["spec"]["queue"] == "default"


def test_a_scheduler_plugins_pod_group_has_the_schedule_timeout_and_no_queue() -> None:
    group = gang.build_pod_group(sized_job(queue="q", scheduleTimeoutSeconds=30, minAvailable=2), PLUGINS, TENSORFLOWJOB)
    assert group["apiVersion"] == "scheduling.x-k8s.io/v1alpha1"
    assert set(group["spec"]) == {"minMember", "minResources", "scheduleTimeoutSeconds"}
    assert group["spec"]["minMember"] == 2 and group["spec"]["scheduleTimeoutSeconds"] == 30


def test_scaling_a_role_patches_min_member_and_min_resources() -> None:
    before = gang.build_pod_group(sized_job(), PLUGINS, TENSORFLOWJOB)
    scaled = sized_job()
    scaled["spec"]["worker"]["replicas"] = 5
    patch = gang.spec_patch(before, scaled, PLUGINS)
    assert patch == {"spec": {"minMember": 8, "minResources": {"cpu": "6500m", "memory": "12Gi"}}}


def test_a_pod_group_the_server_wrote_in_other_units_needs_no_patch() -> None:
    group = gang.build_pod_group(sized_job(), PLUGINS, TENSORFLOWJOB)
    group["spec"]["minResources"] = {"cpu": "5.5", "memory": "8Gi"}
    assert gang.spec_patch(group, sized_job(), PLUGINS) is None


def test_a_volcano_pod_group_keeps_its_queue_when_the_job_names_none() -> None:
    group = gang.build_pod_group(sized_job(), VOLCANO, TENSORFLOWJOB)
    group["spec"]["queue"] = "set-by-someone"
    assert gang.spec_patch(group, sized_job(), VOLCANO) is None


def test_volcano_pods_carry_the_group_and_task_annotations_and_the_scheduler() -> None:
    pod = build_pods(make_job(worker=1), "", (), TENSORFLOWJOB)[0]
    assert gang.decorate_pod(pod, "j", "worker", VOLCANO) is None
    assert pod["spec"]["schedulerName"] == "volcano"
    assert pod["metadata"]["annotations"][VOLCANO_GROUP_ANNOTATION] == "j"
    assert pod["metadata"]["annotations"][VOLCANO_TASK_ANNOTATION] == "worker"


def test_scheduler_plugins_pods_carry_the_pod_group_label() -> None:
    pod = build_pods(make_job(worker=1), "", (), TENSORFLOWJOB)[0]
    gang.decorate_pod(pod, "j", "worker", gang_scheduler("scheduler-plugins", "my-coscheduler"))  # type: ignore[arg-type]
    assert pod["spec"]["schedulerName"] == "my-coscheduler"
    assert pod["metadata"]["labels"][SCHEDULER_PLUGINS_GROUP_LABEL] == "j"


def test_a_template_naming_another_scheduler_keeps_it_and_says_so() -> None:
    pod = build_pods(make_job(worker=1), "", (), TENSORFLOWJOB)[0]
    pod["spec"]["schedulerName"] = "my-scheduler"
    assert gang.decorate_pod(pod, "j", "worker", PLUGINS) == "my-scheduler"
    assert pod["spec"]["schedulerName"] == "my-scheduler"


def test_volcano_admits_a_gang_only_once_its_pod_group_left_pending() -> None:
    group = gang.build_pod_group(sized_job(), VOLCANO, TENSORFLOWJOB)
    assert not gang.admitted(gang.GangView(VOLCANO, None))
    assert not gang.admitted(gang.GangView(VOLCANO, group))
    group["status"] = {"phase": "Inqueue"}
    assert gang.admitted(gang.GangView(VOLCANO, group))


def test_the_coscheduler_needs_the_pods_created_to_hold_them() -> None:
    assert gang.admitted(gang.GangView(PLUGINS, None))


def test_a_tfjobs_scheduling_policy_reaches_its_pod_group() -> None:
    tfjob_doc = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
                 "metadata": {"name": "mnist", "namespace": "ns", "uid": "tf-uid"},
                 "spec": {"runPolicy": {"schedulingPolicy": {"minAvailable": 2, "queue": "q"}},
                          "tfReplicaSpecs": {"Worker": {"replicas": 3, "template": {"spec": {"containers": [
                              container(requests={"cpu": "1"})]}}}}}}
    group = gang.build_pod_group(to_model(tfjob_doc), VOLCANO, TFJOB)
    assert group["spec"] == {"minMember": 2, "minResources": {"cpu": "2"}, "queue": "q"}
    assert group["metadata"]["ownerReferences"][0]["kind"] == "TFJob"


@pytest.mark.parametrize("name", ["kube-batch", "yunikorn"])
def test_an_unknown_gang_scheduler_is_refused(name: str) -> None:
    with pytest.raises(ValueError, match="volcano, scheduler-plugins, kubernetes or none"):
        gang_scheduler(name)


@pytest.mark.parametrize(("name", "chosen", "pods_ask_for"), [
    ("volcano", Volcano, "volcano"), ("scheduler-plugins", SchedulerPlugins, "scheduler-plugins-scheduler")])
def test_each_gang_scheduler_flag_picks_its_class_and_its_usual_scheduler_name(
        name: str, chosen: type[GangScheduler], pods_ask_for: str) -> None:
    scheduler = gang_scheduler(name)
    assert type(scheduler) is chosen and scheduler.name == name and scheduler.scheduler_name == pods_ask_for
    assert gang_scheduler(name, "renamed") == chosen("renamed")
    assert gang_scheduler("none") is None


def test_a_priority_class_the_job_no_longer_names_is_dropped_from_its_volcano_group() -> None:
    group = gang.build_pod_group(sized_job(priorityClass="high"), VOLCANO, TENSORFLOWJOB)
    assert gang.spec_patch(group, sized_job(), VOLCANO) == {"spec": {"priorityClassName": None}}


def test_a_schedule_timeout_the_job_no_longer_sets_is_dropped_from_its_coscheduling_group() -> None:
    group = gang.build_pod_group(sized_job(scheduleTimeoutSeconds=30), PLUGINS, TENSORFLOWJOB)
    assert gang.spec_patch(group, sized_job(), PLUGINS) == {"spec": {"scheduleTimeoutSeconds": None}}
