"""A role's stall rule becomes a startup and a liveness probe in its TensorFlow container (only there,
and only where the template has none), with the environment `tfheartbeat` reads."""

from __future__ import annotations

from typing import Any

import pytest

from controller.job import stall
from controller.job.builders import build_pods
from controller.job.kinds import TENSORFLOWJOB
from controller.job.validation import validate_job
from tests.support.jobs import container, role, tfjob
from tfjob_api.defaults import apply_defaults


def job_with(stall_rule: dict[str, Any] | None, **tf_fields: Any) -> dict[str, Any]:
    worker = role(2, containers=[container("proxy", name="sidecar"), container(**tf_fields)])
    if stall_rule is not None:
        worker["stall"] = stall_rule
    return apply_defaults(tfjob("j", {"worker": worker, "ps": role(1)}, namespace="ns"))


def tf_container(pod: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in pod["spec"]["containers"] if c["name"] == "tensorflow")


def env(container: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in container.get("env") or []}


def worker_pod(job: dict[str, Any]) -> dict[str, Any]:
    return next(p for p in build_pods(job, "", (), TENSORFLOWJOB) if p["metadata"]["name"] == "j-worker-0")


def test_an_empty_stall_rule_gets_the_file_probes_with_the_defaults() -> None:
    tensorflow = tf_container(worker_pod(job_with({})))
    command = stall.heartbeat_check_command("/tmp/tfjob-heartbeat", 600)
    assert tensorflow["livenessProbe"] == {"exec": {"command": command}, "periodSeconds": 60, "timeoutSeconds": 10,
                                           "failureThreshold": 2, "successThreshold": 1}
    assert tensorflow["startupProbe"] == {"exec": {"command": command}, "periodSeconds": 60, "timeoutSeconds": 10,
                                          "failureThreshold": 10, "successThreshold": 1}


def test_the_startup_probe_allows_startup_seconds_before_the_first_heartbeat() -> None:
    tensorflow = tf_container(worker_pod(job_with({"timeoutSeconds": 60, "startupSeconds": 1000})))
    probe = tensorflow["startupProbe"]
    assert probe["periodSeconds"] == 15
    assert probe["failureThreshold"] * probe["periodSeconds"] >= 1000 > (probe["failureThreshold"] - 1) * 15


def test_a_custom_file_and_timeout_reach_the_probe_command_as_arguments() -> None:
    tensorflow = tf_container(worker_pod(job_with({"timeoutSeconds": 120, "path": "/ckpt/beat file"})))
    assert tensorflow["livenessProbe"]["exec"]["command"][-2:] == ["/ckpt/beat file", "120"]
    assert tensorflow["livenessProbe"]["periodSeconds"] == 30


def test_startup_seconds_zero_adds_no_startup_probe() -> None:
    tensorflow = tf_container(worker_pod(job_with({"startupSeconds": 0})))
    assert "startupProbe" not in tensorflow
    assert "livenessProbe" in tensorflow


def test_an_http_heartbeat_probes_the_endpoint_on_its_port() -> None:
    tensorflow = tf_container(worker_pod(job_with({"heartbeat": "http", "port": 8090, "timeoutSeconds": 300})))
    assert tensorflow["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": 8090}
    assert tensorflow["startupProbe"]["httpGet"] == {"path": "/healthz", "port": 8090}
    added = {name: value for name, value in env(tensorflow).items() if name != "TF_CONFIG"}
    assert added == {"TFJOB_HEARTBEAT_PORT": "8090", "TFJOB_HEARTBEAT_PATH": "/healthz",
                     "TFJOB_STALL_TIMEOUT_SECONDS": "300"}


def test_the_helper_learns_the_file_and_the_timeout_from_the_environment() -> None:
    tensorflow = tf_container(worker_pod(job_with({"path": "/var/run/beat", "timeoutSeconds": 90})))
    assert env(tensorflow)["TFJOB_HEARTBEAT_FILE"] == "/var/run/beat"
    assert env(tensorflow)["TFJOB_STALL_TIMEOUT_SECONDS"] == "90"


def test_a_liveness_probe_in_the_template_wins_and_the_startup_probe_is_still_added() -> None:
    own = {"httpGet": {"path": "/alive", "port": 9000}}
    tensorflow = tf_container(worker_pod(job_with({}, livenessProbe=own)))
    assert tensorflow["livenessProbe"] == own
    assert "exec" in tensorflow["startupProbe"]


def test_a_startup_probe_in_the_template_wins() -> None:
    own = {"tcpSocket": {"port": 2222}, "failureThreshold": 100}
    tensorflow = tf_container(worker_pod(job_with({}, startupProbe=own)))
    assert tensorflow["startupProbe"] == own


def test_a_heartbeat_variable_in_the_template_wins() -> None:
    tensorflow = tf_container(worker_pod(job_with({}, env=[{"name": "TFJOB_HEARTBEAT_FILE", "value": "/mine"}])))
    assert [e["value"] for e in tensorflow["env"] if e["name"] == "TFJOB_HEARTBEAT_FILE"] == ["/mine"]


def test_only_the_tensorflow_container_of_the_role_with_the_rule_gets_probes() -> None:
    pods = {p["metadata"]["name"]: p for p in build_pods(job_with({}), "", (), TENSORFLOWJOB)}
    sidecar = pods["j-worker-0"]["spec"]["containers"][0]
    assert "livenessProbe" not in sidecar and "startupProbe" not in sidecar
    assert "livenessProbe" not in tf_container(pods["j-ps-0"])


def test_a_role_without_a_rule_is_built_exactly_as_before() -> None:
    assert "livenessProbe" not in tf_container(worker_pod(job_with(None)))
    assert set(env(tf_container(worker_pod(job_with(None))))) == {"TF_CONFIG"}


def test_the_users_template_is_never_changed() -> None:
    job = job_with({})
    template = job["spec"]["worker"]["template"]
    build_pods(job, "", (), TENSORFLOWJOB)
    assert "livenessProbe" not in template["spec"]["containers"][1]


@pytest.mark.parametrize(("rule", "path", "message"), [
    ({"heartbeat": "http"}, "spec.worker.stall.port", "port is required with heartbeat: http"),
    ({"port": 8080}, "spec.worker.stall.port", "port is only used with heartbeat: http"),
    ({"path": "relative/beat"}, "spec.worker.stall.path", "'relative/beat' must be an absolute path (starting with /)"),
    ({"timeoutSeconds": 5}, "spec.worker.stall.timeoutSeconds", "5 is below the minimum of 10"),
    ({"heartbeat": "grpc"}, "spec.worker.stall.heartbeat", "'grpc' is not allowed; must be one of 'file', 'http'"),
])
def test_a_bad_stall_rule_is_rejected_naming_the_field(rule: dict[str, Any], path: str, message: str) -> None:
    worker = {**role(1), "stall": rule}
    problems = validate_job(tfjob("j", {"worker": worker}, namespace="ns"))
    assert [(p.path, p.message) for p in problems] == [(path, message)]


def test_the_crd_defaults_an_empty_rule() -> None:
    assert job_with({})["spec"]["worker"]["stall"] == {"timeoutSeconds": 600, "startupSeconds": 600,
                                                      "heartbeat": "file"}
