"""Which pod of a job reports its progress, the variable that tells it where to serve, and when and
where the operator reads it (`spec.progress`), on plain dicts."""

from __future__ import annotations

from typing import Any

from controller.job.builders import build_pods
from controller.job.kinds import TENSORFLOWJOB
from controller.job.progress import Target, reporting_slot, target, with_progress_env
from tests.support.jobs import pods_for, role, tfjob
from tfheartbeat.settings import PROGRESS_PORT_ENV
from tfjob_api.defaults import apply_defaults


def job(progress: dict[str, Any] | None = None, **roles: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {**roles} if roles else {"worker": role(2)}
    if progress is not None:
        spec["progress"] = progress
    return apply_defaults(tfjob("mnist", spec, namespace="team-a", uid="u1"))


def progress_env(pod: dict[str, Any]) -> list[str]:
    env = pod["spec"]["containers"][0].get("env") or []
    return [e["value"] for e in env if e["name"] == PROGRESS_PORT_ENV]


def test_the_chief_reports_when_there_is_one() -> None:
    assert reporting_slot(job({}, chief=role(1), worker=role(2))) == ("chief", 0)


def test_worker_0_reports_without_a_chief() -> None:
    assert reporting_slot(job({})) == ("worker", 0)


def test_a_job_without_progress_has_no_reporting_pod() -> None:
    assert reporting_slot(job()) is None


def test_only_the_reporting_pod_gets_the_progress_port_with_its_default() -> None:
    pods = build_pods(job({}, chief=role(1), worker=role(2)), "", (), TENSORFLOWJOB)
    assert {p["metadata"]["name"]: progress_env(p) for p in pods} == {
        "mnist-chief-0": ["8090"], "mnist-worker-0": [], "mnist-worker-1": []}


def test_no_pod_of_a_job_without_progress_gets_the_variable() -> None:
    assert [progress_env(p) for p in build_pods(job(), "", (), TENSORFLOWJOB)] == [[], []]


def test_the_templates_own_variable_wins() -> None:
    container = {"name": "tensorflow", "env": [{"name": PROGRESS_PORT_ENV, "value": "9000"}]}
    assert with_progress_env(container, job({"port": 8100}), "worker", 0)["env"] == container["env"]


def test_the_running_reporting_pod_is_read_at_the_port_and_period_asked() -> None:
    spec = job({"port": 8100, "periodSeconds": 60})
    assert target(spec, pods_for(spec)) == Target("team-a", "mnist", "mnist-worker-0", 8100, 60.0,
                                                          "uid-mnist-worker-0/0")


def test_the_read_goes_through_the_api_servers_pod_proxy() -> None:
    assert Target("team-a", "mnist", "mnist-worker-0", 8100, 30.0).proxy_path == (
        "/api/v1/namespaces/team-a/pods/mnist-worker-0:8100/proxy/progress")


def test_a_reporting_pod_that_is_not_running_is_not_read() -> None:
    spec = job({})
    assert target(spec, pods_for(spec, phase="Pending")) is None


def test_a_reporting_pod_being_deleted_is_not_read() -> None:
    spec = job({})
    pods = pods_for(spec)
    pods[0]["metadata"]["deletionTimestamp"] = "2026-12-02T10:00:00Z"
    assert target(spec, pods) is None


def test_a_finished_job_is_not_read() -> None:
    spec = job({})
    spec["status"] = {"conditions": [{"type": "Succeeded", "status": "True"}]}
    assert target(spec, pods_for(spec)) is None


def test_a_job_without_progress_is_never_read() -> None:
    spec = job()
    assert target(spec, pods_for(spec)) is None
