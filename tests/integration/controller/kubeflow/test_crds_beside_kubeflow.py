"""The TensorFlowJob CRD beside a TFJob CRD: as shipped for clusters without one (short name `tfjob`)
the second of the two is not served; as manifests/kubeflow/ ships them both are, in either order.

Each case uses an API group of its own (the API server checks names within a group), so the
session's own CRDs are not touched."""

from __future__ import annotations

import copy
import pathlib
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from kube import ApiError, Kube, resource_path
from tests.support.polling import wait_for

ROOT = pathlib.Path(__file__).resolve().parents[4]
DEFAULT_TENSORFLOWJOB = ROOT / "manifests" / "crd.yaml"
KUBEFLOW_TENSORFLOWJOB = ROOT / "manifests" / "kubeflow" / "tensorflowjob-crd.yaml"
TFJOB = ROOT / "manifests" / "kubeflow" / "tfjob-crd.yaml"
CRDS = ("apiextensions.k8s.io", "v1", "customresourcedefinitions")


def in_group(path: pathlib.Path, group: str) -> dict[str, Any]:
    crd = copy.deepcopy(yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))
    crd["spec"]["group"] = group
    crd["metadata"]["name"] = f"{crd['spec']['names']['plural']}.{group}"
    return crd


class Group:
    def __init__(self, api: Kube) -> None:
        self.api = api
        self.name = f"kubeflow-{uuid.uuid4().hex[:8]}.example.com"
        self.created: list[str] = []

    def apply(self, path: pathlib.Path) -> str:
        crd = in_group(path, self.name)
        self.api.create(resource_path(*CRDS), crd)
        self.created.append(crd["metadata"]["name"])
        return crd["metadata"]["name"]

    def condition(self, name: str, kind: str) -> str | None:
        conditions = (self.api.get(resource_path(*CRDS, None, name)).get("status") or {}).get("conditions") or []
        return next((c["status"] for c in conditions if c["type"] == kind), None)

    def served(self, name: str) -> bool:
        return self.condition(name, "NamesAccepted") == "True" and self.condition(name, "Established") == "True"


@pytest.fixture
def group(api: Kube) -> Iterator[Group]:
    created = Group(api)
    yield created
    for name in created.created:
        try:
            api.delete(resource_path(*CRDS, None, name))
        except ApiError as error:
            if not error.not_found:
                raise


@pytest.mark.parametrize("tensorflowjob_first", [True, False], ids=["tensorflowjob-first", "tfjob-first"])
def test_the_kubeflow_install_serves_both_crds_in_either_order(group: Group, tensorflowjob_first: bool) -> None:
    order = [KUBEFLOW_TENSORFLOWJOB, TFJOB] if tensorflowjob_first else [TFJOB, KUBEFLOW_TENSORFLOWJOB]
    names = [group.apply(path) for path in order]
    wait_for(lambda: all(group.served(name) for name in names), 60, f"{names} to be Established")


def test_the_default_tensorflowjob_crd_keeps_a_tfjob_crd_applied_after_it_from_being_served(group: Group) -> None:
    tensorflowjob = group.apply(DEFAULT_TENSORFLOWJOB)
    wait_for(lambda: group.served(tensorflowjob), 60, "the TensorFlowJob CRD to be Established")
    tfjob = group.apply(TFJOB)
    wait_for(lambda: group.condition(tfjob, "NamesAccepted") == "False", 60, "the TFJob CRD's names to be refused")
    assert group.condition(tfjob, "Established") != "True"
