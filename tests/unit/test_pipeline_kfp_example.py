"""The Kubeflow Pipelines example's step and compile command as plain Python, without kfp or a
cluster: the step's defaults are the pipeline's conditions (a lightweight component cannot read
the module's constants, so they are written out twice), a bad timeout is refused before anything
is created, and the compile command refuses contradictory package settings. The step against a
cluster: tests/integration/controller/test_pipeline_kfp_step.py; compiled by kfp:
test_pipeline_kfp_compile.py.
"""

from __future__ import annotations

import importlib.util
import inspect
from pathlib import Path
from types import ModuleType

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "manifests" / "examples" / "pipelines" / "kfp_pipeline.py"


@pytest.fixture(scope="module")
def example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("kfp_pipeline_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_steps_default_conditions_are_the_pipelines_conditions(example: ModuleType) -> None:
    parameters = inspect.signature(example.train_step).parameters

    assert parameters["success_condition"].default == example.SUCCESS_CONDITION
    assert parameters["failure_condition"].default == example.FAILURE_CONDITION


def test_a_timeout_that_is_not_a_duration_is_refused_before_connecting(example: ModuleType, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-such-kubeconfig"))

    with pytest.raises(ValueError, match=r"invalid timeout 'soon' \(use seconds, or e\.g\. 90s, 30m, 1h30m\)"):
        example.train_step(example.MNIST_JOB, timeout="soon")


def test_the_compile_command_refuses_packages_together_with_no_packages(example: ModuleType,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as refused:
        example.main(["out.yaml", "--package", "tfjob-client==0.1.0", "--no-packages"])

    assert refused.value.code == 2
    assert "--package and --no-packages exclude each other" in capsys.readouterr().err
