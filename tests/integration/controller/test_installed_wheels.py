"""SLOW (needs PyPI): the operator and the client installed from their wheels, away from the checkout,
run a job on the local cluster as a user would.

The operator's venv holds the two wheels; the notebook's holds the client beside the Kubeflow
training SDK 1.9 and KFP 2.x (so an older official `kubernetes` client than the operator's). In the
notebook's one Python process the client creates a job and waits for it, and the official
client's `CoreV1Api` then works; `kubectl-tfjob` shows the job.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from tests.support.jobs import devcluster_role, tfjob
from tests.support.operator import Operator
from tests.support.wheels import Venv, Wheels, build_wheels

NOTEBOOK = """
import json, sys
from tfjobs import TfJobClient
with TfJobClient.connect(sys.argv[1], namespace=sys.argv[2]) as client:
    client.create_from_file(sys.argv[3])
    job = client.wait_for(sys.argv[4], "Succeeded", timeout=120)
from kubernetes import client as k8s, config
config.load_kube_config(sys.argv[1])
pods = k8s.CoreV1Api().list_namespaced_pod(sys.argv[2]).items
import kubernetes
print(json.dumps({"state": job["status"]["state"], "pods": sorted(p.metadata.name for p in pods),
                  "kubernetes": kubernetes.__version__}))
"""


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Wheels:
    return build_wheels(tmp_path_factory.mktemp("wheels"))


@pytest.mark.timeout(1800)  # two virtualenvs installed from the package index: minutes, more on a busy host
def test_slow_installed_wheels_run_a_job_to_success_beside_the_official_client(
        wheels: Wheels, cluster: Any, crd: None, namespace: str, no_session_operator: None,
        tmp_path_factory: pytest.TempPathFactory) -> None:
    home = tmp_path_factory.mktemp("installed")
    operator_venv = Venv.create(home / "operator", wheels.client, wheels.operator)
    notebook = Venv.create(home / "notebook", wheels.client, "kubeflow-training==1.9.4", "kfp>=2.14,<3")
    kubeconfig = str(cluster.kubeconfig)
    job = tfjob("installed", {"worker": devcluster_role(2, policy="Never", exit_code=0, exit_after="1s")},
                namespace=namespace)
    (notebook.workdir / "job.yaml").write_text(yaml.safe_dump(job))
    operator = Operator(kubeconfig, "operator-from-wheel", command=[operator_venv.bin("tfjob-operator")],
                        cwd=operator_venv.workdir).start()
    try:
        ran = json.loads(notebook.run("python", "-c", NOTEBOOK, kubeconfig, namespace, "job.yaml", "installed").stdout)
        shown = notebook.run("kubectl-tfjob", "--kubeconfig", kubeconfig, "-n", namespace, "get", "installed").stdout
    finally:
        operator.stop()

    assert ran["state"] == "Succeeded"
    assert "installed-worker-0" in ran["pods"]  # read by the official client, in the client's process
    assert int(ran["kubernetes"].split(".")[0]) < 31  # KFP's range: the client runs on an older official client
    assert "Succeeded" in shown
