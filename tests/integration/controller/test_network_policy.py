"""Per-job NetworkPolicies on a real API server: accepted as the operator builds them, owned by the job
(garbage-collected with it), recreated when deleted, updated when the TF port changes, and never run
around: pods wait while a foreign object holds the policy's name. (The local cluster enforces no
NetworkPolicy; what the policy admits is checked by tests/unit/controller/test_network_policy_semantics.py.)"""

from __future__ import annotations

import pathlib
from collections.abc import Callable
from typing import Any

import yaml

from controller.job import netpol
from kube import ApiError, Kube, resource_path
from tests.support.jobs import DEVCLUSTER_IMAGE, container
from tfjob_api.defaults import apply_defaults

ROOT = pathlib.Path(__file__).resolve().parents[3]
TENSORBOARD = {"podSelector": {"matchLabels": {"app": "tensorboard"}}}
SCRAPER = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}},
           "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}}}


def policy_path(namespace: str, name: str | None = None) -> str:
    return resource_path("networking.k8s.io", "v1", "networkpolicies", namespace, name)


def policy(api: Kube, namespace: str, name: str) -> dict[str, Any] | None:
    try:
        return api.get(policy_path(namespace, name))
    except ApiError as error:
        if error.not_found:
            return None
        raise


def isolated(tfjobs: Any, name: str, **settings: Any) -> dict[str, Any]:
    return tfjobs.create(name, chief=tfjobs.role(1), ps=tfjobs.role(1), worker=tfjobs.role(2),
                         networkPolicy={"enabled": True, **settings})


def wait_policy(tfjobs: Any, name: str, check: Callable[[dict[str, Any]], bool] = lambda _p: True,
                what: str = "") -> dict[str, Any]:
    def ready() -> dict[str, Any] | None:
        found = policy(tfjobs.api, tfjobs.namespace, name)
        return found if found is not None and check(found) else None
    return tfjobs.wait_for(ready, 60, f"NetworkPolicy {name} {what}".strip())


def test_a_job_that_asks_for_isolation_gets_its_policy_from_the_api_server(tfjobs: Any) -> None:
    job = isolated(tfjobs, "iso", allowFrom=[TENSORBOARD, SCRAPER])
    found = wait_policy(tfjobs, "iso-tfjob")
    owner = found["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["uid"], owner["controller"]) == ("TensorFlowJob", job["metadata"]["uid"], True)
    spec = found["spec"]
    assert spec["podSelector"] == {"matchLabels": {"tensorflowjob.kubeflow.org/job-name": "iso"}}
    assert spec["policyTypes"] == ["Ingress"]
    tf_rule, other_rule = spec["ingress"]
    assert tf_rule["ports"] == [{"protocol": "TCP", "port": 2222}]
    assert tf_rule["from"] == [{"podSelector": {"matchLabels": {"tensorflowjob.kubeflow.org/job-name": "iso"}}},
                               TENSORBOARD, SCRAPER]
    assert other_rule["ports"][:2] == [{"protocol": "TCP", "port": 1, "endPort": 2221},
                                       {"protocol": "TCP", "port": 2223, "endPort": 65535}]
    assert netpol.spec_patch(found, apply_defaults(tfjobs.get("iso"))) is None  # the server's defaults: no change
    tfjobs.wait_pods("iso", 4)
    tfjobs.wait_condition("iso", "Running")


def test_a_deleted_policy_is_recreated(tfjobs: Any) -> None:
    isolated(tfjobs, "again")
    first = wait_policy(tfjobs, "again-tfjob")
    tfjobs.api.delete(policy_path(tfjobs.namespace, "again-tfjob"))
    wait_policy(tfjobs, "again-tfjob", lambda p: p["metadata"]["uid"] != first["metadata"]["uid"], "recreated")


def test_a_hand_edited_policy_is_put_back(tfjobs: Any) -> None:
    isolated(tfjobs, "edited")
    wait_policy(tfjobs, "edited-tfjob")
    tfjobs.api.patch(policy_path(tfjobs.namespace, "edited-tfjob"),
                     {"spec": {"ingress": [{"from": [{"podSelector": {}}]}]}})
    wait_policy(tfjobs, "edited-tfjob", lambda p: len(p["spec"]["ingress"]) == 2, "restored")


def test_a_new_tf_port_updates_the_policy(tfjobs: Any) -> None:
    isolated(tfjobs, "moved")
    wait_policy(tfjobs, "moved-tfjob")
    tfjobs.wait_condition("moved", "Running")
    template = {"spec": {"containers": [container(DEVCLUSTER_IMAGE, port=3333)]}}
    tfjobs.patch("moved", {role: {"template": template} for role in ("chief", "ps", "worker")})
    found = wait_policy(tfjobs, "moved-tfjob",
                        lambda p: p["spec"]["ingress"][0]["ports"] == [{"protocol": "TCP", "port": 3333}],
                        "on port 3333")
    assert found["spec"]["ingress"][1]["ports"][:2] == [{"protocol": "TCP", "port": 1, "endPort": 3332},
                                                        {"protocol": "TCP", "port": 3334, "endPort": 65535}]


def test_turning_isolation_off_deletes_the_policy(tfjobs: Any) -> None:
    isolated(tfjobs, "relaxed")
    wait_policy(tfjobs, "relaxed-tfjob")
    tfjobs.patch("relaxed", {"networkPolicy": {"enabled": False}})
    tfjobs.wait_for(lambda: policy(tfjobs.api, tfjobs.namespace, "relaxed-tfjob") is None, 60, "the policy to go")


def test_deleting_the_job_garbage_collects_its_policy(tfjobs: Any) -> None:
    isolated(tfjobs, "gone")
    wait_policy(tfjobs, "gone-tfjob")
    tfjobs.delete("gone")
    tfjobs.wait_for(lambda: policy(tfjobs.api, tfjobs.namespace, "gone-tfjob") is None, 90,
                    "garbage collection of the job's policy")


def test_pods_wait_while_a_foreign_policy_holds_the_name(tfjobs: Any) -> None:
    foreign = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
               "metadata": {"name": "held-tfjob"}, "spec": {"podSelector": {}, "policyTypes": ["Ingress"]}}
    tfjobs.api.create(policy_path(tfjobs.namespace), foreign)
    isolated(tfjobs, "held")
    running = tfjobs.wait_for(lambda: (tfjobs.condition("held", "Running") or {}).get("reason") == "NameConflict"
                              and tfjobs.condition("held", "Running"), 60, "a NameConflict on the job")
    assert "NetworkPolicy held-tfjob already exists" in running["message"]
    assert tfjobs.pods("held") == []
    untouched = policy(tfjobs.api, tfjobs.namespace, "held-tfjob")
    assert untouched is not None and "ownerReferences" not in untouched["metadata"]


def test_the_operator_default_gives_jobs_a_policy_unless_they_refuse(
        no_session_operator: None, tfjobs_no_operator: Any, start_operator: Callable[..., Any]) -> None:
    jobs = tfjobs_no_operator
    start_operator(["--network-policy", "on"])
    jobs.create("plain", worker=jobs.role(1))
    jobs.create("open", worker=jobs.role(1), networkPolicy={"enabled": False})
    wait_policy(jobs, "plain-tfjob")
    jobs.wait_pods("open", 1)
    jobs.wait_condition("open", "Running")
    assert policy(jobs.api, jobs.namespace, "open-tfjob") is None


def test_the_namespaced_roles_grants_are_enough_to_manage_policies_without_a_403(
        no_session_operator: None, tfjobs_no_operator: Any, start_operator: Callable[..., Any]) -> None:
    jobs = tfjobs_no_operator
    namespace, rbac = jobs.namespace, "rbac.authorization.k8s.io"
    jobs.api.create(resource_path("", "v1", "serviceaccounts", namespace),
                    {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "operator"}})
    role = next(o for o in yaml.safe_load_all((ROOT / "manifests" / "namespaced" / "role.yaml").read_text())
                if o and o["kind"] == "Role")
    role["metadata"] = {"name": "tfjob-operator", "namespace": namespace}
    jobs.api.create(resource_path(rbac, "v1", "roles", namespace), role)
    jobs.api.create(resource_path(rbac, "v1", "rolebindings", namespace), {
        "apiVersion": f"{rbac}/v1", "kind": "RoleBinding", "metadata": {"name": "tfjob-operator"},
        "roleRef": {"apiGroup": rbac, "kind": "Role", "name": "tfjob-operator"},
        "subjects": [{"kind": "ServiceAccount", "name": "operator", "namespace": namespace}]})
    kubeconfig = jobs.cluster.service_account_kubeconfig(namespace, "operator")
    # A later --kubeconfig wins: the operator runs as the ServiceAccount, in namespaced mode.
    operator = start_operator(["--kubeconfig", str(kubeconfig), "--namespace", namespace, "--kueue", "off"])

    isolated(jobs, "least")  # create
    first = wait_policy(jobs, "least-tfjob")
    template = {"spec": {"containers": [container(DEVCLUSTER_IMAGE, port=3333)]}}
    jobs.patch("least", {role: {"template": template} for role in ("chief", "ps", "worker")})
    wait_policy(jobs, "least-tfjob", lambda p: p["spec"]["ingress"][0]["ports"][0]["port"] == 3333, "patched")
    jobs.api.delete(policy_path(namespace, "least-tfjob"))
    wait_policy(jobs, "least-tfjob", lambda p: p["metadata"]["uid"] != first["metadata"]["uid"], "recreated")
    jobs.patch("least", {"networkPolicy": {"enabled": False}})
    jobs.wait_for(lambda: policy(jobs.api, namespace, "least-tfjob") is None, 60, "the policy to be deleted")
    log = operator.log_path.read_text(errors="replace").splitlines()
    run = log[max(i for i, line in enumerate(log) if '"event": "starting"' in line):]
    assert [line for line in run if '"status": 403' in line or "forbidden" in line.lower()] == []
