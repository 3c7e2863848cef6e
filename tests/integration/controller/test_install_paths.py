"""Install paths on a real API server: `--kubeflow-tfjob=auto` starts serving TFJobs when this
project's TFJob CRD is applied to a running operator -- also one started in the same second as the
CRD -- and stops when it goes, without a restart; and an operator run with `--network-policy=off`
under the ClusterRole the `rbac/without-network-policies` component leaves (no NetworkPolicy verbs)
is ready and runs a job.

Each test pauses the session's operator and runs its own, so no two operators reconcile one job.
"""

from __future__ import annotations

import copy
import json
import os
import pathlib
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import yaml

from kube import ApiError, Kube, resource_path
from tests.integration.controller.conftest import (
    KUBEFLOW_TENSORFLOWJOB_CRD,
    TFJOB_CRD,
    TFJOB_CRD_NAME,
    CrdScheme,
    KubeflowTfJobs,
    TfJobs,
    crd_condition,
)
from tests.support.jobs import devcluster_role
from tests.support.operator import Operator
from tests.support.polling import wait_for

ROOT = pathlib.Path(__file__).resolve().parents[3]
RBAC = "rbac.authorization.k8s.io"


def log_events(operator: Operator) -> list[dict[str, Any]]:
    events = []
    for line in operator.log_path.read_text(errors="replace").splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            continue
    return events


def logged(operator: Operator, event: str) -> bool:
    return any(e.get("event") == event for e in log_events(operator))


def serving_tfjobs(operator: Operator) -> bool:
    """Whether the operator serves TFJobs: from its start, or since it noticed the CRD."""
    return any((e.get("event") == "starting" and e.get("serving_tfjobs"))
               or e.get("event") == "serving TFJobs: this project's TFJob CRD is served" for e in log_events(operator))


def apply_tfjob_crds(cluster: Any) -> None:
    """What `kubectl apply -k manifests/kubeflow/` does to the CRDs."""
    cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(KUBEFLOW_TENSORFLOWJOB_CRD),
                    "-f", str(TFJOB_CRD))


def succeeding(jobs: TfJobs, name: str) -> None:
    jobs.create(name, worker=devcluster_role(1, exit_code=0, exit_after="2s"))


@pytest.fixture
def without_tfjob_crd(crd_scheme: CrdScheme) -> Iterator[CrdScheme]:
    """The cluster with the TensorFlowJob CRD only (and the session operator as it was); a test that
    applies the TFJob CRD records it in `current`, and the CRDs are put back afterwards."""
    crd_scheme.use("default")
    yield crd_scheme
    if crd_scheme.current != "default":
        crd_scheme.to_default()
        crd_scheme.current = "default"


# ---- --kubeflow-tfjob=auto follows the CRD --------------------------------------------------------------


def test_applying_the_tfjob_crd_to_a_running_operator_gets_tfjobs_served_without_a_restart(
        cluster: Any, api: Kube, namespace: str, without_tfjob_crd: CrdScheme, no_session_operator: None,
        start_operator: Callable[..., Operator]) -> None:
    operator = start_operator(["--kubeflow-tfjob=auto"])
    assert not logged(operator, "serving TFJobs: this project's TFJob CRD is served")
    pid = operator.process.pid if operator.process else None

    apply_tfjob_crds(cluster)
    without_tfjob_crd.current = "kubeflow"
    wait_for(lambda: crd_condition(api, TFJOB_CRD_NAME, "Established"), 60, "the TFJob CRD")
    tfjobs = KubeflowTfJobs(api, namespace, cluster)
    succeeding(tfjobs, "served")

    tfjobs.wait_condition("served", "Succeeded", timeout=90)
    assert operator.process is not None and operator.process.pid == pid and operator.process.poll() is None
    assert logged(operator, "serving TFJobs: this project's TFJob CRD is served")


def test_removing_the_tfjob_crd_stops_serving_tfjobs_and_tensorflowjobs_run_on(
        cluster: Any, api: Kube, namespace: str, without_tfjob_crd: CrdScheme, no_session_operator: None,
        start_operator: Callable[..., Operator]) -> None:
    apply_tfjob_crds(cluster)
    without_tfjob_crd.current = "kubeflow"
    wait_for(lambda: crd_condition(api, TFJOB_CRD_NAME, "Established"), 60, "the TFJob CRD")
    operator = start_operator(["--kubeflow-tfjob=auto"])
    wait_for(lambda: serving_tfjobs(operator), 30, "TFJobs served")

    without_tfjob_crd.to_default()
    without_tfjob_crd.current = "default"
    wait_for(lambda: logged(operator, "no longer serving TFJobs: this project's TFJob CRD is not served"), 60,
             "the operator to stop serving TFJobs")
    tfjobs = TfJobs(api, namespace, cluster)
    succeeding(tfjobs, "after")

    tfjobs.wait_condition("after", "Succeeded", timeout=90)
    assert operator.ready()
    assert not any(e.get("level") == "error" for e in log_events(operator)), operator.tail()


def test_an_operator_started_in_the_same_second_as_the_tfjob_crd_serves_tfjobs(
        cluster: Any, api: Kube, namespace: str, without_tfjob_crd: CrdScheme, no_session_operator: None,
        start_operator: Callable[..., Operator]) -> None:
    applying = threading.Thread(target=apply_tfjob_crds, args=(cluster,))
    applying.start()
    operator = start_operator(["--kubeflow-tfjob=auto"], wait_ready=False)
    applying.join(60)
    without_tfjob_crd.current = "kubeflow"
    wait_for(lambda: crd_condition(api, TFJOB_CRD_NAME, "Established"), 60, "the TFJob CRD")
    wait_for(operator.ready, 60, "the operator's /readyz")
    tfjobs = KubeflowTfJobs(api, namespace, cluster)
    succeeding(tfjobs, "raced")

    tfjobs.wait_condition("raced", "Succeeded", timeout=90)


# ---- --network-policy=off without any NetworkPolicy grant ------------------------------------------------


def cluster_role_without_network_policies(name: str) -> dict[str, Any]:
    """The operator's ClusterRole as `manifests/rbac/` with the `without-network-policies` component
    builds it (`kubectl kustomize`), renamed."""
    with tempfile.TemporaryDirectory() as folder:
        rbac = ROOT / "manifests" / "rbac"
        overlay = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
                   "resources": [os.path.relpath(rbac, folder)],
                   "components": [os.path.relpath(rbac / "without-network-policies", folder)]}
        (pathlib.Path(folder) / "kustomization.yaml").write_text(yaml.safe_dump(overlay))
        built = subprocess.run(["kubectl", "kustomize", "--load-restrictor", "LoadRestrictionsNone", folder],
                               capture_output=True, text=True, check=True).stdout
    [role] = [o for o in yaml.safe_load_all(built) if o and o["kind"] == "ClusterRole"]
    role = copy.deepcopy(role)
    role["metadata"] = {"name": name}
    return role


@pytest.fixture
def account_without_network_policies(api: Kube, namespace: str) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """A ServiceAccount bound to that ClusterRole (deleted afterwards): (namespace, name, role)."""
    name = f"tfjob-operator-{namespace}"
    api.create(resource_path("", "v1", "serviceaccounts", namespace),
               {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "operator"}})
    role = cluster_role_without_network_policies(name)
    api.create(resource_path(RBAC, "v1", "clusterroles"), role)
    api.create(resource_path(RBAC, "v1", "clusterrolebindings"), {
        "apiVersion": f"{RBAC}/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
        "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": "operator", "namespace": namespace}]})
    yield namespace, "operator", role
    for plural in ("clusterrolebindings", "clusterroles"):
        try:
            api.delete(resource_path(RBAC, "v1", plural, None, name))
        except ApiError as error:
            if not error.not_found:
                raise


def test_with_policies_off_an_operator_granted_no_network_policy_verbs_is_ready_and_runs_a_job(
        cluster: Any, api: Kube, crd: None, no_session_operator: None,
        account_without_network_policies: tuple[str, str, dict[str, Any]],
        start_operator: Callable[..., Operator]) -> None:
    namespace, account, role = account_without_network_policies
    assert not any("networkpolicies" in rule["resources"] for rule in role["rules"])
    kubeconfig = cluster.service_account_kubeconfig(namespace, account)
    can_i = cluster.kubectl("auth", "can-i", "list", "networkpolicies", "-n", namespace, kubeconfig=kubeconfig,
                            check=False)
    assert can_i.stdout.strip() == "no"

    operator = start_operator(["--network-policy=off", "--kubeflow-tfjob=off"], kubeconfig=kubeconfig)
    tfjobs = TfJobs(api, namespace, cluster)
    succeeding(tfjobs, "plain")

    tfjobs.wait_condition("plain", "Succeeded", timeout=90)
    assert operator.ready()
    requests = [line for line in operator.metrics().splitlines() if line.startswith("tfjob_api_requests_total")]
    assert requests and not [line for line in requests if "networkpolicies" in line or 'code="403"' in line]
