"""The Kubeflow Pipelines step of manifests/examples/pipelines/kfp_pipeline.py, run as the plain
function it is against the local cluster with the operator running: its one deadline over
creation, waiting and log following, and how promptly it ends when its job fails.

Every case follows the logs (the step's default), since following them is what used to outlive
the step's timeout. Durations are measured around the call; the bounds leave room for a busy
two-core machine but stay far below the step's timeout where the step must not wait for it.
"""

from __future__ import annotations

import re
import time
from types import ModuleType
from typing import Any

import pytest
import yaml

from tests.support.jobs import SIM_EXIT_AFTER, SIM_EXIT_CODE
from tests.support.pipelines import kfp_module
from tfjobs import JobFailed

PROMPT = 60.0  # seconds: far below the 10-minute timeouts of the cases that must not reach theirs


@pytest.fixture
def step(tfjobs: Any, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.setenv("KUBECONFIG", str(tfjobs.cluster.kubeconfig))
    return kfp_module()


def mnist(module: ModuleType, *, chief: dict[str, Any] | None = None, worker: dict[str, Any] | None = None,
          pod_spec: dict[str, Any] | None = None) -> str:
    """The example's job, its chief's and workers' pod templates given these annotations and pod spec fields."""
    job = yaml.safe_load(module.MNIST_JOB)
    for role, notes in (("chief", chief), ("worker", worker)):
        template = job["spec"][role]["template"]
        if notes:
            template["metadata"] = {"annotations": notes}
        template["spec"].update(pod_spec or {})
    return str(yaml.safe_dump(job))


def timed(call: Any) -> tuple[BaseException, float]:
    started = time.monotonic()
    with pytest.raises(Exception) as raised:
        call()
    return raised.value, time.monotonic() - started


def test_a_job_that_never_starts_ends_the_step_at_its_deadline_and_is_deleted(tfjobs: Any, step: ModuleType) -> None:
    nowhere = mnist(step, pod_spec={"nodeSelector": {"tfjob-test/no-such-node": "true"}})

    error, took = timed(lambda: step.train_step(nowhere, workers=1, timeout="10s", namespace=tfjobs.namespace))

    assert isinstance(error, TimeoutError), repr(error)
    assert 10.0 <= took < 10.0 + 20.0
    message = str(error)
    found = re.match(rf"TensorFlowJob {tfjobs.namespace}/(mnist-\w+) did not meet 'status\.state == Succeeded' "
                     r"within the step's timeout of 10s: it is Pending \((.*)\); deleted TensorFlowJob ", message)
    assert found, message
    assert "Unschedulable" in found.group(2)
    assert tfjobs.get(found.group(1)) is None


def test_a_job_that_fails_ends_the_step_promptly_with_the_failure_and_its_logs(
        tfjobs: Any, step: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    failing = mnist(step, chief={SIM_EXIT_CODE: "1", SIM_EXIT_AFTER: "2s"})

    error, took = timed(lambda: step.train_step(failing, workers=1, timeout="10m", namespace=tfjobs.namespace))

    assert isinstance(error, JobFailed), repr(error)
    assert took < PROMPT
    assert "matched the failure condition status.state==Failed" in str(error)
    name = error.job["metadata"]["name"]
    assert tfjobs.status(name)["state"] == "Failed"  # finished: kept for its TTL, not deleted
    printed = capsys.readouterr().out.splitlines()
    assert "[chief-0] simulated container 'tensorflow' exited with code 1 (Error)" in printed


def test_a_failure_condition_met_while_the_job_runs_ends_the_step_promptly_and_deletes_the_job(
        tfjobs: Any, step: ModuleType) -> None:
    restarting = mnist(step, worker={SIM_EXIT_CODE: "1", SIM_EXIT_AFTER: "2s"})  # OnFailure: retried, still runs

    error, took = timed(lambda: step.train_step(restarting, workers=1, timeout="10m", namespace=tfjobs.namespace,
                                                failure_condition="status.restartCount > 0"))

    assert isinstance(error, JobFailed), repr(error)
    assert took < PROMPT
    assert error.state not in ("Succeeded", "Failed")
    assert tfjobs.get(error.job["metadata"]["name"]) is None
