"""Generate manifests/crd.yaml: the TensorFlowJob CRD with the real PodTemplateSpec schema embedded.

The CRDs themselves (schemas, rules, columns, names, defaults) are built by `tfjob_api.schema` and
`tfjob_api.kubeflow_schema`; this script only fetches Kubernetes' OpenAPI documents, inlines their
references, and writes the YAML.

Why generated: the API server rejects `$ref` in CRD schemas, yet we want `kubectl explain` to work
and typos in pod templates to be rejected at `kubectl apply` time. So this script takes Kubernetes'
own published OpenAPI v3 document (shipped inside the `k8s.io/kubernetes` Go module that the local
control plane is built from), inlines every `$ref` under PodTemplateSpec, and keeps only what a
*structural* schema may contain. Descriptions inside the pod template are dropped to keep the CRD
small (four roles embed it); `defaults` inside it are dropped so the API server never rewrites the
user's template. The peers of `spec.networkPolicy.allowFrom` embed the real NetworkPolicyPeer schema
the same way, from the networking.k8s.io/v1 document beside it (docs/production.md describes the
stall rule, network isolation and the other production features). Run:
`python hack/gen_crd.py [path/to/api__v1_openapi.json]`.

It also writes manifests/kubeflow/: the same CRD without its short name, and the CRD of Kubeflow's
`TFJob` kind as this operator serves it (tfjob_api/kubeflow_schema.py, docs/kubeflow.md). tfjob_api/crds/ links to
manifests/crd.yaml and manifests/kubeflow/tfjob-crd.yaml: the wheel ships them as package data of `tfjob_api`.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
from typing import Any

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # `python hack/gen_crd.py` runs without the project installed
from tfjob_api.kubeflow_schema import build_tfjob_crd  # noqa: E402
from tfjob_api.schema import Component, build_crd, template_metadata_schema, without_short_names  # noqa: E402

K8S_VERSION = next(
    line.split("=", 1)[1].strip()
    for line in (ROOT / "devcluster" / "versions.env").read_text().splitlines()
    if line.startswith("K8S_VERSION=")
)

# Keywords a structural schema may carry (value validations and the allowed extensions).
KEPT_KEYWORDS = {
    "type", "properties", "additionalProperties", "items", "required", "enum", "nullable",
    "maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum", "maxLength", "minLength",
    "pattern", "maxItems", "minItems", "uniqueItems", "maxProperties", "minProperties",
}
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
NETWORKING_DOCUMENT = "apis__networking.k8s.io__v1_openapi.json"


def openapi_path() -> pathlib.Path:
    modcache = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=True)
    base = pathlib.Path(modcache.stdout.strip()) / f"k8s.io/kubernetes@v{K8S_VERSION}"
    return base / "api/openapi-spec/v3/api__v1_openapi.json"


class Inliner:
    """Turns OpenAPI component schemas into self-contained structural schemas."""

    def __init__(self, schemas: dict[str, Any]) -> None:
        self.schemas = schemas

    def component(self, name: str, stack: tuple[str, ...] = ()) -> dict[str, Any]:
        if name in stack:
            raise ValueError(f"recursive schema: {' -> '.join((*stack, name))}")
        if name == QUANTITY:
            # Quantities are written as 1, 0.5 or "500m"; int-or-string would refuse 0.5,
            # so accept any scalar and let the pod's own validation judge it.
            return {"x-kubernetes-preserve-unknown-fields": True}
        if name == INT_OR_STRING:
            return {"x-kubernetes-int-or-string": True}
        if name == OBJECT_META:
            return template_metadata_schema()
        return self.convert(self.schemas[name], (*stack, name))

    def convert(self, node: dict[str, Any], stack: tuple[str, ...]) -> dict[str, Any]:
        if "$ref" in node:
            return self.component(node["$ref"].rsplit("/", 1)[1], stack)
        if "allOf" in node and len(node["allOf"]) == 1:
            return self.convert(node["allOf"][0], stack)
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key not in KEPT_KEYWORDS:
                continue
            if key == "properties":
                out[key] = {name: self.convert(sub, stack) for name, sub in value.items()}
            elif key in ("items", "additionalProperties") and isinstance(value, dict):
                out[key] = self.convert(value, stack)
            else:
                out[key] = value
        if "type" not in out and "properties" in out:
            out["type"] = "object"
        return out


def inlined_components(source: pathlib.Path) -> Component:
    """The `Component` function of the core/v1 OpenAPI document at `source` and the networking.k8s.io/v1
    document beside it: a named component schema with every reference inlined, new at every call."""
    openapi = json.loads(source.read_text())
    networking = json.loads(source.with_name(NETWORKING_DOCUMENT).read_text())
    return Inliner({**openapi["components"]["schemas"], **networking["components"]["schemas"]}).component


def as_yaml(crd: dict[str, Any], note: str) -> str:
    header = (
        "# GENERATED by hack/gen_crd.py from Kubernetes v" + K8S_VERSION + "'s OpenAPI document; do not edit.\n"
        f"# {note}\n"
        "# Large (the pod template schema is embedded per role): install with `kubectl apply --server-side`.\n"
    )
    return header + yaml.safe_dump(crd, sort_keys=False, width=120)


def crd_files(component: Component) -> dict[str, str]:
    """The generated files' text by their path in the repository."""
    crd = build_crd(component)
    return {
        "manifests/crd.yaml": as_yaml(
            crd, "The TensorFlowJob CRD (short name tfjob), for clusters without a TFJob CRD."),
        "manifests/kubeflow/tensorflowjob-crd.yaml": as_yaml(
            without_short_names(crd),
            "The TensorFlowJob CRD without its short name, for clusters that serve a TFJob CRD (docs/kubeflow.md)."),
        "manifests/kubeflow/tfjob-crd.yaml": as_yaml(
            build_tfjob_crd(component), "Kubeflow's TFJob kind as this operator serves it (docs/kubeflow.md)."),
    }


def main(argv: list[str]) -> int:
    source = pathlib.Path(argv[1]) if len(argv) > 1 else openapi_path()
    for relative, text in crd_files(inlined_components(source)).items():
        (ROOT / relative).write_text(text)
        print(f"wrote {relative} ({len(text)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
