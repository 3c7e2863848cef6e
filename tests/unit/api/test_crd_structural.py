"""Lint manifests/crd.yaml against the API server's structural-schema rules.

The real API server applies it in the integration tests; this catches the mistakes early and
names the offending path: no $ref/allOf-style keywords, a type on every node (unless int-or-string
or preserve-unknown-fields), no additionalProperties beside properties, metadata only as allowed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tfjob_api.crd import crd, job_schema

FORBIDDEN = {"$ref", "definitions", "dependencies", "patternProperties", "id", "$schema", "additionalItems",
             "allOf", "oneOf", "anyOf", "not", "readOnly", "x-kubernetes-patch-strategy",
             "x-kubernetes-patch-merge-key", "x-kubernetes-group-version-kind"}
ALLOWED_EXTENSIONS = {"x-kubernetes-preserve-unknown-fields", "x-kubernetes-int-or-string",
                      "x-kubernetes-embedded-resource", "x-kubernetes-list-type", "x-kubernetes-list-map-keys",
                      "x-kubernetes-map-type", "x-kubernetes-validations"}


def nodes(schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    yield path, schema
    for name, sub in (schema.get("properties") or {}).items():
        yield from nodes(sub, f"{path}.{name}")
    if isinstance(schema.get("items"), dict):
        yield from nodes(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from nodes(schema["additionalProperties"], f"{path}{{}}")


def test_no_forbidden_keywords_anywhere() -> None:
    offenders = [f"{p}: {k}" for p, n in nodes(job_schema()) for k in n if k in FORBIDDEN]
    assert offenders == []


def test_only_known_kubernetes_extensions() -> None:
    offenders = [f"{p}: {k}" for p, n in nodes(job_schema()) for k in n
                 if k.startswith("x-kubernetes-") and k not in ALLOWED_EXTENSIONS]
    assert offenders == []


def test_every_node_has_a_type_unless_int_or_string_or_preserved() -> None:
    untyped = [p for p, n in nodes(job_schema())
               if "type" not in n and not n.get("x-kubernetes-int-or-string")
               and not n.get("x-kubernetes-preserve-unknown-fields")]
    assert untyped == []


def test_properties_and_additional_properties_are_never_combined() -> None:
    both = [p for p, n in nodes(job_schema()) if "properties" in n and "additionalProperties" in n]
    assert both == []


def test_root_metadata_only_declares_type_object() -> None:
    assert job_schema()["properties"]["metadata"] == {"type": "object"}


def test_defaults_never_appear_inside_the_pod_template() -> None:
    inside = [p for p, n in nodes(job_schema()) if ".template" in p and "default" in n]
    assert inside == []


def test_list_map_keys_are_required_or_defaulted() -> None:
    for path, node in nodes(job_schema()):
        for key in node.get("x-kubernetes-list-map-keys", []):
            item = node["items"]
            assert key in item.get("required", []) or "default" in item["properties"][key], f"{path}: {key}"


@pytest.mark.parametrize("subresource", ["status", "scale"])
def test_served_version_has_subresource(subresource: str) -> None:
    assert subresource in crd()["spec"]["versions"][0]["subresources"]


def test_names_and_printer_columns() -> None:
    spec = crd()["spec"]
    assert spec["names"]["shortNames"] == ["tfjob"]
    assert spec["names"]["kind"] == "TensorFlowJob"
    columns = [c["name"] for c in spec["versions"][0]["additionalPrinterColumns"] if not c.get("priority")]
    assert columns == ["State", "Workers", "PS", "Restarts", "Progress", "ETA", "Age"]


def test_wide_printer_columns_add_start_completion_and_metrics() -> None:
    columns = crd()["spec"]["versions"][0]["additionalPrinterColumns"]
    assert [(c["name"], c["jsonPath"]) for c in columns if c.get("priority") == 1] == [
        ("Started", ".status.startTime"), ("Completed", ".status.completionTime"),
        ("Metrics", ".status.progress.metricsSummary")]


def test_scale_subresource_targets_workers() -> None:
    scale = crd()["spec"]["versions"][0]["subresources"]["scale"]
    assert scale["specReplicasPath"] == ".spec.worker.replicas"
    assert scale["labelSelectorPath"] == ".status.replicaStatuses.worker.selector"
