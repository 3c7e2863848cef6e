"""Unit tests of `kubectl tfjob` (tfjobs.cli): flags, output and exit statuses, with the client
replaced by a stub (the real plugin against the local cluster, through kubectl too, is in
tests/integration/controller/test_user_tools.py)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any
from unittest.mock import MagicMock

import pytest
import yaml
from pytest_mock import MockerFixture

from tests.support.jobs import make_job, pods_for
from tfjobs import cli
from tfjobs.client import JobFailed, JobNotFound, TfJobClient, WaitTimeout
from tfjobs.errors import ClusterApiError
from tfjobs.kinds import TENSORFLOWJOB
from tfjobs.progress import progress

EXAMPLE = Path(__file__).resolve().parents[3] / "manifests" / "examples" / "allreduce.yaml"


class Run:
    """One `kubectl tfjob` invocation against a stub client: its status, stdout and stderr."""

    def __init__(self, mocker: MockerFixture, tty: bool = False) -> None:
        self.client = MagicMock()
        self.client.namespace = "default"
        # A name's kind is found through get's stub (a TensorFlowJob unless a test says otherwise).
        self.client.find.side_effect = lambda name, **options: (TENSORFLOWJOB, self.client.get(name, **options))
        self.client.scale.side_effect = lambda name, replicas, **options: job_named(name)
        self.connect = mocker.patch.object(cli.TfJobClient, "connect", return_value=self.client)
        self.tty = tty

    def __call__(self, *argv: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        status = cli.main(list(argv), cli.Console(out, err, tty=self.tty))
        return status, out.getvalue(), err.getvalue()


@pytest.fixture
def run(mocker: MockerFixture) -> Run:
    return Run(mocker)


def job_named(name: str, state: str = "Running") -> dict[str, Any]:
    job = make_job(worker=2)
    job["metadata"].update(name=name, creationTimestamp="2030-01-01T00:00:00Z")
    job["status"] = {"state": state, "replicaStatuses": {"worker": {"active": 2}}}
    return job


def test_connection_flags_are_taken_before_and_after_the_subcommand(run: Run) -> None:
    run.client.get.return_value = job_named("a")

    run("--kubeconfig", "/k", "get", "a", "-n", "team", "--context", "c")

    run.connect.assert_called_once_with("/k", "c", "team")


def test_wait_exits_0_when_the_state_is_reached(run: Run) -> None:
    status, out, _ = run("wait", "mnist", "--for", "condition=running")

    assert status == 0 and out == "tensorflowjob.kubeflow.org/mnist condition met\n"
    assert run.client.wait_for.call_args.args == ("mnist", "Running")


def test_wait_exits_1_when_the_job_ended_otherwise(run: Run) -> None:
    run.client.wait_for.side_effect = JobFailed('tensorflowjob "mnist" ended Failed', job_named("mnist", "Failed"))

    status, out, err = run("wait", "mnist")

    assert status == 1 and out == ""
    assert err == 'error: tensorflowjob "mnist" ended Failed without reaching Succeeded\n'


def test_wait_exits_2_on_timeout(run: Run) -> None:
    run.client.wait_for.side_effect = WaitTimeout("timed out", None)

    status, _, err = run("wait", "mnist", "--timeout", "1m30s")

    assert status == 2 and err == "error: timed out waiting for the condition on tensorflowjobs/mnist\n"
    assert run.client.wait_for.call_args.kwargs["timeout"] == 90.0


def test_wait_shows_a_line_per_change_without_a_terminal(run: Run) -> None:
    job = job_named("mnist")

    def wait_for(name: str, state: str, **options: Any) -> dict[str, Any]:
        for waited in (1.0, 2.0):  # only the time changed: one line
            options["on_progress"](progress(job, pods_for(job), waited))
        options["on_progress"](progress(job_named("mnist", "Succeeded"), [], 3.0))
        return job

    run.client.wait_for.side_effect = wait_for

    _, _, err = run("wait", "mnist")

    assert err.splitlines() == ["mnist  Running  worker 2/2 running  restarts 0  1s",
                                "mnist  Succeeded  worker 0/2 running  restarts 0  3s"]


def test_wait_rewrites_one_line_on_a_terminal(mocker: MockerFixture) -> None:
    run = Run(mocker, tty=True)
    job = job_named("mnist")

    def wait_for(name: str, state: str, **options: Any) -> dict[str, Any]:
        for waited in (1.0, 2.0):
            options["on_progress"](progress(job, pods_for(job), waited))
        return job

    run.client.wait_for.side_effect = wait_for

    _, _, err = run("wait", "mnist")

    assert err.count("\r\x1b[2K") == 2 and err.endswith("2s\n") and err.count("\n") == 1


def test_an_unknown_state_is_a_usage_error(run: Run) -> None:
    status, _, err = run("wait", "mnist", "--for", "Done")

    assert status == 1 and "unknown state 'Done'" in err
    run.connect.assert_not_called()


def test_a_missing_job_is_reported_as_kubectl_does(run: Run) -> None:
    run.client.get.side_effect = JobNotFound('tensorflowjobs.kubeflow.org "x" not found in namespace default')

    status, _, err = run("describe", "x")

    assert status == 1
    assert err == 'Error from server (NotFound): tensorflowjobs.kubeflow.org "x" not found in namespace default\n'


def test_an_api_error_names_its_reason(run: Run) -> None:
    run.client.list.side_effect = ClusterApiError(403, "Forbidden", 'tensorflowjobs.kubeflow.org is forbidden: User "u"')

    status, _, err = run("get")

    assert status == 1 and err.startswith("Error from server (Forbidden): tensorflowjobs.kubeflow.org is forbidden")


def test_an_error_whose_text_ends_with_a_newline_is_still_one_line(run: Run) -> None:
    run.client.list.side_effect = ClusterApiError(502, "Bad Gateway", "upstream connect error\n")

    status, _, err = run("get")

    assert status == 1 and err == "Error from server (Bad Gateway): upstream connect error\n"


def test_an_error_while_waiting_on_a_terminal_starts_a_line_of_its_own(mocker: MockerFixture) -> None:
    run = Run(mocker, tty=True)
    job = job_named("mnist")

    def wait_for(name: str, state: str, **options: Any) -> dict[str, Any]:
        options["on_progress"](progress(job, pods_for(job), 1.0))
        raise ClusterApiError(403, "Forbidden", "pods is forbidden")

    run.client.wait_for.side_effect = wait_for

    status, _, err = run("wait", "mnist")

    assert status == 1 and err.endswith("1s\nError from server (Forbidden): pods is forbidden\n")


def test_an_unreachable_server_is_said_plainly(run: Run) -> None:
    run.client.list.side_effect = ClusterApiError(0, "NewConnectionError", "connection refused")

    status, _, err = run("get")

    assert status == 1 and err.startswith("error: cannot reach the API server: ")


def test_get_lists_the_jobs_in_columns(run: Run) -> None:
    run.client.list.return_value = [job_named("a"), job_named("b", "Succeeded")]

    status, out, _ = run("get")

    rows = [line.split() for line in out.splitlines()]
    assert status == 0
    assert rows[0] == ["NAME", "STATE", "WORKERS", "PS", "RESTARTS", "PROGRESS", "ETA", "AGE"]
    assert [r[:5] for r in rows[1:]] == [["a", "Running", "2", "<none>", "0"], ["b", "Succeeded", "2", "<none>", "0"]]


def test_get_of_one_job_as_json_prints_the_object(run: Run) -> None:
    run.client.get.return_value = job_named("a")

    _, out, _ = run("get", "a", "-o", "json")

    assert json.loads(out)["metadata"]["name"] == "a"


def test_an_empty_namespace_says_so_on_stderr(run: Run) -> None:
    run.client.list.return_value = []

    status, out, err = run("get")

    assert (status, out, err) == (0, "", "No resources found in default namespace.\n")


def test_scale_sets_the_replicas_of_the_role_given(run: Run) -> None:
    status, out, _ = run("scale", "mnist", "--replicas", "8", "--role", "ps")

    assert status == 0 and out == "tensorflowjob.kubeflow.org/mnist scaled\n"
    run.client.scale.assert_called_once_with("mnist", 8, role="ps", kind=None)


def test_delete_waits_by_default_and_not_with_wait_false(run: Run) -> None:
    run("delete", "a")
    run("delete", "b", "--wait=false")

    assert [c.kwargs["wait"] for c in run.client.delete.call_args_list] == [True, False]


def test_delete_of_a_missing_job_fails_unless_ignored(run: Run) -> None:
    run.client.delete.side_effect = JobNotFound("not found")

    assert run("delete", "a")[0] == 1
    assert run("delete", "a", "--ignore-not-found")[0] == 0


def test_submit_creates_with_the_overrides_and_the_name(run: Run, tmp_path: Any) -> None:
    path = tmp_path / "job.yaml"
    path.write_text("apiVersion: kubeflow.org/v1\nkind: TensorFlowJob\nmetadata: {name: mnist}\nspec: {}\n")
    run.client.create.side_effect = lambda job, **options: {"metadata": {"name": options["name"], "namespace": "d"}}

    status, out, _ = run("submit", "-f", str(path), "--set", "worker.replicas=8", "--name", "try-2")

    assert status == 0 and out == "tensorflowjob.kubeflow.org/try-2 created\n"
    assert run.client.create.call_args.kwargs["overrides"] == ["worker.replicas=8"]


class Submit:
    """`kubectl tfjob submit` with a real client on a mocked API (`kube`): the exact calls it makes."""

    def __init__(self, mocker: MockerFixture) -> None:
        self.kube = MagicMock()
        self.kube.create.side_effect = lambda path, body: body
        self.kube.replace.side_effect = lambda path, body: body
        mocker.patch.object(cli.TfJobClient, "connect", return_value=TfJobClient(self.kube, "default"))

    def __call__(self, *argv: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        status = cli.main(["submit", *argv], cli.Console(out, err, tty=False))
        return status, out.getvalue(), err.getvalue()

    def calls(self) -> list[tuple[str, str]]:
        verbs = {"create": "POST", "get": "GET", "replace": "PUT"}
        return [(verbs[name], args[0]) for name, args, _ in self.kube.method_calls if name in verbs]


@pytest.fixture
def submit(mocker: MockerFixture) -> Submit:
    return Submit(mocker)


def test_submit_dry_run_prints_the_job_and_creates_nothing(submit: Submit, tmp_path: Any) -> None:
    path = tmp_path / "job.yaml"
    path.write_text("apiVersion: kubeflow.org/v1\nkind: TensorFlowJob\nmetadata: {name: mnist}\n"
                    "spec: {worker: {replicas: 1}}\n")

    status, out, _ = submit("-f", str(path), "--set", "worker.replicas=3", "--dry-run")

    assert status == 0 and "replicas: 3" in out
    assert submit.calls() == []


def test_submit_creates_the_examples_configmap_then_its_job(submit: Submit) -> None:
    status, out, err = submit("-f", str(EXAMPLE), "-n", "team-a")

    assert (status, err) == (0, "")
    assert out == "configmap/mnist-allreduce-code created\ntensorflowjob.kubeflow.org/mnist-allreduce created\n"
    assert submit.calls() == [("POST", "/api/v1/namespaces/team-a/configmaps"),
                              ("POST", "/apis/kubeflow.org/v1/namespaces/team-a/tensorflowjobs")]


def test_submitting_again_replaces_the_configmap(submit: Submit) -> None:
    submit.kube.create.side_effect = [ClusterApiError(409, "AlreadyExists", "exists"), {"metadata": {"name": "mnist-2"}}]
    submit.kube.get.return_value = {"metadata": {"name": "mnist-allreduce-code", "resourceVersion": "12"}}

    status, out, _ = submit("-f", str(EXAMPLE), "--name", "mnist-2")

    assert status == 0
    assert out == "configmap/mnist-allreduce-code replaced\ntensorflowjob.kubeflow.org/mnist-2 created\n"
    config_map = "/api/v1/namespaces/default/configmaps/mnist-allreduce-code"
    assert submit.calls() == [("POST", "/api/v1/namespaces/default/configmaps"), ("GET", config_map),
                              ("PUT", config_map), ("POST", "/apis/kubeflow.org/v1/namespaces/default/tensorflowjobs")]
    replaced = submit.kube.replace.call_args.args[1]
    assert replaced["metadata"]["resourceVersion"] == "12" and "train.py" in replaced["data"]


def test_submit_keeps_a_claim_that_exists(submit: Submit, tmp_path: Any) -> None:
    path = tmp_path / "job.yaml"
    path.write_text("apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data}\nspec: {}\n---\n"
                    "apiVersion: kubeflow.org/v1\nkind: TensorFlowJob\nmetadata: {name: mnist}\nspec: {}\n")
    submit.kube.create.side_effect = [ClusterApiError(409, "AlreadyExists", "exists"), {"metadata": {"name": "mnist"}}]
    submit.kube.get.return_value = {"metadata": {"name": "data", "resourceVersion": "3"}}

    status, out, _ = submit("-f", str(path))

    assert status == 0
    assert out == ("persistentvolumeclaim/data kept (it exists; a claim's spec cannot change)\n"
                   "tensorflowjob.kubeflow.org/mnist created\n")
    assert [verb for verb, _ in submit.calls()] == ["POST", "GET", "POST"]


def test_submit_of_another_kind_beside_the_job_says_to_kubectl_apply_it(submit: Submit, tmp_path: Any) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(EXAMPLE.read_text() + "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: board}\n")

    status, out, err = submit("-f", str(path))

    assert (status, out) == (1, "")
    assert err == (f"error: {path}: Deployment board: kubectl tfjob submit creates ConfigMaps, Secrets and "
                   "PersistentVolumeClaims beside its jobs; apply the Deployment with kubectl apply\n")
    assert submit.calls() == []


def test_submit_of_a_mistyped_job_beside_a_configmap_is_an_error(submit: Submit, tmp_path: Any) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(EXAMPLE.read_text().replace("kind: TensorFlowJob", "kind: TensorflowJob"))

    status, _, err = submit("-f", str(path))

    assert status == 1 and "TensorflowJob mnist-allreduce is a kubeflow.org/v1/TensorflowJob, not a" in err
    assert submit.calls() == []


def test_submit_dry_run_prints_the_configmap_and_the_job(submit: Submit) -> None:
    status, out, _ = submit("-f", str(EXAMPLE), "--dry-run", "--set", "worker.replicas=3", "-n", "team-a")

    assert status == 0
    config_map, job = yaml.safe_load_all(out)
    [in_file, _] = yaml.safe_load_all(EXAMPLE.read_text())
    in_file["metadata"]["namespace"] = "team-a"
    assert config_map == in_file  # --set changes the job only
    assert (job["kind"], job["metadata"]["namespace"], job["spec"]["worker"]["replicas"]) == (
        "TensorFlowJob", "team-a", 3)
    assert submit.calls() == []


def test_an_unreadable_file_is_an_error_naming_it(run: Run) -> None:
    status, _, err = run("submit", "-f", "/nonexistent/job.yaml")

    assert status == 1 and err.startswith("error: /nonexistent/job.yaml: cannot read")


def test_no_subcommand_prints_the_help_and_fails(run: Run) -> None:
    status, _, err = run()

    assert status == 1 and "submit" in err and "logs" in err


def test_logs_of_a_dispatched_job_on_the_manager_name_its_worker_cluster(run: Run) -> None:
    job = job_named("a")
    job["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    run.client.get.return_value = job
    run.client.placement.return_value = "worker-1"
    status, out, err = run("logs", "a")
    assert status == 1 and out == ""
    assert "dispatched by MultiKueue to worker cluster worker-1" in err and "--kubeconfig" in err
    run.client.logs.assert_not_called()
