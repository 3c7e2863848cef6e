"""What the job's NetworkPolicy admits, decided by an evaluator of the Kubernetes semantics
(tests/unit/controller/netpol_eval.py) for the job's real pods (the builders'), a foreign pod, and the
peers a user allows: the TF port only from the job and its allowed peers, every other port as before."""

from __future__ import annotations

from typing import Any

import pytest

from controller.job.builders import build_pods
from controller.job.kinds import TENSORFLOWJOB
from controller.job.netpol import build_network_policy
from tests.support.jobs import container, role, tfjob
from tests.unit.controller.netpol_eval import Pod, ingress_allowed
from tfjob_api.defaults import apply_defaults

NAMESPACES = {"team-a": {"kubernetes.io/metadata.name": "team-a"},
              "monitoring": {"kubernetes.io/metadata.name": "monitoring", "purpose": "monitoring"}}
FOREIGN = Pod("intruder", "team-a", {"app": "intruder"}, ip="10.244.9.9")
OTHER_NAMESPACE = Pod("visitor", "other", {"tensorflowjob.kubeflow.org/job-name": "mnist"}, ip="10.244.8.8")
TENSORBOARD = Pod("tensorboard", "team-a", {"app": "tensorboard"}, ip="10.244.7.7")
SCRAPER = Pod("prometheus", "monitoring", {"app": "prometheus"}, ip="10.244.6.6")


def make(spec: dict[str, Any]) -> dict[str, Any]:
    return apply_defaults(tfjob("mnist", spec, namespace="team-a", uid="uid-1"))


def pods_of(job: dict[str, Any]) -> list[Pod]:
    return [Pod.from_manifest(p, ip=f"10.244.1.{i + 1}") for i, p in enumerate(build_pods(job, "", (), TENSORFLOWJOB))]


def allowed(job: dict[str, Any], source: Pod, target: Pod, port: int, protocol: str = "TCP",
            extra: list[dict[str, Any]] | None = None) -> bool:
    return ingress_allowed([build_network_policy(job, TENSORFLOWJOB), *(extra or [])], source, target, port, protocol, NAMESPACES)


def enabled(**settings: Any) -> dict[str, Any]:
    return {"enabled": True, **settings}


@pytest.fixture
def ps_job() -> dict[str, Any]:
    return make({"chief": role(1), "ps": role(2), "worker": role(3), "evaluator": role(1),
                 "networkPolicy": enabled()})


# ---- the evaluator follows the API's semantics --------------------------------------------------------


def test_the_evaluator_admits_everything_to_a_pod_no_policy_selects() -> None:
    target = Pod("web", "team-a", {"app": "web"})
    deny_db = {"metadata": {"namespace": "team-a"}, "spec": {"podSelector": {"matchLabels": {"app": "db"}},
                                                             "policyTypes": ["Ingress"]}}
    assert ingress_allowed([deny_db], FOREIGN, target, 80)


def test_the_evaluator_isolates_with_an_empty_pod_selector_and_adds_policies_up() -> None:
    target = Pod("web", "team-a", {"app": "web"})
    deny_all = {"metadata": {"namespace": "team-a"}, "spec": {"podSelector": {}, "policyTypes": ["Ingress"]}}
    allow_80 = {"metadata": {"namespace": "team-a"}, "spec": {"podSelector": {}, "ingress": [{"ports": [{"port": 80}]}]}}
    assert not ingress_allowed([deny_all], FOREIGN, target, 80)
    assert ingress_allowed([deny_all, allow_80], FOREIGN, target, 80)
    assert not ingress_allowed([deny_all, allow_80], FOREIGN, target, 81)


def test_the_evaluator_resolves_named_ports_ranges_and_ip_blocks() -> None:
    target = Pod("web", "team-a", {}, named_ports={("http", "TCP"): 8080})
    policy = {"metadata": {"namespace": "team-a"}, "spec": {"podSelector": {}, "ingress": [
        {"ports": [{"port": "http"}, {"port": 9000, "endPort": 9010}]},
        {"from": [{"ipBlock": {"cidr": "10.244.0.0/16", "except": ["10.244.9.0/24"]}}], "ports": [{"port": 22}]}]}}
    assert ingress_allowed([policy], FOREIGN, target, 8080)
    assert ingress_allowed([policy], FOREIGN, target, 9010)
    assert not ingress_allowed([policy], FOREIGN, target, 9011)
    assert ingress_allowed([policy], TENSORBOARD, target, 22)
    assert not ingress_allowed([policy], FOREIGN, target, 22)  # in the except block


# ---- the job's own pods and strangers ---------------------------------------------------------------------


def test_every_pod_of_the_job_reaches_every_other_on_the_tf_port(ps_job: dict[str, Any]) -> None:
    pods = pods_of(ps_job)
    assert len(pods) == 7
    assert all(allowed(ps_job, source, target, 2222) for source in pods for target in pods)


def test_a_foreign_pod_of_the_namespace_cannot_reach_the_tf_port(ps_job: dict[str, Any]) -> None:
    assert not any(allowed(ps_job, FOREIGN, target, 2222) for target in pods_of(ps_job))


def test_a_pod_of_another_namespace_with_the_jobs_labels_cannot_reach_the_tf_port(ps_job: dict[str, Any]) -> None:
    assert not any(allowed(ps_job, OTHER_NAMESPACE, target, 2222) for target in pods_of(ps_job))


@pytest.mark.parametrize(("port", "protocol"), [(1, "TCP"), (2221, "TCP"), (2223, "TCP"), (6006, "TCP"),
                                                 (65535, "TCP"), (2222, "UDP"), (53, "UDP"), (2222, "SCTP")])
def test_every_other_port_stays_open_to_anyone(ps_job: dict[str, Any], port: int, protocol: str) -> None:
    assert all(allowed(ps_job, FOREIGN, target, port, protocol) for target in pods_of(ps_job))


def test_an_allowed_pod_selector_reaches_the_tf_port() -> None:
    job = make({"worker": role(2), "networkPolicy": enabled(allowFrom=[{"podSelector": {"matchLabels":
                                                                                       {"app": "tensorboard"}}}])})
    assert all(allowed(job, TENSORBOARD, target, 2222) for target in pods_of(job))
    assert not any(allowed(job, FOREIGN, target, 2222) for target in pods_of(job))


def test_an_allowed_namespace_selector_admits_its_pods_only() -> None:
    job = make({"worker": role(1), "networkPolicy": enabled(allowFrom=[{"namespaceSelector": {"matchLabels":
                                                                                             {"purpose": "monitoring"}}}])})
    target = pods_of(job)[0]
    assert allowed(job, SCRAPER, target, 2222)
    assert not allowed(job, FOREIGN, target, 2222)


def test_other_ports_deny_leaves_them_to_other_policies() -> None:
    job = make({"worker": role(2), "networkPolicy": enabled(otherPorts="Deny")})
    target = pods_of(job)[0]
    assert not allowed(job, FOREIGN, target, 8080)
    allow_metrics = {"metadata": {"namespace": "team-a"}, "spec": {"podSelector": {}, "ingress": [
        {"ports": [{"port": 8080}]}]}}
    assert allowed(job, FOREIGN, target, 8080, extra=[allow_metrics])
    assert allowed(job, pods_of(job)[1], target, 2222)


def test_other_ports_allow_widens_a_stricter_policy_of_the_namespace(ps_job: dict[str, Any]) -> None:
    deny_all = {"metadata": {"namespace": "team-a"}, "spec": {"podSelector": {}, "policyTypes": ["Ingress"]}}
    target = pods_of(ps_job)[0]
    assert allowed(ps_job, FOREIGN, target, 8080, extra=[deny_all])  # policies add up: documented
    assert not allowed(ps_job, FOREIGN, target, 2222, extra=[deny_all])


# ---- ports ------------------------------------------------------------------------------------------------


def test_a_custom_tf_port_is_the_one_restricted() -> None:
    job = make({"worker": role(2, containers=[container(port=3333)]), "networkPolicy": enabled()})
    target = pods_of(job)[0]
    assert not allowed(job, FOREIGN, target, 3333)
    assert allowed(job, FOREIGN, target, 2222)
    assert allowed(job, pods_of(job)[1], target, 3333)


def test_roles_on_different_ports_are_all_restricted() -> None:
    job = make({"chief": role(1, containers=[container(port=5000)]), "worker": role(2), "networkPolicy": enabled()})
    for target in pods_of(job):
        assert not allowed(job, FOREIGN, target, 5000) and not allowed(job, FOREIGN, target, 2222)
        assert allowed(job, FOREIGN, target, 5001) and allowed(job, FOREIGN, target, 2221)


def test_a_sidecar_first_pod_restricts_the_tensorflow_containers_port_not_the_sidecars() -> None:
    containers = [container("envoy", name="proxy", ports=[{"name": "http", "containerPort": 8080}]),
                  container(port=4000)]
    job = make({"worker": role(2, containers=containers), "networkPolicy": enabled()})
    target = pods_of(job)[0]
    assert not allowed(job, FOREIGN, target, 4000)
    assert allowed(job, FOREIGN, target, 8080)
    assert allowed(job, pods_of(job)[1], target, 4000)


def test_a_role_with_zero_replicas_adds_no_port() -> None:
    job = make({"ps": role(0, containers=[container(port=4444)]), "worker": role(2), "networkPolicy": enabled()})
    target = pods_of(job)[0]
    assert len(pods_of(job)) == 2
    assert allowed(job, FOREIGN, target, 4444)
    assert not allowed(job, FOREIGN, target, 2222)


def test_scaling_a_role_up_adds_its_port() -> None:
    job = make({"ps": role(1, containers=[container(port=4444)]), "worker": role(2), "networkPolicy": enabled()})
    ps = next(p for p in pods_of(job) if "-ps-" in p.name)
    assert not allowed(job, FOREIGN, ps, 4444)
    assert allowed(job, pods_of(job)[-1], ps, 4444)
