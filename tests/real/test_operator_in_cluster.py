"""The operator installed the way the README says, `kubectl apply --server-side -k manifests/` with the
image set in a kustomization, runs as real pods on the real node: both replicas become ready (their
readiness probes pass), one is elected leader, it reconciles a job from inside the cluster (through
the `kubernetes` Service, which kube-proxy maps to the API server), and its metrics can be scraped
through the Service; and, granted only the manifests' roles, it reads a trainer's progress through the
API server's pod proxy. The session's out-of-cluster operator is stopped meanwhile: two operators
without a shared Lease would both reconcile the job."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from devcluster.cluster import Cluster
from devcluster.images import build_images
from tests.real.kubectl import Kubectl, wait_for
from tests.real.reporting import progress, submit
from tests.support.operator import Operator

ROOT = Path(__file__).resolve().parents[2]
SYSTEM = "tfjob-system"
IMAGE = "docker.io/library/tfjob-operator"
TAG = "0.1.0"


@pytest.fixture
def installed(real_cluster: Cluster, operator: Operator, tmp_path: Path) -> Iterator[Kubectl]:
    """The install manifests applied with the image set once, as `kustomize edit set image` writes it."""
    real_cluster.load_images(build_images(which=("operator",)).values())
    overlay = tmp_path / "install"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": [os.path.relpath(ROOT / "manifests", overlay)],
        "images": [{"name": "tfjob-operator", "newName": IMAGE, "newTag": TAG}],
    }))
    operator.stop()
    try:
        real_cluster.kubectl("apply", "--server-side", "--force-conflicts", "-k", str(overlay))
        yield Kubectl(real_cluster, SYSTEM)
    finally:
        real_cluster.kubectl("delete", "namespace", SYSTEM, "--wait=true", "--timeout=120s", check=False, timeout=150)
        operator.start()


def test_the_operator_installed_from_the_manifests_runs_in_cluster_leads_and_reconciles(
        installed: Kubectl, kubectl: Kubectl) -> None:
    def ready_replicas() -> int:
        return int(installed.json("deployment", "tfjob-operator")["status"].get("readyReplicas") or 0)

    wait_for(lambda: ready_replicas() == 2, 300, "both operator replicas Ready")
    pods = installed.json("pods", "-l", "app.kubernetes.io/name=tfjob-operator")["items"]
    assert {c["image"] for p in pods for c in p["status"]["containerStatuses"]} == {f"{IMAGE}:{TAG}"}
    leases = wait_for(lambda: [lease for lease in installed.json("leases")["items"]
                               if (lease["spec"].get("holderIdentity") or "")], 60, "a leader's Lease")
    holder = leases[0]["spec"]["holderIdentity"]
    assert any(p["metadata"]["name"] in holder for p in pods), f"{holder} is none of the operator's pods"

    kubectl("apply", "-f", "-", input=yaml.safe_dump({
        "apiVersion": "kubeflow.org/v1", "kind": "TensorFlowJob", "metadata": {"name": "hello"},
        "spec": {"worker": {"replicas": 1, "restartPolicy": "Never", "template": {"spec": {"containers": [{
            "name": "tensorflow", "image": "tensorflow/tensorflow:2.21.0", "imagePullPolicy": "IfNotPresent",
            "command": ["python", "-c", "import json, os; print(json.loads(os.environ['TF_CONFIG'])['task'])"],
            "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}}}]}}}}}))
    wait_for(lambda: kubectl.state("hello") == "Succeeded", 300, "the job reconciled by the in-cluster operator")
    assert "'type': 'worker'" in kubectl("logs", "hello-worker-0").stdout

    raw = f"/api/v1/namespaces/{SYSTEM}/services/tfjob-operator-metrics:metrics/proxy/metrics"
    metrics = wait_for(lambda: installed.cluster.kubectl("get", "--raw", raw, check=False).stdout, 60,
                       "metrics through the Service")
    assert "tfjob_leader" in metrics


COUNTER = """
import time, tfheartbeat
for step in range(1, 121):
    tfheartbeat.report(step=step, total_steps=120)
    time.sleep(0.5)
"""


def test_the_in_cluster_operator_reads_progress_under_the_manifests_roles(installed: Kubectl, kubectl: Kubectl) -> None:
    wait_for(lambda: int(installed.json("deployment", "tfjob-operator")["status"].get("readyReplicas") or 0) == 2,
             300, "both operator replicas Ready")
    submit(kubectl, "counted", COUNTER)
    shown = wait_for(lambda: progress(kubectl, "counted").get("percent"), 120,
                     "progress read by the in-cluster operator through the pod proxy")
    assert 0 < shown <= 100
    assert progress(kubectl, "counted")["reportedBy"] == "counted-worker-0"
