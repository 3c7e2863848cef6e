"""TFJobs driven by Kubeflow's own Python SDK (`kubeflow-training` 1.9, `TrainingClient(job_kind=
"TFJob")`), its calls unchanged: create, get, list, wait for Running then Succeeded, is_job_succeeded /
is_job_failed, pod names by role and index, scale the workers with update_job, delete.

The SDK pins `kubernetes<36` and the operator 36.0.3, so it is never a dependency of the operator: it
lives in a venv of its own, cached outside the repository (created here on first use, from PyPI), and
`sdk_driver.py` runs in it as a subprocess."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
from typing import Any

import pytest

from tests.support.locks import exclusive
from tests.support.polling import wait_for

SDK_VERSION = "kubeflow-training==1.9.*"
VENV = pathlib.Path(os.environ.get("TFJOB_KUBEFLOW_SDK_VENV",
                                   pathlib.Path.home() / ".cache" / "tfjob-operator" / "kubeflow-sdk-venv"))
DRIVER = pathlib.Path(__file__).with_name("sdk_driver.py")


@pytest.fixture(scope="session")
def sdk_python() -> pathlib.Path:
    python = VENV / "bin" / "python"
    marker = VENV / ".installed"
    with exclusive(VENV.with_name(VENV.name + ".lock")):  # parallel workers: one creates it
        if not marker.exists() or marker.read_text() != SDK_VERSION:
            subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], check=True)
            subprocess.run([str(python), "-m", "pip", "install", "--quiet", SDK_VERSION], check=True, timeout=600)
            marker.write_text(SDK_VERSION)
    return python


class Sdk:
    def __init__(self, python: pathlib.Path, kubeconfig: str, namespace: str) -> None:
        self.python, self.kubeconfig, self.namespace = python, kubeconfig, namespace

    def __call__(self, action: str, name: str, argument: str = "") -> Any:
        done = subprocess.run([str(self.python), str(DRIVER), self.kubeconfig, self.namespace, action, name, argument],
                              capture_output=True, text=True, timeout=180,
                              env={**os.environ, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"})
        assert done.returncode == 0, f"sdk {action} {name}: {done.stderr[-3000:]}"
        return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture
def sdk(sdk_python: pathlib.Path, kubeflow_tfjobs: Any) -> Sdk:
    return Sdk(sdk_python, str(kubeflow_tfjobs.cluster.kubeconfig), kubeflow_tfjobs.namespace)


def test_the_sdk_creates_a_tfjob_and_waits_for_running_then_succeeded(sdk: Sdk) -> None:
    assert sdk("create", "sdk-mnist", "2:30") == "created"
    assert "Running" in sdk("wait", "sdk-mnist", "Running")
    assert sdk("succeeded", "sdk-mnist") is False
    assert "Succeeded" in sdk("wait", "sdk-mnist", "Succeeded")
    assert sdk("succeeded", "sdk-mnist") is True
    assert sdk("failed", "sdk-mnist") is False


def test_the_sdk_gets_lists_and_finds_pods_by_role_and_index(sdk: Sdk) -> None:
    sdk("create", "sdk-pods", "3")
    sdk("wait", "sdk-pods", "Running")
    assert sdk("get", "sdk-pods") == {"name": "sdk-pods", "conditions": ["Created", "Running"], "workers": 3}
    assert sdk("list", "") == ["sdk-pods"]
    assert sdk("pod-names", "sdk-pods", "master") == ["sdk-pods-worker-0"]
    assert sdk("pod-names", "sdk-pods", "Worker:2") == ["sdk-pods-worker-2"]
    assert sorted(sdk("pod-names", "sdk-pods", "Worker")) == [f"sdk-pods-worker-{i}" for i in range(3)]


def test_the_sdk_scales_the_workers_and_deletes_the_tfjob(sdk: Sdk, kubeflow_tfjobs: Any) -> None:
    sdk("create", "sdk-scale", "2")
    sdk("wait", "sdk-scale", "Running")
    assert sdk("scale", "sdk-scale", "4") == "updated"
    kubeflow_tfjobs.wait_pods("sdk-scale", 4, timeout=60)
    wait_for(lambda: sdk("get", "sdk-scale")["workers"] == 4, 30, "the SDK to read 4 workers")
    assert sdk("delete", "sdk-scale") == "deleted"
    kubeflow_tfjobs.wait_for(lambda: kubeflow_tfjobs.get("sdk-scale") is None, 30, "the TFJob to be deleted")
