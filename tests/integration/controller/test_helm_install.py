"""`helm install` of manifests/helm/tfjob-operator on the local cluster stores the same Deployment and
RBAC as the kustomize install (`kubectl apply -k manifests/`), `helm upgrade` changing a flag
rolls the Deployment, and `helm upgrade` upgrades the CRD once the release owns it
(crds.templated=true), which Helm never does for its crds/ folder.

Both installs go into the test's namespace one after the other (their ClusterRole and binding share
a name), the kustomize objects moved there as `kustomize edit set namespace` would. The objects are
read back from the API server, so defaults it fills in are compared too; what only one installer
writes (Helm's labels and annotations, server bookkeeping, a Service's cluster IP) is left out.
Helm comes from devcluster/build-helm.sh; the pods run on KWOK's simulated nodes (so `helm test`,
which needs the operator really serving, runs on a real node: tests/real/test_helm_in_cluster.py).
The CRD is the session's: the CRD test changes it and puts it back as it was.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from devcluster.cluster import Cluster
from kube import ApiError, Kube, resource_path
from tests.support.polling import wait_for

from .conftest import ROOT, CrdScheme, crd_path

pytestmark = pytest.mark.tools  # Helm is built from its Go module: `make test-tools`

CHART = ROOT / "manifests" / "helm" / "tfjob-operator"
RELEASE = "tfjob-operator"
CRD_NAME = "tensorflowjobs.kubeflow.org"
HELM_ONLY_LABELS = {"helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/instance",
                    "app.kubernetes.io/version"}
SERVER_FIELDS = {"uid", "resourceVersion", "creationTimestamp", "managedFields", "generation", "annotations"}
RBAC = "rbac.authorization.k8s.io"
# (group, version, plural, namespaced) of what the two installs create, CRD and Namespace aside.
KINDS = {
    "ServiceAccount": ("", "v1", "serviceaccounts", True),
    "Service": ("", "v1", "services", True),
    "Deployment": ("apps", "v1", "deployments", True),
    "PodDisruptionBudget": ("policy", "v1", "poddisruptionbudgets", True),
    "Role": (RBAC, "v1", "roles", True),
    "RoleBinding": (RBAC, "v1", "rolebindings", True),
    "ClusterRole": (RBAC, "v1", "clusterroles", False),
    "ClusterRoleBinding": (RBAC, "v1", "clusterrolebindings", False),
}


@pytest.fixture(scope="module")
def helm_binary() -> str:
    done = subprocess.run(["bash", str(ROOT / "devcluster" / "build-helm.sh"), "dir"], capture_output=True, text=True)
    assert done.returncode == 0, f"devcluster/build-helm.sh: {done.stderr[-2000:]}"
    return str(pathlib.Path(done.stdout.strip().splitlines()[-1]) / "helm")


class Helm:
    """The helm CLI against the local cluster, its caches and config in a folder of the test's own."""

    def __init__(self, binary: str, cluster: Cluster, home: pathlib.Path) -> None:
        self.binary = binary
        self.env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig), "HELM_CACHE_HOME": str(home / "cache"),
                    "HELM_CONFIG_HOME": str(home / "config"), "HELM_DATA_HOME": str(home / "data"),
                    "NO_PROXY": "127.0.0.1,localhost"}

    def __call__(self, *args: str) -> str:
        done = subprocess.run([self.binary, *args], capture_output=True, text=True, env=self.env, timeout=300)
        assert done.returncode == 0, f"helm {' '.join(args)}:\n{done.stderr[-3000:]}"
        return done.stdout


@pytest.fixture
def helm(helm_binary: str, cluster: Cluster, crd: None, tmp_path: pathlib.Path) -> Helm:
    return Helm(helm_binary, cluster, tmp_path)


def path_of(kind: str, namespace: str, name: str | None = None) -> str:
    group, version, plural, namespaced = KINDS[kind]
    return resource_path(group, version, plural, namespace if namespaced else None, name)


def stored(api: Kube, kind: str, namespace: str, name: str) -> dict[str, Any]:
    """An object as the API server keeps it, less what differs by who wrote it or when."""
    obj = api.get(path_of(kind, namespace, name))
    metadata = {k: v for k, v in obj["metadata"].items() if k not in SERVER_FIELDS}
    labels = {k: v for k, v in (metadata.pop("labels", None) or {}).items() if k not in HELM_ONLY_LABELS}
    if labels:
        metadata["labels"] = labels
    kept = {k: v for k, v in obj.items() if k not in ("status", "metadata")}
    if kind == "Service":
        kept["spec"] = {k: v for k, v in kept["spec"].items() if k not in ("clusterIP", "clusterIPs")}
    return {**kept, "metadata": metadata}


def installed(api: Kube, namespace: str) -> dict[tuple[str, str], dict[str, Any]]:
    """Every object of the install (found by its app.kubernetes.io/name label), by kind and name."""
    found = {}
    for kind in KINDS:
        items = api.list(path_of(kind, namespace), labelSelector="app.kubernetes.io/name=tfjob-operator")["items"]
        for item in items:
            name = item["metadata"]["name"]
            if kind.startswith("Cluster") and not name.startswith("tfjob-operator"):
                continue
            found[(kind, name)] = stored(api, kind, namespace, name)
    return found


def kustomize_objects(cluster: Cluster, namespace: str) -> list[dict[str, Any]]:
    """`kubectl kustomize manifests/` moved to `namespace`, less the CRD and the Namespace."""
    rendered = cluster.kubectl("kustomize", str(ROOT / "manifests")).stdout
    objects = []
    for obj in yaml.safe_load_all(rendered):
        if not obj or obj["kind"] in ("CustomResourceDefinition", "Namespace"):
            continue
        if KINDS[obj["kind"]][3]:
            obj["metadata"]["namespace"] = namespace
        for subject in obj.get("subjects") or []:
            subject["namespace"] = namespace
        objects.append(obj)
    return objects


def gone(api: Kube, namespace: str) -> bool:
    for kind in ("ClusterRole", "ClusterRoleBinding"):
        try:
            api.get(path_of(kind, namespace, "tfjob-operator"))
            return False
        except ApiError as error:
            if not error.not_found:
                raise
    return True


@pytest.fixture
def no_cluster_role_left(api: Kube, namespace: str, cluster: Cluster) -> Iterator[None]:
    yield
    for kind in ("ClusterRoleBinding", "ClusterRole"):
        cluster.kubectl("delete", f"{kind.lower()}.{RBAC}", "tfjob-operator", "--ignore-not-found", "--wait=false")


def deployment_args(api: Kube, namespace: str) -> list[str]:
    deployment = api.get(path_of("Deployment", namespace, RELEASE))
    args: list[str] = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    return args


@pytest.mark.usefixtures("no_cluster_role_left")
def test_helm_install_stores_the_deployment_and_rbac_of_the_kustomize_install(
        helm: Helm, api: Kube, cluster: Cluster, namespace: str) -> None:
    helm("install", RELEASE, str(CHART), "--namespace", namespace)
    by_helm = installed(api, namespace)
    helm("uninstall", RELEASE, "--namespace", namespace, "--wait")
    wait_for(lambda: gone(api, namespace), 60, "the release's ClusterRole and binding to be deleted")

    cluster.kubectl("apply", "--server-side", "-f", "-",
                    input=yaml.safe_dump_all(kustomize_objects(cluster, namespace)))
    by_kustomize = installed(api, namespace)

    assert sorted(by_helm) == sorted(by_kustomize)
    assert {k[0] for k in by_helm} == set(KINDS)
    for key, obj in by_kustomize.items():
        assert by_helm[key] == obj, key


@pytest.mark.usefixtures("no_cluster_role_left")
def test_helm_upgrade_changing_a_flag_rolls_the_deployment(helm: Helm, api: Kube, namespace: str) -> None:
    helm("install", RELEASE, str(CHART), "--namespace", namespace)
    before = api.get(path_of("Deployment", namespace, RELEASE))
    assert "--network-policy=on" not in deployment_args(api, namespace)

    helm("upgrade", RELEASE, str(CHART), "--namespace", namespace, "--reuse-values",
         "--set", "flags.networkPolicy=on")

    assert "--network-policy=on" in deployment_args(api, namespace)
    after = api.get(path_of("Deployment", namespace, RELEASE))
    assert after["metadata"]["generation"] == before["metadata"]["generation"] + 1

    def rolled_replica_set() -> list[dict[str, Any]]:
        sets = api.get(resource_path("apps", "v1", "replicasets", namespace))["items"]
        return [s for s in sets if "--network-policy=on" in s["spec"]["template"]["spec"]["containers"][0]["args"]
                and (s.get("status") or {}).get("replicas", 0) > 0]
    wait_for(rolled_replica_set, 60, "a new ReplicaSet with the flag to get pods")
    wait_for(lambda: (api.get(path_of("Deployment", namespace, RELEASE)).get("status") or {})
             .get("observedGeneration") == after["metadata"]["generation"], 60, "the rollout to be observed")
    helm("uninstall", RELEASE, "--namespace", namespace)


# A printer column only `kubectl get -o wide` shows: what a newer chart's CRD adds, harmless meanwhile.
NEW_COLUMN = {"name": "Upgraded", "type": "string", "jsonPath": ".metadata.name", "priority": 1}


def chart_with_a_newer_crd(folder: pathlib.Path) -> pathlib.Path:
    """A copy of the chart whose CRD (crds/, linked to manifests/crd.yaml) has one more printer column."""
    copy = folder / "manifests"
    shutil.copytree(ROOT / "manifests", copy, symlinks=True)
    crd = yaml.load((copy / "crd.yaml").read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    for version in crd["spec"]["versions"]:
        version.setdefault("additionalPrinterColumns", []).append(NEW_COLUMN)
    (copy / "crd.yaml").write_text(yaml.safe_dump(crd))
    return copy / "helm" / "tfjob-operator"


def columns(api: Kube) -> list[list[str]]:
    """The printer columns of each version of the stored CRD."""
    versions = api.get(crd_path(CRD_NAME))["spec"]["versions"]
    return [[c["name"] for c in v.get("additionalPrinterColumns") or []] for v in versions]


def newer(api: Kube) -> bool:
    """Whether any version of the stored CRD has the newer chart's column."""
    return any(NEW_COLUMN["name"] in names for names in columns(api))


@pytest.fixture
def crd_put_back(api: Kube, crd_scheme: CrdScheme) -> Iterator[None]:
    """The session's TensorFlowJob CRD, as it was before the test (spec, labels and annotations)."""
    crd_scheme.use("default")
    before = api.get(crd_path(CRD_NAME))
    yield
    current = api.get(crd_path(CRD_NAME))
    metadata = {"name": CRD_NAME, "resourceVersion": current["metadata"]["resourceVersion"],
                **{k: before["metadata"][k] for k in ("labels", "annotations") if k in before["metadata"]}}
    api.replace(crd_path(CRD_NAME), {"apiVersion": before["apiVersion"], "kind": before["kind"],
                                     "metadata": metadata, "spec": before["spec"]})
    wait_for(lambda: not newer(api), 30, "the CRD to be as before")


@pytest.mark.usefixtures("no_cluster_role_left", "crd_put_back")
def test_helm_upgrade_upgrades_the_crd_once_the_release_owns_it_and_uninstall_keeps_it(
        helm: Helm, api: Kube, namespace: str, tmp_path: pathlib.Path) -> None:
    newer_chart = chart_with_a_newer_crd(tmp_path)
    helm("install", RELEASE, str(CHART), "--namespace", namespace)  # the CRD exists: crds/ leaves it be
    assert not newer(api)

    # Helm never upgrades crds/: a plain upgrade to the newer chart leaves the CRD as it was.
    helm("upgrade", RELEASE, str(newer_chart), "--namespace", namespace, "--reuse-values")
    assert not newer(api)

    # The documented path: the release takes the CRD over once, and upgrades it from then on.
    helm("upgrade", RELEASE, str(newer_chart), "--namespace", namespace, "--reuse-values",
         "--set", "crds.templated=true", "--take-ownership")
    assert all(names[-1] == NEW_COLUMN["name"] for names in columns(api))
    crd = api.get(crd_path(CRD_NAME))
    assert crd["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    assert crd["metadata"]["annotations"]["meta.helm.sh/release-namespace"] == namespace
    assert crd["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "Helm"
    established = [c for c in crd["status"]["conditions"] if c["type"] == "Established"]
    assert established and established[0]["status"] == "True"

    # Back to the chart's own CRD, by a plain upgrade now that the release owns it.
    helm("upgrade", RELEASE, str(CHART), "--namespace", namespace, "--reuse-values")
    assert not newer(api)

    # Uninstalling keeps the CRD, and with it every job.
    helm("uninstall", RELEASE, "--namespace", namespace, "--wait")
    assert api.get(crd_path(CRD_NAME))["metadata"]["name"] == CRD_NAME
