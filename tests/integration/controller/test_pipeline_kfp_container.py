"""The Kubeflow Pipelines step as its container runs it: the pipeline compiled by the real `kfp`
SDK, the program the compiled YAML embeds run by kfp's own executor (`kfp.dsl.executor_main`, with
the executor input Kubeflow Pipelines would give it) against the local cluster, with the client
distribution's packages (client/) beside kfp and nothing else of the project.

It proves what the in-process tests (test_pipeline_kfp_step.py) cannot: that the step's source,
cut out of its module by kfp, runs on its own, takes its parameters from kfp, and reports the
job's name as the step's output or fails the step with a non-zero exit status.

kfp lives in a venv of its own, cached outside the repository (hack/kfp-venv.sh).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.jobs import SIM_EXIT_AFTER, SIM_EXIT_CODE

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "manifests" / "examples" / "pipelines" / "kfp_pipeline.py"


@pytest.fixture(scope="session")
def kfp_python() -> Path:
    made = subprocess.run(["bash", str(ROOT / "hack" / "kfp-venv.sh")], env={**os.environ, "PYTHON": sys.executable},
                          capture_output=True, text=True, timeout=900, check=False)
    assert made.returncode == 0, made.stderr[-3000:]
    return Path(made.stdout.strip())


@pytest.fixture(scope="session")
def compiled(kfp_python: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("kfp") / "train-mnist.yaml"
    done = subprocess.run([str(kfp_python), str(EXAMPLE), str(out)], capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    pipeline = yaml.safe_load(out.read_text())
    assert isinstance(pipeline, dict)
    return pipeline


class Container:
    """Runs the compiled step's program as the step's container would, after its pip installs."""

    def __init__(self, python: Path, pipeline: dict[str, Any], folder: Path, kubeconfig: str) -> None:
        executor = pipeline["deploymentSpec"]["executors"]["exec-train-step"]["container"]
        self.python, self.folder, self.kubeconfig = python, folder, kubeconfig
        self.program = folder / "ephemeral_component.py"
        self.program.write_text(executor["command"][-1])
        self.args = executor["args"]

    def run(self, **parameters: Any) -> tuple[subprocess.CompletedProcess[str], dict[str, Any] | None]:
        """Run the step with these input parameters; its process and what it wrote as its output."""
        output = self.folder / "executor_output.json"
        executor_input = {"inputs": {"parameterValues": parameters},
                          "outputs": {"parameters": {"Output": {"outputFile": str(self.folder / "Output")}},
                                      "outputFile": str(output)}}
        args = [json.dumps(executor_input) if arg == "{{$}}" else arg for arg in self.args]
        env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
        env.update({"_KFP_RUNTIME": "true", "PYTHONPATH": str(ROOT / "client"), "KUBECONFIG": self.kubeconfig,
                    "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"})
        done = subprocess.run([str(self.python), "-m", "kfp.dsl.executor_main", "--component_module_path",
                               str(self.program), *args], cwd=self.folder, env=env, capture_output=True, text=True,
                              timeout=300, check=False)
        return done, (json.loads(output.read_text()) if output.exists() else None)


@pytest.fixture
def container(kfp_python: Path, compiled: dict[str, Any], tmp_path: Path, tfjobs: Any) -> Container:
    return Container(kfp_python, compiled, tmp_path, str(tfjobs.cluster.kubeconfig))


def job_text(pipeline: dict[str, Any], chief_exit: int) -> str:
    """The pipeline's own job (its constant input), its chief exiting with `chief_exit` on the simulated nodes."""
    constant = pipeline["root"]["dag"]["tasks"]["train-step"]["inputs"]["parameters"]["manifest"]
    job = yaml.safe_load(constant["runtimeValue"]["constant"])
    job["spec"]["chief"]["template"]["metadata"] = {"annotations": {SIM_EXIT_CODE: str(chief_exit),
                                                                    SIM_EXIT_AFTER: "2s"}}
    return str(yaml.safe_dump(job))


def test_the_compiled_step_runs_its_job_to_success_and_outputs_the_jobs_name(
        tfjobs: Any, compiled: dict[str, Any], container: Container) -> None:
    done, output = container.run(manifest=job_text(compiled, 0), workers=1, timeout="3m", namespace=tfjobs.namespace)

    said = f"stdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}"
    assert done.returncode == 0, said
    assert output is not None, said
    name = output["parameterValues"]["Output"]
    assert name.startswith("mnist-")
    assert tfjobs.status(name)["state"] == "Succeeded"
    assert "[chief-0] simulated container 'tensorflow' exited with code 0 (Completed)" in done.stdout.splitlines(), said


def test_the_compiled_step_exits_non_zero_when_its_job_fails(tfjobs: Any, compiled: dict[str, Any],
                                                            container: Container) -> None:
    done, output = container.run(manifest=job_text(compiled, 1), workers=1, timeout="3m", namespace=tfjobs.namespace)

    assert done.returncode != 0
    assert output is None
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("tfjobs.client.JobFailed: "), done.stderr[-3000:]
    assert last.endswith("matched the failure condition status.state==Failed")
