"""`helm test` of the chart (manifests/helm/tfjob-operator) on a real node: the operator installed by
`helm install` under a release name of its own runs as real pods, and the chart's test pod (the
operator's image) finds a replica serving metrics as the leader through the metrics Service. It does
so with leader election (two replicas, one elected) and without it (one replica, the leader by
itself: tfjob_leader 1), and fails, saying so, once no replica runs.

KWOK's simulated pods serve nothing, so this needs a real node (tests/real/conftest.py) and the
operator's image (built from the sources, as test_operator_in_cluster.py does). Helm comes from
devcluster/build-helm.sh. The session's out-of-cluster operator is stopped meanwhile, as there.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
from collections.abc import Iterator

import pytest

from devcluster.cluster import Cluster
from devcluster.images import build_images
from tests.real.kubectl import Kubectl, wait_for
from tests.support.operator import Operator

pytestmark = pytest.mark.tools  # Helm is built from its Go module

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHART = ROOT / "manifests" / "helm" / "tfjob-operator"
RELEASE = "ml"  # not "tfjob-operator": the objects are named ml-tfjob-operator
IMAGE = ["--set", "image.repository=docker.io/library/tfjob-operator", "--set", "image.tag=0.1.0"]


class Helm:
    """The helm CLI against the real-node cluster, in the test's namespace, its state in a folder of its own."""

    def __init__(self, cluster: Cluster, namespace: str, home: pathlib.Path) -> None:
        done = subprocess.run(["bash", str(ROOT / "devcluster" / "build-helm.sh"), "dir"], capture_output=True,
                              text=True)
        assert done.returncode == 0, f"devcluster/build-helm.sh: {done.stderr[-2000:]}"
        self.binary = str(pathlib.Path(done.stdout.strip().splitlines()[-1]) / "helm")
        self.namespace = namespace
        self.env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig), "HELM_CACHE_HOME": str(home / "cache"),
                    "HELM_CONFIG_HOME": str(home / "config"), "HELM_DATA_HOME": str(home / "data"),
                    "NO_PROXY": "127.0.0.1,localhost,10.89.0.1"}

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([self.binary, *args, "--namespace", self.namespace], capture_output=True, text=True,
                              env=self.env, timeout=600)

    def __call__(self, *args: str) -> str:
        done = self.run(*args)
        assert done.returncode == 0, f"helm {' '.join(args)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        return done.stdout


@pytest.fixture
def helm(real_cluster: Cluster, operator: Operator, namespace: str, tmp_path: pathlib.Path) -> Iterator[Helm]:
    """Helm in the test's namespace with the operator's image on the node; the release uninstalled after."""
    real_cluster.load_images(build_images(which=("operator",)).values())
    operator.stop()
    client = Helm(real_cluster, namespace, tmp_path)
    try:
        yield client
    finally:
        client.run("uninstall", RELEASE, "--wait", "--timeout", "120s")
        operator.start()


def ready_replicas(kubectl: Kubectl) -> int:
    return int(kubectl.json("deployment", f"{RELEASE}-tfjob-operator")["status"].get("readyReplicas") or 0)


def test_helm_test_finds_a_leader_serving_with_and_without_leader_election_and_fails_without_replicas(
        helm: Helm, kubectl: Kubectl) -> None:
    helm("install", RELEASE, str(CHART), *IMAGE, "--wait", "--timeout", "300s")
    assert ready_replicas(kubectl) == 2
    tested = helm("test", RELEASE, "--logs", "--timeout", "300s")
    assert "Phase:          Succeeded" in tested and "a replica answers as the leader (tfjob_leader 1.0)" in tested

    # One replica without an election: it is the leader, and says so.
    helm("upgrade", RELEASE, str(CHART), "--reuse-values", "--set", "leaderElection.enabled=false",
         "--set", "replicaCount=1", "--wait", "--timeout", "300s")
    wait_for(lambda: len(kubectl.json("pods", "-l", "app.kubernetes.io/component=controller")["items"]) == 1, 120,
             "the elected replicas replaced by one")
    args = kubectl.json("deployment", f"{RELEASE}-tfjob-operator")["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--leader-elect" not in args
    tested = helm("test", RELEASE, "--logs", "--timeout", "300s")
    assert "a replica answers as the leader (tfjob_leader 1.0)" in tested

    # No replica: the test fails within its timeout and says what it saw.
    helm("upgrade", RELEASE, str(CHART), "--reuse-values", "--set", "replicaCount=0", "--set", "tests.timeoutSeconds=10",
         "--wait", "--timeout", "300s")
    wait_for(lambda: not kubectl.json("pods", "-l", "app.kubernetes.io/component=controller")["items"], 120,
             "the replicas gone")
    failed = helm.run("test", RELEASE, "--logs", "--timeout", "300s")
    assert failed.returncode != 0
    assert "no replica answered as the leader within 10 s" in failed.stdout + failed.stderr
