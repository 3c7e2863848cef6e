"""The CRD builders (`tfjob_api.schema`, `tfjob_api.kubeflow_schema`) produce exactly the committed CRDs.

Without Kubernetes' OpenAPI document, the parts the builders embed from it (the PodSpec and the
NetworkPolicyPeer schema) are taken back out of the committed files, so everything the builders
decide themselves — fields, defaults, enums, rules, columns, names — is compared with what is
committed. With the document at hand (the local control plane's Go module cache), the generator's
output is compared byte for byte.
"""

from __future__ import annotations

import copy
import importlib.util
import pathlib
import subprocess
from types import ModuleType
from typing import Any

import pytest
import yaml

from tfconfig import ROLES
from tfjob_api import kubeflow
from tfjob_api.crd import crd, tfjob_crd
from tfjob_api.defaults import BACKOFF_LIMIT, CLEAN_POD_POLICY, RESTART_POLICY
from tfjob_api.kubeflow_schema import build_tfjob_crd
from tfjob_api.schema import NETWORK_POLICY_PEER, POD_SPEC, Component, build_crd, without_short_names

ROOT = pathlib.Path(__file__).resolve().parents[3]


def schema_of(document: dict[str, Any]) -> dict[str, Any]:
    return document["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def components_of(document: dict[str, Any]) -> Component:
    """The embedded Kubernetes schemas of a committed TensorFlowJob CRD, a new copy at every call."""
    spec = schema_of(document)["properties"]["spec"]["properties"]
    peer = dict(spec["networkPolicy"]["properties"]["allowFrom"]["items"])
    peer.pop("x-kubernetes-validations")  # the builder's own rule on the peer
    parts = {POD_SPEC: spec["chief"]["properties"]["template"]["properties"]["spec"], NETWORK_POLICY_PEER: peer}
    return lambda name: copy.deepcopy(parts[name])


def test_the_tensorflowjob_crd_is_what_the_builders_make() -> None:
    assert build_crd(components_of(crd())) == crd()


def test_the_crd_without_the_short_name_is_the_one_the_kubeflow_install_serves() -> None:
    committed = yaml.load((ROOT / "manifests" / "kubeflow" / "tensorflowjob-crd.yaml").read_text(),
                          Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    assert without_short_names(build_crd(components_of(crd()))) == committed


def test_the_tfjob_crd_is_what_the_builders_make() -> None:
    assert build_tfjob_crd(components_of(crd())) == tfjob_crd()


def test_the_schema_states_the_defaults_the_code_falls_back_on() -> None:
    spec = schema_of(build_crd(components_of(crd())))["properties"]["spec"]["properties"]
    assert spec["cleanPodPolicy"]["default"] == CLEAN_POD_POLICY
    assert spec["backoffLimit"]["default"] == BACKOFF_LIMIT
    assert {spec[role]["properties"]["restartPolicy"]["default"] for role in ROLES} == {RESTART_POLICY}


def test_the_schema_has_one_entry_per_role_and_the_tfjob_crd_knows_the_managed_by_values() -> None:
    spec = schema_of(build_crd(components_of(crd())))["properties"]["spec"]["properties"]
    assert [name for name in spec if name in ROLES] == list(ROLES)
    run_policy = schema_of(build_tfjob_crd(components_of(crd())))["properties"]["spec"]["properties"]["runPolicy"]
    assert run_policy["properties"]["managedBy"]["enum"] == list(kubeflow.MANAGED_BY_VALUES)


def test_the_builders_do_not_share_what_one_component_call_returned() -> None:
    calls: list[str] = []
    component = components_of(crd())

    def counting(name: str) -> dict[str, Any]:
        calls.append(name)
        return component(name)

    build_crd(counting)
    build_tfjob_crd(counting)
    assert calls == [POD_SPEC, NETWORK_POLICY_PEER, POD_SPEC]


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_crd", ROOT / "hack" / "gen_crd.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_generator_reproduces_the_committed_files_byte_for_byte() -> None:
    gen_crd = generator()
    source = gen_crd.openapi_path()  # Go is needed, as for the local cluster's binaries
    if not source.exists():  # the module cache is filled by the control plane's build; fetch it if not
        subprocess.run(["go", "mod", "download", f"k8s.io/kubernetes@v{gen_crd.K8S_VERSION}"], check=True,
                       capture_output=True)
    assert source.exists(), f"Kubernetes' OpenAPI document is missing after go mod download: {source}"
    for relative, text in gen_crd.crd_files(gen_crd.inlined_components(source)).items():
        assert text == (ROOT / relative).read_text(), f"{relative} differs: run python hack/gen_crd.py"


@pytest.mark.parametrize("relative", ["manifests/crd.yaml", "manifests/kubeflow/tensorflowjob-crd.yaml",
                                      "manifests/kubeflow/tfjob-crd.yaml"])
def test_no_crd_is_in_the_all_category_so_delete_all_leaves_training_jobs(relative: str) -> None:
    committed = yaml.safe_load((ROOT / relative).read_text())
    assert "all" not in committed["spec"]["names"].get("categories", [])
    assert "kubeflow" in committed["spec"]["names"]["categories"]


def test_no_builder_puts_a_crd_in_the_all_category() -> None:
    component = components_of(crd())
    for built in (build_crd(component), without_short_names(build_crd(component)), build_tfjob_crd(component)):
        assert "all" not in built["spec"]["names"]["categories"]
