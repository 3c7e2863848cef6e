"""The Argo example (manifests/examples/pipelines/argo-workflow.yaml) run by Argo's real workflow
controller on a real node: the workflow succeeds when its TensorFlowJob succeeds and fails when the
job fails, the job's logs stay reachable from the step's output either way, and deleting the workflow
deletes the job and its pods, as the example says.

The workflow is submitted with Argo's own CLI, as its comment shows, with only its parameters set:
one worker, the training program's ConfigMap, and for the report step an image the project builds
(the TensorFlow image; the example's default `busybox:1.37` cannot be pulled offline). Its RBAC is
the example's rbac.yaml, unchanged. Argo's controller, executor and CLI are built from their Go
module (hack/build-argo.sh, devcluster/argo.py, the executor image by devcluster/images.py), so this
is a `tools` test: `make test-tools` runs it, `make test` does not.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devcluster.argo import ArgoWorkflows
from devcluster.cluster import Cluster
from devcluster.image_spec import TENSORFLOW_NAME
from devcluster.images import build_images
from tests.real.costs import record
from tests.real.follow import PLUGIN
from tests.real.kubectl import Kubectl, wait_for
from tests.support.operator import Operator

pytestmark = pytest.mark.tools  # Argo's controller, executor and CLI are built from their Go module

ROOT = Path(__file__).resolve().parents[2]
PIPELINES = ROOT / "manifests" / "examples" / "pipelines"
PROGRAM = Path(__file__).resolve().parent / "programs" / "keras_train.py"
FAILING_PROGRAM = 'import sys\nprint("GIVING UP on purpose", flush=True)\nsys.exit(3)\n'  # ExitCode chief: 3 fails the job
WORKFLOW_TIMEOUT = 900.0  # seconds: two TensorFlow pods start and train on two busy cores


@pytest.fixture(scope="module")
def argo(real_cluster: Cluster) -> Iterator[ArgoWorkflows]:
    """Argo's workflow controller against the real-node cluster, its executor image on the node."""
    started = time.monotonic()
    real_cluster.load_images(build_images(which=("argoexec",)).values())
    controller = ArgoWorkflows(real_cluster)
    controller.start()
    record("Argo: executor image built or reused and imported, CRDs installed, controller started",
           time.monotonic() - started)
    yield controller
    controller.stop()


class Argo:
    """Argo's CLI against the real-node cluster, in the test's namespace."""

    def __init__(self, controller: ArgoWorkflows, cluster: Cluster, namespace: str) -> None:
        self.binary, self.namespace = str(controller.cli), namespace
        self.env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig), "ARGO_NAMESPACE": namespace,
                    "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
        self.env.pop("ARGO_SERVER", None)  # straight to the API server, no Argo Server

    def __call__(self, *args: str) -> str:
        done = subprocess.run([self.binary, *args, "-n", self.namespace], capture_output=True, text=True,
                              env=self.env, timeout=120, check=False)
        assert done.returncode == 0, f"argo {' '.join(args)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        return done.stdout


@pytest.fixture
def argo_cli(argo: ArgoWorkflows, real_cluster: Cluster, operator: Operator, kubectl: Kubectl) -> Argo:
    """The CLI in a namespace holding the example's RBAC."""
    kubectl("apply", "-f", str(PIPELINES / "rbac.yaml"))
    return Argo(argo, real_cluster, kubectl.namespace)


def provide_program(kubectl: Kubectl, name: str, program: str) -> None:
    kubectl("create", "configmap", name, "--from-file=train.py=/dev/stdin", input=program)


def submit(argo: Argo, code: str) -> str:
    """`argo submit` the example unchanged but for its parameters; the workflow's name."""
    return argo("submit", str(PIPELINES / "argo-workflow.yaml"), "-p", "workers=1", "-p", f"code={code}",
                "-p", f"report-image={TENSORFLOW_NAME}", "-o", "name").strip()


def finished(kubectl: Kubectl, workflow: str) -> dict[str, Any] | None:
    found = kubectl.json("workflow", workflow)
    phase = (found.get("status") or {}).get("phase")
    return found if phase in ("Succeeded", "Failed", "Error") else None


def step(workflow: dict[str, Any], name: str) -> dict[str, Any] | None:
    """The status node of the step `name` (train or report), None if it never ran."""
    return next((node for node in workflow["status"].get("nodes", {}).values() if node.get("displayName") == name),
                None)


def output(node: dict[str, Any], name: str) -> str:
    return next(p["value"] for p in (node.get("outputs") or {}).get("parameters") or [] if p["name"] == name)


def job_logs(cluster: Cluster, namespace: str, job: str) -> str:
    """`kubectl tfjob logs JOB`, as the report step tells the user to run it."""
    done = subprocess.run([str(PLUGIN), "logs", job, "-n", namespace, f"--kubeconfig={cluster.kubeconfig}"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def run_workflow(argo: Argo, kubectl: Kubectl, code: str) -> dict[str, Any]:
    started = time.monotonic()
    name = submit(argo, code)
    workflow = wait_for(lambda: finished(kubectl, name), WORKFLOW_TIMEOUT, f"workflow {name} to finish")
    record(f"Argo workflow with a TensorFlowJob: submitted to {workflow['status']['phase']}", time.monotonic() - started)
    return workflow


def assert_deleting_the_workflow_deletes_the_job(kubectl: Kubectl, workflow: str, job: str) -> None:
    assert kubectl.pods(job), f"{job} kept no pod, so nothing is left to read its logs from"
    kubectl("delete", "workflow", workflow, "--wait=true")
    wait_for(lambda: kubectl("get", "tensorflowjob", job, check=False).returncode != 0 and not kubectl.pods(job),
             120, f"{job} and its pods deleted with workflow {workflow}")


def test_the_argo_workflow_succeeds_when_its_job_succeeds_and_the_logs_stay_readable(
        argo_cli: Argo, kubectl: Kubectl, real_cluster: Cluster) -> None:
    provide_program(kubectl, "mnist-code", PROGRAM.read_text())

    workflow = run_workflow(argo_cli, kubectl, "mnist-code")

    name = workflow["metadata"]["name"]
    train, report = step(workflow, "train"), step(workflow, "report")
    assert workflow["status"]["phase"] == "Succeeded", json.dumps(workflow["status"], indent=1)[-4000:]
    assert train is not None and report is not None
    job = output(train, "job")
    assert job == name  # the example names the job after its workflow
    assert kubectl.state(job) == "Succeeded"
    assert f"TensorFlowJob {job} succeeded; its logs: kubectl tfjob logs -n {kubectl.namespace} {job}" in argo_cli(
        "logs", name)
    logs = job_logs(real_cluster, kubectl.namespace, job)
    assert "[chief-0] TASK chief/0 tensorflow 2.21.0" in logs and "[chief-0] TRAINING DONE" in logs, logs[-3000:]
    assert_deleting_the_workflow_deletes_the_job(kubectl, name, job)


def test_the_argo_workflow_fails_when_its_job_fails_and_the_logs_stay_readable(
        argo_cli: Argo, kubectl: Kubectl, real_cluster: Cluster) -> None:
    provide_program(kubectl, "failing-code", FAILING_PROGRAM)

    workflow = run_workflow(argo_cli, kubectl, "failing-code")

    name = workflow["metadata"]["name"]
    train = step(workflow, "train")
    assert workflow["status"]["phase"] == "Failed", json.dumps(workflow["status"], indent=1)[-4000:]
    assert train is not None and train["phase"] == "Failed"
    assert "failure condition" in train.get("message", "") and "evaluated true" in train["message"], train
    assert step(workflow, "report") is None
    job = name  # Argo saves no output of a failed resource step; the job is named after the workflow,
    assert f"tensorflowjob.kubeflow.org/{job}" in argo_cli("logs", name)  # and the step's log says so
    assert kubectl.state(job) == "Failed"
    assert "[chief-0] GIVING UP on purpose" in job_logs(real_cluster, kubectl.namespace, job)
    assert_deleting_the_workflow_deletes_the_job(kubectl, name, job)
