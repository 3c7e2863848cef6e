"""A kind of job the cluster does not serve, on the real API server: `kubectl tfjob` and `TfJobClient`
say which kind, which CRD and why — not the API server's bare `404 page not found`.

The session's cluster serves TensorFlowJobs and, under the default CRD scheme, no TFJob CRD at all: a
TFJob submitted then is the "not installed" case, as a cluster admin and as a user who may not read
CRDs. A clash of names (NamesAccepted=False) is made in a group of the test's own, so the real
TensorFlowJob and TFJob CRDs that the other tests share stay as they are: two CRDs that clash the way
the shipped TensorFlowJob CRD and the TFJob CRD do (the short name `tfjob` is the other's singular),
read through a `JobKind` of that group by the same client code.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kube import ApiError, Kube, resource_path
from tests.support.jobs import devcluster_role
from tests.support.kubeflow import as_tfjob
from tests.support.polling import wait_for
from tfjobs import KindNotServed, TfJobClient
from tfjobs.kinds import TFJOB

from .conftest import TFJOB_CRD_NAME, CrdScheme, crd_path

PLUGIN = Path(sys.executable).parent / "kubectl-tfjob"
RBAC = "rbac.authorization.k8s.io"


def plugin(kubeconfig: str | os.PathLike[str], namespace: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
    env.pop("KUBECONFIG", None)
    return subprocess.run([str(PLUGIN), *args, "-n", namespace, "--kubeconfig", str(kubeconfig)],
                          capture_output=True, text=True, timeout=120, env=env, check=False)


@pytest.fixture
def without_tfjob_crd(crd_scheme: CrdScheme) -> None:
    """The cluster as installed by default: TensorFlowJobs served, no TFJob CRD."""
    crd_scheme.use("default")
    assert not crd_scheme.served(TFJOB_CRD_NAME)


def tfjob_file(tmp_path: Path, namespace: str) -> Path:
    path = tmp_path / "tfjob.yaml"
    path.write_text(yaml.safe_dump(as_tfjob("unserved", {"worker": devcluster_role(1)}, namespace=namespace)))
    return path


def test_submit_of_a_tfjob_without_its_crd_says_the_crd_is_not_installed(cluster: Any, namespace: str,
                                                                         without_tfjob_crd: None,
                                                                         tmp_path: Path) -> None:
    done = plugin(cluster.kubeconfig, namespace, "submit", "-f", str(tfjob_file(tmp_path, namespace)))

    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == ("error: TFJob (tfjobs.kubeflow.org) is not served by this cluster: its "
                           "CustomResourceDefinition tfjobs.kubeflow.org is not installed; install it: kubectl apply "
                           "--server-side --force-conflicts -k manifests/kubeflow/ (docs/kubeflow.md)\n")


def test_submit_by_a_user_who_may_not_read_crds_says_the_crd_could_not_be_read(cluster: Any, api: Kube,
                                                                               namespace: str,
                                                                               without_tfjob_crd: None,
                                                                               tmp_path: Path) -> None:
    # The namespace's default ServiceAccount, allowed jobs of both kinds in its namespace and nothing else.
    role = {"apiVersion": f"{RBAC}/v1", "kind": "Role", "metadata": {"name": "trainer"},
            "rules": [{"apiGroups": ["kubeflow.org"], "resources": ["tensorflowjobs", "tfjobs"],
                       "verbs": ["get", "list", "create", "delete"]}]}
    binding = {"apiVersion": f"{RBAC}/v1", "kind": "RoleBinding", "metadata": {"name": "trainer"},
               "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": "trainer"},
               "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": namespace}]}
    api.create(resource_path(RBAC, "v1", "roles", namespace), role)
    api.create(resource_path(RBAC, "v1", "rolebindings", namespace), binding)
    user = cluster.service_account_kubeconfig(namespace, "default")
    job = str(tfjob_file(tmp_path, namespace))

    def submitted() -> subprocess.CompletedProcess[str] | None:  # refused as a whole until the Role is in force
        done = plugin(user, namespace, "submit", "-f", job)
        return None if 'resource "tfjobs" in API group "kubeflow.org"' in done.stderr else done

    done = wait_for(submitted, 30, "the Role in force")

    assert done.returncode == 1
    assert done.stderr.startswith(
        "error: TFJob (tfjobs.kubeflow.org) is not served by this cluster, and its CustomResourceDefinition "
        'tfjobs.kubeflow.org could not be read (Forbidden: customresourcedefinitions.apiextensions.k8s.io '
        f'"tfjobs.kubeflow.org" is forbidden: User "system:serviceaccount:{namespace}:default" cannot get resource')
    assert done.stderr.endswith("\n") and done.stderr.count("\n") == 1


# --- a clash of names, in a group of the test's own --------------------------------------------------------


def crd_of(group: str, kind: str, plural: str, singular: str, short_names: list[str]) -> dict[str, Any]:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"kind": kind, "listKind": f"{kind}List", "plural": plural, "singular": singular,
                               "shortNames": short_names},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": {"type": "object",
                                                                  "x-kubernetes-preserve-unknown-fields": True}}}]}}


def condition(api: Kube, name: str, kind: str) -> dict[str, Any] | None:
    conditions = (api.get(crd_path(name)).get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == kind), None)


@pytest.fixture
def clashing_group(api: Kube) -> Iterator[str]:
    """A group of the test's own with a TensorFlowJob CRD (short name tfjob) served, and a TFJob CRD
    (singular tfjob) refused its names; both deleted afterwards."""
    group = f"clash-{uuid.uuid4().hex[:6]}.tfjob-tests.example.com"
    first = crd_of(group, "TensorFlowJob", "tensorflowjobs", "tensorflowjob", ["tfjob"])
    second = crd_of(group, "TFJob", "tfjobs", "tfjob", [])
    created: list[str] = []
    try:
        for crd in (first, second):
            api.create(resource_path("apiextensions.k8s.io", "v1", "customresourcedefinitions"), crd)
            created.append(crd["metadata"]["name"])
            wait_for(lambda name=crd["metadata"]["name"]: condition(api, name, "NamesAccepted"), 60,
                     f"the naming controller to judge {crd['metadata']['name']}")
        yield group
    finally:
        for name in created:
            try:
                api.delete(crd_path(name))
            except ApiError as error:
                if not error.not_found:
                    raise


def test_the_client_names_the_names_accepted_condition_of_a_crd_whose_names_clash(cluster: Any, api: Kube,
                                                                                  namespace: str,
                                                                                  clashing_group: str) -> None:
    crd = f"tfjobs.{clashing_group}"
    clash = condition(api, crd, "NamesAccepted")
    assert clash is not None and clash["status"] == "False", clash
    kind = dataclasses.replace(TFJOB, group=clashing_group)

    with TfJobClient.connect(str(cluster.kubeconfig), namespace=namespace) as client:
        with pytest.raises(KindNotServed) as listed:
            client.list(kind=kind)
        with pytest.raises(KindNotServed) as got:
            client.get("mnist", kind=kind)

    expected = (f"TFJob (tfjobs.{clashing_group}) is not served by this cluster: its CustomResourceDefinition "
                f"{crd} has NamesAccepted=False (SingularConflict: \"tfjob\" is already in use); resolve the name "
                f"conflict with the other CRD of group {clashing_group} that holds the name (kubectl get crd): "
                f"rename or delete one of the two")
    assert str(listed.value) == str(got.value) == expected
    assert listed.value.condition is not None and listed.value.condition["reason"] == "SingularConflict"
