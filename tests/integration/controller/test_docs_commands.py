"""SLOW (needs PyPI): the commands of the README's "Using it" and of docs/using.md's "A session" run as
written, with `kubectl` and the `kubectl-tfjob` of the installed client wheel on PATH, against the local
cluster and the operator.

The commands are read from the documents themselves (the `$ ` lines of their first console block), so
a command changed in the docs is the command tested. `mnist.yaml` is what the docs say it is: a
TensorFlowJob named mnist with a chief and a worker role; here its simulated pods print the documented
lines, and the chief completes when the session needs it to, not on a timer (a busy machine may take a
minute for the commands that see the job Running): once a `logs -f` has printed every documented line
(the job's end is what it then waits for), or before a `wait` for the job's end. Each command must exit 0
and print what the document shows after it (the lines that do not change from run to run).
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from kube import Kube, resource_path
from tests.support.jobs import SIM_EXIT_AFTER, SIM_EXIT_CODE, devcluster_role, tfjob
from tests.support.wheels import ROOT, Venv, Wheels, build_wheels

from .conftest import Operator

LOG_ANNOTATION = "sim.tensorflowjob.kubeflow.org/log"
EPOCHS = "epoch 1/3 loss=0.61\nepoch 2/3 loss=0.34\nepoch 3/3 loss=0.21 accuracy=0.94"


def console_commands(document: Path, heading: str) -> list[tuple[str, list[str]]]:
    """The `$ ` commands of the first console block after `heading`, each with the lines printed after it."""
    text = document.read_text()
    block = re.search(r"```console\n(.*?)```", text[text.index(heading):], re.S)
    assert block is not None, f"no console block after {heading!r} in {document.name}"
    commands: list[tuple[str, list[str]]] = []
    for line in block.group(1).splitlines():
        if line.startswith("$ "):
            commands.append((line[2:], []))
        elif commands:
            commands[-1][1].append(line)
    return commands


def mnist(namespace: str) -> dict[str, Any]:
    chief = devcluster_role(1, policy="Never", annotations={LOG_ANNOTATION: EPOCHS})
    return tfjob("mnist", {"chief": chief, "worker": devcluster_role(1)}, namespace=namespace)


@pytest.fixture(scope="module")
def client_venv(tmp_path_factory: pytest.TempPathFactory) -> Venv:
    wheels: Wheels = build_wheels(tmp_path_factory.mktemp("wheels"))
    return Venv.create(tmp_path_factory.mktemp("docs") / "client", wheels.client)


def shell(cluster: Any, venv: Venv, namespace: str, workdir: Path) -> dict[str, str]:
    """A user's environment: PATH with kubectl and the installed plugin, a kubeconfig whose context
    namespace is the test's (the docs' commands name none)."""
    kubeconfig = workdir / "kubeconfig"
    kubeconfig.write_text(Path(cluster.kubeconfig).read_text())
    cluster.kubectl("config", "set-context", "--current", f"--namespace={namespace}", kubeconfig=str(kubeconfig))
    path = os.pathsep.join([str(venv.path / "bin"), str(cluster.bin_dir), "/usr/bin", "/bin"])
    return {"PATH": path, "KUBECONFIG": str(kubeconfig), "HOME": str(workdir)}


@pytest.mark.parametrize(("document", "heading"), [("README.md", "## Using it"), ("docs/using.md", "## A session")])
def test_slow_the_documented_commands_run_as_written(document: str, heading: str, client_venv: Venv, cluster: Any,
                                                      api: Kube, namespace: str, operator: Operator,
                                                      tmp_path: Path) -> None:
    (tmp_path / "mnist.yaml").write_text(yaml.safe_dump(mnist(namespace)))
    env = shell(cluster, client_venv, namespace, tmp_path)
    commands = console_commands(ROOT / document, heading)
    assert any(command.startswith("kubectl tfjob submit -f mnist.yaml") for command, _ in commands)
    chief = Chief(api, namespace)

    status = 0
    for command, shown in commands:
        if command == "echo $?":  # the status of the command before, which ran in a shell of its own
            assert [str(status)] == shown
            continue
        expected = stable(shown, command)
        if follows_logs(command):
            status, printed = run_until_printed(command, tmp_path, env, expected, then=chief.complete)
        else:
            if waits_for_the_end(command):
                chief.complete()
            done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True,
                                  timeout=300)
            status, printed = done.returncode, (done.stdout + done.stderr).splitlines()
        output = "\n".join(printed)
        assert status == 0, f"$ {command}\n{output}"
        for line in expected:
            assert line in printed, f"$ {command}: {line!r} not in\n{output}"
    assert chief.completed, "no command of the session waited for the job's end"


class Chief:
    """The job's chief pod, told to complete (exit 0 now, through the KWOK stage's annotations) once."""

    def __init__(self, api: Kube, namespace: str) -> None:
        self.api, self.namespace, self.completed = api, namespace, False

    def complete(self) -> None:
        if not self.completed:
            self.api.patch(resource_path("", "v1", "pods", self.namespace, "mnist-chief-0"),
                           {"metadata": {"annotations": {SIM_EXIT_CODE: "0", SIM_EXIT_AFTER: "0s"}}})
            self.completed = True


def follows_logs(command: str) -> bool:
    return " logs " in f" {command} " and "-f" in command.split()


def waits_for_the_end(command: str) -> bool:
    words = command.split()
    return " wait " in f" {command} " and not ("--for" in words and words[words.index("--for") + 1] != "Succeeded")


def run_until_printed(command: str, cwd: Path, env: dict[str, str], expected: list[str],
                      then: Callable[[], None], timeout: float = 300) -> tuple[int, list[str]]:
    """Run `command`, reading what it prints; once every `expected` line has come, call `then` (which
    ends what the command follows). The exit status and every line printed."""
    process = subprocess.Popen(["bash", "-c", command], cwd=cwd, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    assert process.stdout is not None
    watchdog = threading.Timer(timeout, process.kill)
    watchdog.start()
    printed: list[str] = []
    try:
        if not expected:
            then()
        for line in process.stdout:
            printed.append(line.rstrip("\n"))
            if expected and set(expected) <= set(printed):
                then()
        return process.wait(), printed
    finally:
        watchdog.cancel()
        if process.poll() is None:
            process.kill()
            process.wait()


def stable(shown: list[str], command: str) -> list[str]:
    """The documented lines that must come out as shown: what names the job and its tasks (not ages,
    progress lines or the simulator's own words). A log read once (without -f) may come before the
    pods have written, so only its exit status counts."""
    if " logs " in f" {command} " and "-f" not in command.split():
        return []
    patterns = (r"tensorflowjob\.kubeflow\.org/mnist (created|condition met)", r"0", r"NAME .*",
                r"\[[a-z]+-\d\] TF_CONFIG task: .*", r"\[[a-z]+-\d\] epoch \d/3 .*")
    return [line for line in shown if any(re.fullmatch(pattern, line) for pattern in patterns)]
