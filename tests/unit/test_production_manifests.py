"""The install manifests and examples carry the production features: least-privilege RBAC for the jobs'
NetworkPolicies, the CRD's stall rule and networkPolicy (with the same rule wording as `validate`),
and examples that run on the local cluster or say what they need."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest
import yaml

from controller.job import validation
from controller.job.crd import job_schema
from tfconfig import ROLES

ROOT = pathlib.Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "manifests"
EXAMPLES = MANIFESTS / "examples"
POLICY_VERBS = {"get", "list", "watch", "create", "patch", "delete"}


def objects(path: pathlib.Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def granted(role: dict[str, Any], group: str, resource: str) -> set[str]:
    return {verb for rule in role["rules"] if group in rule["apiGroups"] and resource in rule["resources"]
            for verb in rule["verbs"]}


@pytest.mark.parametrize(("path", "kind"), [(MANIFESTS / "rbac" / "clusterrole.yaml", "ClusterRole"),
                                            (MANIFESTS / "namespaced" / "role.yaml", "Role")])
def test_the_operator_may_manage_network_policies_and_nothing_more_of_networking(path: pathlib.Path,
                                                                                 kind: str) -> None:
    role = next(o for o in objects(path) if o["kind"] == kind)
    assert granted(role, "networking.k8s.io", "networkpolicies") == POLICY_VERBS
    networking = [r for r in role["rules"] if "networking.k8s.io" in r["apiGroups"]]
    assert [r["resources"] for r in networking] == [["networkpolicies"]]


def test_every_role_has_the_stall_rule_in_the_crd() -> None:
    spec = job_schema()["properties"]["spec"]["properties"]
    for role in ROLES:
        stall = spec[role]["properties"]["stall"]
        assert set(stall["properties"]) == {"timeoutSeconds", "startupSeconds", "heartbeat", "path", "port"}
        messages = {rule["message"] for rule in stall["x-kubernetes-validations"]}
        assert messages == {"port is required with heartbeat: http", "port is only used with heartbeat: http"}


def test_the_crds_peer_rule_speaks_the_words_of_validate() -> None:
    policy = job_schema()["properties"]["spec"]["properties"]["networkPolicy"]
    peer = policy["properties"]["allowFrom"]["items"]
    assert set(peer["properties"]) == {"podSelector", "namespaceSelector", "ipBlock"}
    assert [rule["message"] for rule in peer["x-kubernetes-validations"]] == [validation.PEER_RULE_MESSAGE]
    assert "default" not in policy["properties"]["enabled"]  # unset means: the operator's --network-policy


def test_the_parameter_server_example_names_the_claim_its_storage_files_provide() -> None:
    job = objects(EXAMPLES / "parameter-server.yaml")[0]
    claims = [v["persistentVolumeClaim"]["claimName"] for role in ROLES if role in job["spec"]
              for v in job["spec"][role]["template"]["spec"].get("volumes") or [] if "persistentVolumeClaim" in v]
    claim = objects(EXAMPLES / "storage" / "mnist-data-pvc.yaml")[0]
    assert claims == [claim["metadata"]["name"]]
    assert "storage/mnist-data-pvc.yaml" in (EXAMPLES / "parameter-server.yaml").read_text()


def test_the_local_volume_binds_the_examples_claim() -> None:
    claim = objects(EXAMPLES / "storage" / "mnist-data-pvc.yaml")[0]
    volume = objects(EXAMPLES / "storage" / "mnist-data-local-pv.yaml")[0]
    assert "storageClassName" not in claim["spec"] and volume["spec"]["storageClassName"] == ""
    assert set(claim["spec"]["accessModes"]) <= set(volume["spec"]["accessModes"])
    assert claim["spec"]["resources"]["requests"]["storage"] == volume["spec"]["capacity"]["storage"]
    assert "namespace" not in claim["metadata"]  # applied into the job's namespace with -n


def test_the_examples_folder_holds_only_jobs_at_its_top_level() -> None:
    for path in EXAMPLES.glob("*.yaml"):
        assert [o["kind"] for o in objects(path)] == ["TensorFlowJob"], path.name


def test_the_stall_example_uses_the_heartbeat_helper_the_way_its_job_says() -> None:
    job = objects(EXAMPLES / "stall-detection.yaml")[0]
    script = (EXAMPLES / "train_with_heartbeat.py").read_text()
    assert "stall" in job["spec"]["worker"]
    assert "tfheartbeat.HeartbeatCallback()" in script and "tfheartbeat.pausing(" in script
