"""Validation: invalid jobs get a message naming the field; valid ones pass (docs/design.md §2, §7)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from controller.job.validation import validate_job
from tests.support.jobs import role, tfjob


def valid_job() -> dict[str, Any]:
    return tfjob("mnist", {"chief": role(1), "ps": role(2), "worker": role(4)}, namespace="team-a")


def mutated(change: Any) -> dict[str, Any]:
    job = copy.deepcopy(valid_job())
    change(job)
    return job


def messages(job: Any) -> list[str]:
    return [str(p) for p in validate_job(job)]


def test_valid_job_has_no_problems() -> None:
    assert messages(valid_job()) == []


def test_valid_job_with_every_option_has_no_problems() -> None:
    def full(job: dict[str, Any]) -> None:
        job["spec"].update({
            "cleanPodPolicy": "All", "ttlSecondsAfterFinished": 0, "activeDeadlineSeconds": 60, "backoffLimit": 0,
            "successPolicy": "AllWorkers", "restartScope": "All", "suspend": True,
        })
        job["spec"]["evaluator"] = {"replicas": 1, "restartPolicy": "ExitCode",
                                    "template": {"spec": {"containers": [{"name": "x", "image": "y"}]}}}
        job["spec"]["worker"]["template"]["spec"]["containers"][0]["resources"] = {"limits": {"cpu": 0.5, "memory": "1Gi"}}
    assert messages(mutated(full)) == []


INVALID: list[tuple[str, Any, str]] = [
    ("no_chief_and_no_worker", lambda j: (j["spec"].pop("chief"), j["spec"].pop("worker")),
     "spec: at least one of spec.chief or spec.worker must have replicas > 0"),
    ("chief_and_worker_with_zero_replicas", lambda j: (j["spec"]["chief"].update(replicas=0), j["spec"]["worker"].update(replicas=0)),
     "spec: at least one of spec.chief or spec.worker must have replicas > 0"),
    ("chief_replicas_2", lambda j: j["spec"]["chief"].update(replicas=2),
     "spec.chief.replicas: 2 is above the maximum of 1 (a job has at most one chief)"),
    ("evaluator_replicas_3", lambda j: j["spec"].update(evaluator={"replicas": 3, "template": j["spec"]["ps"]["template"]}),
     "spec.evaluator.replicas: 3 is above the maximum of 1 (a job has at most one evaluator)"),
    ("negative_replicas", lambda j: j["spec"]["worker"].update(replicas=-1),
     "spec.worker.replicas: -1 is below the minimum of 0"),
    ("replicas_as_string", lambda j: j["spec"]["worker"].update(replicas="4"),
     "spec.worker.replicas: must be of type integer, got string ('4')"),
    ("replicas_as_float", lambda j: j["spec"]["worker"].update(replicas=1.5),
     "spec.worker.replicas: must be of type integer, got number (1.5)"),
    ("unknown_restart_policy", lambda j: j["spec"]["worker"].update(restartPolicy="Sometimes"),
     "spec.worker.restartPolicy: 'Sometimes' is not allowed; must be one of 'Never', 'OnFailure', 'Always', 'ExitCode'"),
    ("unknown_clean_pod_policy", lambda j: j["spec"].update(cleanPodPolicy="Some"),
     "spec.cleanPodPolicy: 'Some' is not allowed; must be one of 'None', 'All', 'Running'"),
    ("unknown_success_policy", lambda j: j["spec"].update(successPolicy="AnyWorker"),
     "spec.successPolicy: 'AnyWorker' is not allowed; must be one of '', 'AllWorkers'"),
    ("unknown_restart_scope", lambda j: j["spec"].update(restartScope="Job"),
     "spec.restartScope: 'Job' is not allowed; must be one of 'Pod', 'All'"),
    ("name_too_long_for_longest_pod_name", lambda j: j["metadata"].update(name="a" * 55),
     "metadata.name: is too long: the pod name '" + "a" * 55 + "-worker-3' has 64 characters"),
    ("name_not_dns_1035", lambda j: j["metadata"].update(name="1mnist"),
     "metadata.name: '1mnist' must be a DNS-1035 label"),
    ("no_containers", lambda j: j["spec"]["worker"]["template"]["spec"].update(containers=[]),
     "spec.worker.template.spec.containers: needs at least 1 item(s)"),
    ("container_without_image", lambda j: j["spec"]["ps"]["template"]["spec"]["containers"][0].pop("image"),
     "spec.ps.template.spec.containers[0].image: required field is missing"),
    ("container_with_empty_image", lambda j: j["spec"]["ps"]["template"]["spec"]["containers"][0].update(image=""),
     "spec.ps.template.spec.containers[0].image: must not be empty"),
    ("unknown_field_in_spec", lambda j: j["spec"].update(workers={"replicas": 2}),
     "spec.workers: unknown field; allowed here: activeDeadlineSeconds"),
    ("typo_in_pod_template", lambda j: j["spec"]["worker"]["template"]["spec"]["containers"][0].update(imagee="tf"),
     "spec.worker.template.spec.containers[0].imagee: unknown field"),
    ("template_missing", lambda j: j["spec"]["worker"].pop("template"),
     "spec.worker.template: required field is missing"),
    ("negative_ttl", lambda j: j["spec"].update(ttlSecondsAfterFinished=-5),
     "spec.ttlSecondsAfterFinished: -5 is below the minimum of 0"),
    ("zero_active_deadline", lambda j: j["spec"].update(activeDeadlineSeconds=0),
     "spec.activeDeadlineSeconds: 0 is below the minimum of 1"),
    ("suspend_as_string", lambda j: j["spec"].update(suspend="yes"),
     "spec.suspend: must be of type boolean, got string ('yes')"),
    ("wrong_kind", lambda j: j.update(kind="TFJob"), "kind: must be 'TensorFlowJob', got 'TFJob'"),
    ("wrong_api_version", lambda j: j.update(apiVersion="kubeflow.org/v2"),
     "apiVersion: must be 'kubeflow.org/v1', got 'kubeflow.org/v2'"),
    ("missing_name", lambda j: j["metadata"].pop("name"), "metadata.name: required: the job needs a name"),
    ("tfjob_port_out_of_range", lambda j: j["spec"]["worker"]["template"]["spec"]["containers"][0].update(
        ports=[{"name": "tfjob-port", "containerPort": 70000}]),
     "spec.worker.template.spec.containers: tfjob-port 70000 is not a valid port (1-65535)"),
    ("all_workers_policy_without_workers", lambda j: (j["spec"].pop("worker"), j["spec"].update(successPolicy="AllWorkers")),
     "spec.successPolicy: AllWorkers needs spec.worker with replicas > 0"),
    ("containers_not_a_list", lambda j: j["spec"]["worker"]["template"]["spec"].update(containers={"name": "x"}),
     "spec.worker.template.spec.containers: must be of type array, got object"),
]


@pytest.mark.parametrize(("change", "expected"), [(c, e) for _, c, e in INVALID], ids=[i for i, _, _ in INVALID])
def test_invalid_job_gets_a_message_naming_the_field(change: Any, expected: str) -> None:
    found = messages(mutated(change))
    assert any(m.startswith(expected) for m in found), found


def test_non_mapping_document_is_reported_not_crashed() -> None:
    assert messages(["a", "list"]) == ["a TensorFlowJob must be a mapping, got array"]


def test_every_problem_is_reported_not_just_the_first() -> None:
    def two(job: dict[str, Any]) -> None:
        job["spec"]["chief"]["replicas"] = 2
        job["spec"]["worker"]["restartPolicy"] = "Sometimes"
    assert len(messages(mutated(two))) == 2


def test_the_status_is_not_validated() -> None:
    job = valid_job()
    assert validate_job({**job, "status": {"conditions": [{"type": "Created", "status": "True"}]}}) == []
    assert validate_job({**job, "status": {"state": "Running", "unexpected": ["anything"]}}) == []
