"""SLOW (a few minutes, needs PyPI): the two distributions installed from their wheels, not editable
and away from the source tree.

* The operator (`tfjob-operator`) reads the CRDs the client distribution carries as package data of
  `tfjob_api`: `validate`, `render` and `convert` work with no TFJOB_* variable set.
* The client (`tfjob-client`) installs only its own, specifically named packages, and runs
  `kubectl-tfjob` without the operator.
* The client installs beside the Kubeflow training SDK 1.9 and KFP 2.x with `pip check` clean, and
  importing it leaves the official `kubernetes` client whole.

The CRDs are `manifests/crd.yaml` and `manifests/kubeflow/tfjob-crd.yaml`; `tfjob_api/crds/` links to
them, and the client's wheel carries their contents. Running a job with the installed operator is an
integration test (tests/integration/controller/test_installed_wheels.py).
"""

from __future__ import annotations

import pathlib
import zipfile

import pytest
import yaml

from tests.support.wheels import ROOT, Venv, Wheels, build_wheels

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
CLIENT_PACKAGES = {"tfjobs", "tfjob_api", "tfconfig", "tfheartbeat"}
OPERATOR_PACKAGES = {"kube", "controller", "informers", "workqueue", "devcluster"}


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Wheels:
    return build_wheels(tmp_path_factory.mktemp("wheels"))


def top_level(wheel: pathlib.Path) -> set[str]:
    with zipfile.ZipFile(wheel) as archive:
        return {name.split("/")[0] for name in archive.namelist() if ".dist-info" not in name.split("/")[0]}


def test_slow_each_wheel_installs_only_its_own_packages(wheels: Wheels) -> None:
    assert top_level(wheels.client) == CLIENT_PACKAGES
    assert top_level(wheels.operator) == OPERATOR_PACKAGES


def test_slow_the_client_wheel_carries_the_crds(wheels: Wheels) -> None:
    with zipfile.ZipFile(wheels.client) as archive:
        assert archive.read("tfjob_api/crds/tensorflowjob.yaml") == (ROOT / "manifests" / "crd.yaml").read_bytes()
        assert archive.read("tfjob_api/crds/tfjob.yaml") == (ROOT / "manifests/kubeflow/tfjob-crd.yaml").read_bytes()


def test_slow_the_installed_operator_validates_renders_and_converts_with_its_own_crds(
        wheels: Wheels, tmp_path: pathlib.Path) -> None:
    venv = Venv.create(tmp_path / "operator", wheels.client, wheels.operator)
    (venv.workdir / "tfjob.yaml").write_text(TFJOB)

    venv.run("tfjob-operator", "validate", "-f", str(EXAMPLE))
    rendered = [d for d in yaml.safe_load_all(venv.run("tfjob-operator", "render", "-f", str(EXAMPLE),
                                                       "-o", "yaml").stdout) if d]
    assert {"Service", "Pod"} <= {d.get("kind") for d in _flatten(rendered)}
    converted = yaml.safe_load(venv.run("tfjob-operator", "convert", "-f", "tfjob.yaml").stdout)
    assert converted["kind"] == "TensorFlowJob"
    assert converted["spec"]["worker"]["replicas"] == 2
    located = venv.python("import tfjob_api.crd; print(tfjob_api.crd.crd_path())").stdout.strip()
    assert located.startswith(str(venv.path)), located


def test_slow_the_installed_client_runs_its_plugin_without_the_operator(wheels: Wheels, tmp_path: pathlib.Path) -> None:
    venv = Venv.create(tmp_path / "client", wheels.client)

    assert "kubectl tfjob" in venv.run("kubectl-tfjob", "--help").stdout
    missing = venv.python("import importlib.util as u; print([m for m in ('controller', 'kube', 'informers', "
                          "'workqueue') if u.find_spec(m)])").stdout.strip()
    assert missing == "[]"


def test_slow_the_client_installs_beside_the_kubeflow_sdk_and_kfp(wheels: Wheels, tmp_path: pathlib.Path) -> None:
    venv = Venv.create(tmp_path / "notebook", wheels.client, "kubeflow-training==1.9.4", "kfp>=2.14,<3")

    assert venv.run("pip", "check").returncode == 0
    used = venv.python("import tfjobs, kubeflow.training, kfp\n"
                       "from kubernetes import client\n"
                       "print(client.CoreV1Api.__name__, client.V1Pod(metadata=client.V1ObjectMeta(name='p')).metadata.name)")
    assert used.stdout.split() == ["CoreV1Api", "p"]


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
