"""The tools of the people who train, end to end on the local cluster with the operator running:
the `kubectl tfjob` plugin (as a process, and through the real kubectl), the Python client
(`tfjobs.TfJobClient`), and the pipeline examples (Argo's resource template conditions, the Kubeflow
Pipelines step) against real job statuses.

A data scientist's loop is submit → watch it start → read the logs of all its pods → wait for the
end → try again; each test is one step of it, checked as the user sees it (lines, exit statuses).
Simulated pods run until told to exit (`TfJobs.exit_pod`) or exit by annotation; their logs are
written by the devcluster's pod-logs agent. Every wait polls with a deadline.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kube import Kube, resource_path
from tests.support.jobs import DEVCLUSTER_IMAGE, SIM_EXIT_AFTER, SIM_EXIT_CODE, container, role
from tests.support.kinds import both_kinds
from tests.support.pipelines import PIPELINES, kfp_module
from tests.support.polling import wait_for
from tfjobs import JobFailed, Progress, TfJobClient, WaitTimeout
from tfjobs.selectors import Conditions

from .conftest import TfJobs

ROOT = Path(__file__).resolve().parents[3]
PLUGIN = Path(sys.executable).parent / "kubectl-tfjob"


def task_line(slot: str, role_name: str, index: int, sizes: str) -> str:
    return f"[{slot}] TF_CONFIG task: {role_name} {index} (cluster: {sizes})"


class Plugin:
    """Runs `kubectl-tfjob` against the test's namespace, as a user would."""

    def __init__(self, tfjobs: Any) -> None:
        self.tfjobs = tfjobs
        self.env = {**os.environ, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
        self.env.pop("KUBECONFIG", None)

    def argv(self, *args: str) -> list[str]:
        return [str(PLUGIN), *args, "-n", self.tfjobs.namespace, "--kubeconfig", str(self.tfjobs.cluster.kubeconfig)]

    def __call__(self, *args: str, timeout: float = 120.0, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self.argv(*args), capture_output=True, text=True, timeout=timeout, env=self.env,
                              input=stdin, check=False)

    def start(self, *args: str) -> Running:
        return Running(self.argv(*args), self.env)


class Running:
    """A plugin process still running (e.g. `logs -f`), its stdout collected line by line."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, predicate: Callable[[list[str]], bool], what: str, timeout: float = 60.0) -> None:
        wait_for(lambda: predicate(list(self.lines)), timeout, f"{what}; output so far: {self.lines}")

    def exit_status(self, timeout: float = 60.0) -> int:
        status = self.process.wait(timeout)
        self._reader.join(10)
        return status

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


@pytest.fixture
def plugin(tfjobs: Any) -> Plugin:
    return Plugin(tfjobs)


@pytest.fixture
def client(tfjobs: Any) -> Iterator[TfJobClient]:
    with TfJobClient.connect(str(tfjobs.cluster.kubeconfig), namespace=tfjobs.namespace) as connected:
        yield connected


def job_file(tmp_path: Path, name: str, spec: dict[str, Any]) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "kubeflow.org/v1", "kind": "TensorFlowJob",
                                    "metadata": {"name": name}, "spec": spec}))
    return path


def replaced(tfjobs: Any, job: str, pod: str, old_uid: str) -> bool:
    return any(p["metadata"]["name"] == pod and p["metadata"]["uid"] != old_uid
               and p["status"].get("phase") == "Running" for p in tfjobs.pods(job, include_terminating=False))


# ----------------------------------------------------------------------------- kubectl tfjob


def test_logs_follow_prefixes_every_pod_and_carries_on_across_a_recreated_pod(tfjobs: Any, api: Kube,
                                                                              plugin: Plugin) -> None:
    tfjobs.create("follow", chief=tfjobs.role(1), worker=tfjobs.role(2))
    tfjobs.wait_pods("follow", 3)
    sizes = "chief x1, worker x2"
    expected = {task_line("chief-0", "chief", 0, sizes), task_line("worker-0", "worker", 0, sizes),
                task_line("worker-1", "worker", 1, sizes)}
    follow = plugin.start("logs", "follow", "-f")
    try:
        follow.wait_for(lambda lines: expected <= set(lines), "every pod's TF_CONFIG line, prefixed")
        old = next(p for p in tfjobs.pods("follow") if p["metadata"]["name"] == "follow-worker-1")["metadata"]["uid"]

        api.delete(resource_path("", "v1", "pods", tfjobs.namespace, "follow-worker-1"))
        tfjobs.wait_for(lambda: replaced(tfjobs, "follow", "follow-worker-1", old), 60, "worker-1 recreated")

        follow.wait_for(lambda lines: lines.count(task_line("worker-1", "worker", 1, sizes)) == 2,
                        "the recreated worker-1's log under the same prefix")
        tfjobs.exit_pod("follow-chief-0", 0)
        assert follow.exit_status() == 0
    finally:
        follow.stop()
    assert "[chief-0] simulated container 'tensorflow' exited with code 0 (Completed)" in follow.lines


@both_kinds
def test_logs_without_follow_prints_every_pods_lines_in_time_order(tfjobs: Any, plugin: Plugin) -> None:
    tfjobs.create("once", worker=tfjobs.role(2, annotations={"sim.tensorflowjob.kubeflow.org/log": "epoch 1"}))
    tfjobs.wait_pods("once", 2)

    lines = wait_for(lambda: (out := plugin("logs", "once").stdout.splitlines()).count("[worker-1] epoch 1") and out,
                     60, "both workers' logs")

    assert lines.count("[worker-0] epoch 1") == 1
    assert plugin("logs", "once", "--role", "worker", "--index", "1", "--tail", "1").stdout == "[worker-1] epoch 1\n"


@both_kinds
def test_wait_exits_0_when_the_job_succeeds(tfjobs: Any, plugin: Plugin, job_kind: str) -> None:
    tfjobs.create("fine", worker=tfjobs.role(1, exit_code=0, exit_after="1s"))

    done = plugin("wait", "fine", "--timeout", "90s")

    assert (done.returncode, done.stdout) == (0, f"{job_kind.lower()}.kubeflow.org/fine condition met\n")
    assert "fine  Succeeded" in done.stderr  # the last progress line


@both_kinds
def test_wait_exits_1_when_the_job_fails(tfjobs: Any, plugin: Plugin, job_kind: str) -> None:
    tfjobs.create("broken", worker=tfjobs.role(1, policy="Never", exit_code=1, exit_after="1s"))

    done = plugin("wait", "broken", "--timeout", "90s")

    assert done.returncode == 1
    assert f'error: {job_kind.lower()} "broken" ended Failed (ReplicaFailed' in done.stderr


def test_wait_exits_2_when_it_times_out(tfjobs: Any, plugin: Plugin) -> None:
    tfjobs.create("slow", worker=tfjobs.role(1))

    done = plugin("wait", "slow", "--timeout", "2s")

    assert done.returncode == 2
    assert done.stderr.endswith("error: timed out waiting for the condition on tensorflowjobs/slow\n")


def test_wait_for_running_exits_0_once_every_pod_runs(tfjobs: Any, plugin: Plugin) -> None:
    tfjobs.create("starts", ps=tfjobs.role(1), worker=tfjobs.role(2))

    done = plugin("wait", "starts", "--for", "Running", "--timeout", "90s")

    assert done.returncode == 0
    assert tfjobs.status("starts")["state"] == "Running"


@both_kinds
def test_describe_names_the_missing_pvc_of_a_pending_pod(tfjobs: Any, plugin: Plugin) -> None:
    with_volume = container(DEVCLUSTER_IMAGE, volumeMounts=[{"name": "data", "mountPath": "/data"}])
    tfjobs.create("needs-data", worker=role(1, containers=[with_volume], volumes=[
        {"name": "data", "persistentVolumeClaim": {"claimName": "training-data"}}]))
    tfjobs.wait_pods("needs-data", 1, phase="Pending")

    text = wait_for(lambda: (out := plugin("describe", "needs-data").stdout) and "FailedScheduling" in out and out,
                    60, "the scheduler's verdict in describe")

    problems = text[text.index("Problems:"):text.index("Events:")]
    assert "worker-0 (needs-data-worker-0, Pending): Unschedulable:" in problems
    assert 'persistentvolumeclaim "training-data" not found' in problems


def test_submit_set_changes_the_replicas(tfjobs: Any, plugin: Plugin, tmp_path: Path) -> None:
    path = job_file(tmp_path, "resized", {"worker": tfjobs.role(1)})

    done = plugin("submit", "-f", str(path), "--set", "worker.replicas=3")

    assert (done.returncode, done.stdout) == (0, "tensorflowjob.kubeflow.org/resized created\n")
    assert tfjobs.get("resized")["spec"]["worker"]["replicas"] == 3
    tfjobs.wait_pods("resized", 3)


def test_submit_of_an_example_creates_its_configmap_then_its_job(tfjobs: Any, api: Kube, plugin: Plugin) -> None:
    example = ROOT / "manifests" / "examples" / "allreduce.yaml"
    config_map = resource_path("", "v1", "configmaps", tfjobs.namespace, "mnist-allreduce-code")

    done = plugin("submit", "-f", str(example))

    assert done.returncode == 0, done.stderr
    assert done.stdout == ("configmap/mnist-allreduce-code created\n"
                           "tensorflowjob.kubeflow.org/mnist-allreduce created\n")
    assert "train.py" in api.get(config_map)["data"]
    assert tfjobs.get("mnist-allreduce")["spec"]["worker"]["replicas"] == 2

    edited = example.read_text().replace('"""All-reduce training', '"""Edited all-reduce training', 1)
    again = plugin("submit", "-f", "-", "--name", "mnist-allreduce-2", stdin=edited)

    assert again.returncode == 0, again.stderr
    assert again.stdout == ("configmap/mnist-allreduce-code replaced\n"
                            "tensorflowjob.kubeflow.org/mnist-allreduce-2 created\n")
    assert "Edited all-reduce training" in api.get(config_map)["data"]["train.py"]


def test_submit_with_logs_streams_the_run_and_exits_with_its_outcome(tfjobs: Any, plugin: Plugin,
                                                                     tmp_path: Path) -> None:
    spec = {"chief": tfjobs.role(1, exit_code=0, exit_after="2s",
                                 annotations={"sim.tensorflowjob.kubeflow.org/log": "accuracy=0.98"}),
            "worker": tfjobs.role(1)}
    path = job_file(tmp_path, "attempt", spec)

    done = plugin("submit", "-f", str(path), "--name", "attempt-2", "--logs", "--timeout", "90s")

    lines = done.stdout.splitlines()
    assert done.returncode == 0, done.stderr
    assert lines[0] == "tensorflowjob.kubeflow.org/attempt-2 created"
    assert "[chief-0] accuracy=0.98" in lines
    assert task_line("worker-0", "worker", 0, "chief x1, worker x1") in lines
    assert lines[-1] == "tensorflowjob.kubeflow.org/attempt-2 condition met"


@both_kinds
def test_scale_and_delete_change_the_job(tfjobs: Any, plugin: Plugin, job_kind: str) -> None:
    tfjobs.create("resize", worker=tfjobs.role(1))

    assert plugin("scale", "resize", "--replicas", "2").stdout == f"{job_kind.lower()}.kubeflow.org/resize scaled\n"
    assert wait_for(lambda: len(tfjobs.pods("resize")) == 2, 60, "the second worker")  # the operator read the new spec

    deleted = plugin("delete", "resize")
    assert (deleted.returncode, deleted.stdout) == (0, f'{job_kind.lower()}.kubeflow.org "resize" deleted\n')
    assert tfjobs.get("resize") is None


def test_get_lists_both_kinds_and_a_shared_name_needs_its_kind(kubeflow_tfjobs: Any) -> None:
    plugin = Plugin(kubeflow_tfjobs)  # (the plugin fixture's `tfjobs` would set the cluster back to one kind)
    tensorflowjobs = TfJobs(kubeflow_tfjobs.api, kubeflow_tfjobs.namespace, kubeflow_tfjobs.cluster)
    tensorflowjobs.create("twin", worker=tensorflowjobs.role(1))
    kubeflow_tfjobs.create("twin", worker=kubeflow_tfjobs.role(2))
    kubeflow_tfjobs.create("solo", worker=kubeflow_tfjobs.role(1))

    listed = plugin("get").stdout.splitlines()
    ambiguous = plugin("get", "twin")
    chosen = plugin("get", "twin", "--kind", "TFJob", "-o", "name")

    assert listed[0].split()[:3] == ["NAME", "KIND", "STATE"]
    assert [line.split()[:2] for line in listed[1:]] == [["solo", "TFJob"], ["twin", "TFJob"], ["twin", "TensorFlowJob"]]
    assert ambiguous.returncode == 1 and "both named \"twin\"" in ambiguous.stderr and "--kind" in ambiguous.stderr
    assert chosen.stdout == "tfjob.kubeflow.org/twin\n"
    assert plugin("get", "solo", "-o", "name").stdout == "tfjob.kubeflow.org/solo\n"


def test_kubectl_finds_the_plugin_and_runs_it(tfjobs: Any, plugin: Plugin) -> None:
    tfjobs.create("listed", worker=tfjobs.role(1))
    kubectl = str(tfjobs.cluster.bin_dir / "kubectl")
    env = {**plugin.env, "PATH": f"{PLUGIN.parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "KUBECONFIG": str(tfjobs.cluster.kubeconfig)}

    listed = subprocess.run([kubectl, "plugin", "list"], capture_output=True, text=True, env=env, timeout=60,
                            check=False)
    got = subprocess.run([kubectl, "tfjob", "get", "listed", "-n", tfjobs.namespace], capture_output=True, text=True,
                         env=env, timeout=60, check=False)

    assert str(PLUGIN) in listed.stdout.splitlines()
    assert got.returncode == 0, got.stderr
    rows = [line.split() for line in got.stdout.splitlines()]
    assert rows[0] == ["NAME", "STATE", "WORKERS", "PS", "RESTARTS", "PROGRESS", "ETA", "AGE"]
    assert rows[1][0] == "listed"


# ----------------------------------------------------------------------------- the Python client


def test_client_creates_from_yaml_with_overrides_and_waits_until_running(tfjobs: Any, client: TfJobClient) -> None:
    text = yaml.safe_dump({"apiVersion": "kubeflow.org/v1", "kind": "TensorFlowJob",
                           "metadata": {"generateName": "notebook-"}, "spec": {"worker": tfjobs.role(1)}})
    seen: list[Progress] = []

    job = client.create_from_yaml(text, overrides={"worker.replicas": 2})
    name = job["metadata"]["name"]
    running = client.wait_for(name, "Running", timeout=90, on_progress=seen.append)

    assert name.startswith("notebook-") and running["status"]["state"] == "Running"
    assert seen[-1].roles[0].role == "worker" and seen[-1].roles[0].running == 2
    assert [p["metadata"]["name"] for p in client.pods(name)] == [f"{name}-worker-0", f"{name}-worker-1"]


@both_kinds
def test_client_follows_logs_across_a_recreated_pod_until_the_job_ends(tfjobs: Any, api: Kube,
                                                                       client: TfJobClient) -> None:
    tfjobs.create("notebook", chief=tfjobs.role(1), worker=tfjobs.role(1))
    tfjobs.wait_pods("notebook", 2)
    sizes = "chief x1, worker x1"
    lines: list[str] = []
    old = next(p for p in tfjobs.pods("notebook") if p["metadata"]["name"] == "notebook-worker-0")["metadata"]["uid"]

    for line in client.logs("notebook", follow=True):
        lines.append(f"[{line.prefix}] {line.text}")
        if lines[-1] == task_line("worker-0", "worker", 0, sizes) and lines.count(lines[-1]) == 1:
            api.delete(resource_path("", "v1", "pods", tfjobs.namespace, "notebook-worker-0"))
        elif lines[-1] == task_line("worker-0", "worker", 0, sizes):
            assert replaced(tfjobs, "notebook", "notebook-worker-0", old)
            tfjobs.exit_pod("notebook-chief-0", 0)

    assert lines.count(task_line("worker-0", "worker", 0, sizes)) == 2
    assert lines[-1] == "[chief-0] simulated container 'tensorflow' exited with code 0 (Completed)"
    assert client.state("notebook") == "Succeeded"


@both_kinds
def test_client_wait_for_raises_job_failed_when_the_job_fails(tfjobs: Any, client: TfJobClient) -> None:
    tfjobs.create("doomed", worker=tfjobs.role(1, policy="Never", exit_code=2, exit_after="1s"))

    with pytest.raises(JobFailed) as failed:
        client.wait_for("doomed", timeout=90)

    assert failed.value.state == "Failed" and "ReplicaFailed" in failed.value.reason


def test_client_wait_for_raises_wait_timeout(tfjobs: Any, client: TfJobClient) -> None:
    tfjobs.create("patience", worker=tfjobs.role(1))

    with pytest.raises(WaitTimeout):
        client.wait_for("patience", "Succeeded", timeout=2)


# ----------------------------------------------------------------------------- pipelines


def argo_template() -> dict[str, Any]:
    workflow = yaml.safe_load((PIPELINES / "argo-workflow.yaml").read_text())
    return next(t for t in workflow["spec"]["templates"] if t["name"] == "train")


def kfp_constants() -> dict[str, str]:
    tree = ast.parse((PIPELINES / "kfp_pipeline.py").read_text())
    return {node.targets[0].id: node.value.value for node in tree.body
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)}


def argo_job(name: str, chief_exit: int, namespace: str) -> dict[str, Any]:
    """The TensorFlowJob of the Argo template, its parameters filled in as Argo would, with a chief
    that exits with `chief_exit` on the simulated nodes."""
    text = argo_template()["resource"]["manifest"].replace("{{workflow.parameters.workers}}", "1")
    text = text.replace("{{workflow.parameters.code}}", "mnist-code")
    job = yaml.safe_load(text.replace("{{workflow.parameters.image}}", DEVCLUSTER_IMAGE))
    job["metadata"] = {"name": name, "namespace": namespace}
    job["spec"]["chief"]["template"]["metadata"] = {"annotations": {SIM_EXIT_CODE: str(chief_exit),
                                                                    SIM_EXIT_AFTER: "3s"}}
    return job


def test_the_pipeline_conditions_tell_success_from_failure_on_real_jobs(tfjobs: Any, api: Kube) -> None:
    template, constants = argo_template()["resource"], kfp_constants()
    argo = Conditions.parse(template["successCondition"], template["failureCondition"])
    kfp = Conditions.parse(constants["SUCCESS_CONDITION"], constants["FAILURE_CONDITION"])
    api.create(tfjobs.path(), argo_job("argo-ok", 0, tfjobs.namespace))
    api.create(tfjobs.path(), argo_job("argo-bad", 1, tfjobs.namespace))  # ExitCode chief: 1 fails the job

    running = wait_for(lambda: (job := tfjobs.get("argo-ok")) and (job.get("status") or {}).get("state") == "Running"
                       and job, 60, "argo-ok Running")
    tfjobs.wait_condition("argo-ok", "Succeeded")
    tfjobs.wait_condition("argo-bad", "Failed")
    succeeded, failed = tfjobs.get("argo-ok"), tfjobs.get("argo-bad")

    for conditions in (argo, kfp):
        assert conditions.outcome(running) is None  # still waiting
        assert conditions.outcome(succeeded) == "succeeded"
        assert conditions.outcome(failed) == "failed"


def test_the_kfp_step_submits_the_job_and_returns_its_name_once_it_succeeds(tfjobs: Any,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    module = kfp_module()
    manifest = yaml.safe_load(module.MNIST_JOB)
    manifest["spec"]["chief"]["template"]["metadata"] = {"annotations": {SIM_EXIT_CODE: "0", SIM_EXIT_AFTER: "2s"}}
    monkeypatch.setenv("KUBECONFIG", str(tfjobs.cluster.kubeconfig))

    name = module.train_step(yaml.safe_dump(manifest), workers=1, timeout="90s", namespace=tfjobs.namespace)

    assert name.startswith("mnist-")
    assert tfjobs.status(name)["state"] == "Succeeded"


def test_the_kfp_step_fails_when_the_job_fails(tfjobs: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    module = kfp_module()
    manifest = yaml.safe_load(module.MNIST_JOB)
    manifest["spec"]["chief"]["template"]["metadata"] = {"annotations": {SIM_EXIT_CODE: "1", SIM_EXIT_AFTER: "1s"}}
    monkeypatch.setenv("KUBECONFIG", str(tfjobs.cluster.kubeconfig))

    with pytest.raises(JobFailed, match=r"matched the failure condition status\.state==Failed"):
        module.train_step(yaml.safe_dump(manifest), workers=1, timeout="90s", namespace=tfjobs.namespace,
                          follow_logs=False)
