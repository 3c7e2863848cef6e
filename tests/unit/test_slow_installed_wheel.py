"""SLOW (a minute or two, needs PyPI): the operator installed from its wheel, not editable and away
from the source tree, reads the CRDs it carries as package data of `tfjob_api` — `validate`, `render` and
`convert` work with no TFJOB_* variable set.

The CRDs are `manifests/crd.yaml` and `manifests/kubeflow/tfjob-crd.yaml`; `tfjob_api/crds/` links to them,
and the wheel carries their contents.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import zipfile

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "manifests" / "examples" / "allreduce.yaml"
TFJOB = """\
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: mnist, namespace: default}
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 2
      restartPolicy: OnFailure
      template:
        spec:
          containers:
          - {name: tensorflow, image: "tensorflow/tensorflow:2.21.0", command: [python, train.py]}
"""


def run(argv: list[str], cwd: pathlib.Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{' '.join(argv)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done


def test_slow_the_installed_wheel_validates_renders_and_converts_with_its_own_crds(tmp_path: pathlib.Path) -> None:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("TFJOB_") and k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    wheels = tmp_path / "wheels"
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(ROOT)], ROOT, env)
    [wheel] = wheels.glob("tfjob_operator-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        packaged = {name: archive.read(name) for name in ("tfjob_api/crds/tensorflowjob.yaml", "tfjob_api/crds/tfjob.yaml")}
    assert packaged["tfjob_api/crds/tensorflowjob.yaml"] == (ROOT / "manifests" / "crd.yaml").read_bytes()
    assert packaged["tfjob_api/crds/tfjob.yaml"] == (ROOT / "manifests" / "kubeflow" / "tfjob-crd.yaml").read_bytes()

    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)], tmp_path, env)
    run([str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", str(wheel)], tmp_path, env)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "tfjob.yaml").write_text(TFJOB)
    operator = str(venv / "bin" / "tfjob-operator")

    run([operator, "validate", "-f", str(EXAMPLE)], elsewhere, env)
    rendered = [d for d in yaml.safe_load_all(run([operator, "render", "-f", str(EXAMPLE), "-o", "yaml"],
                                                  elsewhere, env).stdout) if d]
    assert {"Service", "Pod"} <= {d.get("kind") for d in _flatten(rendered)}
    converted = yaml.safe_load(run([operator, "convert", "-f", "tfjob.yaml"], elsewhere, env).stdout)
    assert converted["kind"] == "TensorFlowJob"
    assert converted["spec"]["worker"]["replicas"] == 2
    located = run([str(venv / "bin" / "python"), "-c", "import tfjob_api.crd; print(tfjob_api.crd.crd_path())"],
                  elsewhere, env).stdout.strip()
    assert located.startswith(str(venv)), located


def _flatten(documents: list[object]) -> list[dict[str, object]]:
    """The objects of rendered output, whether one list, a List kind or separate documents."""
    out: list[dict[str, object]] = []
    for document in documents:
        if isinstance(document, list):
            out += _flatten(document)
        elif isinstance(document, dict) and isinstance(document.get("items"), list):
            out += _flatten(document["items"])
        elif isinstance(document, dict):
            out.append(document)
    return out
