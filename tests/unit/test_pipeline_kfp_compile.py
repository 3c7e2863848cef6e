"""SLOW the first time (about two minutes, needs PyPI): the Kubeflow Pipelines example compiles
with the real `kfp` SDK, and the YAML it writes holds what matters: the one training step, never
cached, its image, what it pip-installs (and from where), the pipeline's parameters wired into
it, and a program that defines the step on its own, as the step's container will run it.

`kfp` pins an older `kubernetes` than the operator, so it lives in a venv of its own, cached outside
the repository and created on first use by hack/kfp-venv.sh; the example runs in it as a
subprocess, as a user compiles it.
"""

from __future__ import annotations

import ast
import json
import os
import pathlib
import re
import shlex
import subprocess
import sys
from typing import Any

import pytest
import yaml

KFP = "kfp==2.17.3"  # as hack/kfp-venv.sh pins it
ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "manifests" / "examples" / "pipelines" / "kfp_pipeline.py"
STEP = "train-step"


@pytest.fixture(scope="session")
def kfp_python() -> pathlib.Path:
    made = subprocess.run(["bash", str(ROOT / "hack" / "kfp-venv.sh")], env={**os.environ, "PYTHON": sys.executable},
                          capture_output=True, text=True, timeout=900, check=False)
    assert made.returncode == 0, made.stderr[-3000:]
    return pathlib.Path(made.stdout.strip())


def compile_pipeline(python: pathlib.Path, folder: pathlib.Path, *flags: str) -> dict[str, Any]:
    """The pipeline compiled by `python kfp_pipeline.py OUT FLAGS...`, read back."""
    out = folder / "train-mnist.yaml"
    done = subprocess.run([str(python), str(EXAMPLE), str(out), *flags], cwd=folder, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    compiled = yaml.safe_load(out.read_text())
    assert isinstance(compiled, dict)
    return compiled


def container(compiled: dict[str, Any]) -> dict[str, Any]:
    component = compiled["components"]["comp-" + STEP]
    return dict(compiled["deploymentSpec"]["executors"][component["executorLabel"]]["container"])


def pip_installs(compiled: dict[str, Any]) -> list[list[str]]:
    """The arguments of each `pip install` the step runs before its program, in order."""
    command = container(compiled)["command"]
    assert command[:2] == ["sh", "-c"]
    found = re.findall(r"python3 -m pip install (.*?)(?:&&|$)", " ".join(command[2].split()))
    return [shlex.split(arguments) for arguments in found]


@pytest.fixture(scope="module")
def default_build(kfp_python: pathlib.Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return compile_pipeline(kfp_python, tmp_path_factory.mktemp("kfp"))


def test_the_pipeline_is_one_uncached_step_fed_the_example_job_and_the_pipeline_parameters(
        default_build: dict[str, Any]) -> None:
    example = _example_constants()
    root = default_build["root"]

    assert default_build["pipelineInfo"]["name"] == "train-mnist"
    assert default_build["sdkVersion"] == "kfp-" + KFP.split("==")[1]
    assert root["inputDefinitions"]["parameters"] == {
        "workers": {"defaultValue": 2.0, "isOptional": True, "parameterType": "NUMBER_INTEGER"},
        "timeout": {"defaultValue": "24h", "isOptional": True, "parameterType": "STRING"}}
    assert list(root["dag"]["tasks"]) == [STEP]
    task = root["dag"]["tasks"][STEP]
    assert task["cachingOptions"] == {}  # enableCache false is left out
    assert task["inputs"]["parameters"] == {"manifest": {"runtimeValue": {"constant": example["MNIST_JOB"]}},
                                            "workers": {"componentInputParameter": "workers"},
                                            "timeout": {"componentInputParameter": "timeout"}}


def test_the_step_takes_the_conditions_and_its_deadline_as_parameters_with_their_defaults(
        default_build: dict[str, Any]) -> None:
    example = _example_constants()

    parameters = default_build["components"]["comp-" + STEP]["inputDefinitions"]["parameters"]

    assert {name: p.get("defaultValue") for name, p in parameters.items()} == {
        "manifest": None, "workers": 2.0, "timeout": "24h", "namespace": "",
        "success_condition": example["SUCCESS_CONDITION"], "failure_condition": example["FAILURE_CONDITION"],
        "follow_logs": True, "delete_unfinished": True}
    assert container(default_build)["args"][-2:] == ["--function_to_execute", "train_step"]


def test_the_step_installs_the_client_distribution_into_the_python_image(default_build: dict[str, Any]) -> None:
    assert container(default_build)["image"] == "python:3.11-slim"
    assert pip_installs(default_build)[0] == ["--quiet", "--no-warn-script-location", "tfjob-client==0.1.0"]


def test_the_compiled_program_defines_the_step_alone_as_its_container_runs_it(
        default_build: dict[str, Any], kfp_python: pathlib.Path, tmp_path: pathlib.Path) -> None:
    program = tmp_path / "ephemeral_component.py"
    program.write_text(container(default_build)["command"][-1])
    show = ("import inspect, json, runpy, sys; step = runpy.run_path(sys.argv[1])['train_step']; "
            "print(json.dumps({n: p.default for n, p in inspect.signature(step).parameters.items() "
            "if p.default is not p.empty}))")

    done = subprocess.run([str(kfp_python), "-c", show, str(program)], capture_output=True, text=True, timeout=120,
                          check=False)

    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout) == {"workers": 2, "timeout": "24h", "namespace": "",
                                       "success_condition": "status.state == Succeeded",
                                       "failure_condition": "status.state == Failed",
                                       "follow_logs": True, "delete_unfinished": True}


def test_the_packages_index_and_image_can_point_at_your_own_build(kfp_python: pathlib.Path,
                                                                   tmp_path: pathlib.Path) -> None:
    wheel = "tfjob-client @ https://wheels.example.com/tfjob_client-0.1.0-py3-none-any.whl"

    compiled = compile_pipeline(kfp_python, tmp_path, "--image", "registry.example.com/step:1",
                                "--package", wheel, "--package", "pandas",
                                "--index-url", "https://pypi.example.com/simple")

    assert container(compiled)["image"] == "registry.example.com/step:1"
    step_packages = pip_installs(compiled)[0]
    assert step_packages[step_packages.index("--index-url") + 1] == "https://pypi.example.com/simple"
    assert step_packages[-2:] == [wheel, "pandas"]


def test_no_packages_installs_nothing_but_kfp_for_an_image_that_has_the_client(kfp_python: pathlib.Path,
                                                                                tmp_path: pathlib.Path) -> None:
    compiled = compile_pipeline(kfp_python, tmp_path, "--image", "registry.example.com/step:1", "--no-packages")

    [only] = pip_installs(compiled)
    assert KFP in only and not any("tfjob-client" in argument for argument in only)


def _example_constants() -> dict[str, str]:
    """The example's string constants, as its file says them."""
    tree = ast.parse(EXAMPLE.read_text())
    return {node.targets[0].id: node.value.value for node in tree.body
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)}
