"""SLOW the first time (Argo's CLI is built from its Go module, see hack/build-argo.sh; then reused
from ~/.cache/tfjob-operator/argo-<version>/): the Argo workflow example passes Argo's own offline
lint, `argo lint --offline`, which validates a Workflow as the controller would before running it
(its templates, steps, parameters and the references between them), without a cluster.

A lint that passes everything would prove nothing, so the same file with one reference broken
must fail it, naming the reference.
"""

from __future__ import annotations

import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / "manifests" / "examples" / "pipelines" / "argo-workflow.yaml"
BUILD = ROOT / "hack" / "build-argo.sh"
OUTPUT_REFERENCE = "{{steps.train.outputs.parameters.job}}"

pytestmark = pytest.mark.tools  # Argo's CLI is built from its Go module: `make test-tools`


@pytest.fixture(scope="session")
def argo() -> pathlib.Path:
    subprocess.run(["bash", str(BUILD)], check=True, timeout=3600)
    folder = subprocess.run(["bash", str(BUILD), "dir"], capture_output=True, text=True, check=True).stdout.strip()
    return pathlib.Path(folder) / "argo"


def lint(argo: pathlib.Path, path: pathlib.Path) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key != "KUBECONFIG"}
    return subprocess.run([str(argo), "lint", "--offline", "--kinds", "workflows", str(path)], capture_output=True,
                          text=True, timeout=120, env=env, check=False)


@pytest.mark.timeout(3600)  # the first run builds Argo's CLI
def test_argo_lints_the_example_workflow_offline_without_errors(argo: pathlib.Path) -> None:
    done = lint(argo, WORKFLOW)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "no linting errors found" in done.stdout + done.stderr


@pytest.mark.timeout(3600)
def test_argo_lint_fails_the_example_with_a_broken_output_reference(argo: pathlib.Path,
                                                                   tmp_path: pathlib.Path) -> None:
    text = WORKFLOW.read_text()
    assert OUTPUT_REFERENCE in text
    broken = tmp_path / "argo-workflow.yaml"
    broken.write_text(text.replace(OUTPUT_REFERENCE, "{{steps.train.outputs.parameters.jobname}}"))

    done = lint(argo, broken)

    assert done.returncode != 0
    assert "steps.train.outputs.parameters.jobname" in done.stdout + done.stderr
