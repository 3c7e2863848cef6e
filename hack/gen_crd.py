"""Generate manifests/crd.yaml: the TensorFlowJob CRD with the real PodTemplateSpec schema embedded.

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
`TFJob` kind as this operator serves it (hack/tfjob_crd.py, docs/kubeflow.md).
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
from typing import Any

import yaml

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from crd_document import crd_document
from tfjob_crd import build_tfjob_crd

ROOT = pathlib.Path(__file__).resolve().parents[1]
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
ROLES = ("chief", "ps", "worker", "evaluator")
MAX_CONTAINERS = 100  # bounds the CEL cost of the TFJob kind's rule on container names
MAX_ALLOWED_PEERS = 32  # spec.networkPolicy.allowFrom
NETWORKING_DOCUMENT = "apis__networking.k8s.io__v1_openapi.json"
NETWORK_POLICY_PEER = "io.k8s.api.networking.v1.NetworkPolicyPeer"
ONE_WEEK = 7 * 24 * 3600
PEER_RULE_MESSAGE = "a peer is either an ipBlock, or a podSelector and/or a namespaceSelector"


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


def template_metadata_schema() -> dict[str, Any]:
    string_map = {"type": "object", "additionalProperties": {"type": "string"}}
    return {
        "type": "object",
        "properties": {"labels": string_map, "annotations": string_map},
        "x-kubernetes-preserve-unknown-fields": True,
    }


def stall_schema() -> dict[str, Any]:
    """`spec.<role>.stall`: the opt-in rule that restarts a TensorFlow container whose training stopped
    making progress (the operator injects a startup and a liveness probe; docs/production.md)."""
    return {
        "type": "object",
        "description": "Opt-in stall rule: the TensorFlow container gets a startup probe (grace for the first "
        "heartbeat) and a liveness probe that fails when the heartbeat is older than timeoutSeconds. A probe the "
        "template already has wins. The restart counts like any retried failure.",
        "properties": {
            "timeoutSeconds": {
                "type": "integer", "format": "int32", "minimum": 10, "maximum": ONE_WEEK, "default": 600,
                "description": "A heartbeat older than this many seconds means the training stalled. Default 600.",
            },
            "startupSeconds": {
                "type": "integer", "format": "int32", "minimum": 0, "maximum": ONE_WEEK, "default": 600,
                "description": "Grace for the first heartbeat after the container starts (data loading, the "
                "first step). 0: no startup probe. Default 600.",
            },
            "heartbeat": {
                "type": "string", "enum": ["file", "http"], "default": "file",
                "description": "file (default): the training touches a file (tfheartbeat.beat()). http: an HTTP "
                "endpoint of the container answers 2xx while the training makes progress.",
            },
            "path": {
                "type": "string", "pattern": "^/", "maxLength": 1024,
                "description": "file: the heartbeat file (default /tmp/tfjob-heartbeat). http: the URL path "
                "(default /healthz).",
            },
            "port": {
                "type": "integer", "format": "int32", "minimum": 1, "maximum": 65535,
                "description": "http: the port of the health endpoint (required with heartbeat: http).",
            },
        },
        "x-kubernetes-validations": [
            {"rule": "self.heartbeat != 'http' || has(self.port)",
             "message": "port is required with heartbeat: http", "fieldPath": ".port"},
            {"rule": "self.heartbeat == 'http' || !has(self.port)",
             "message": "port is only used with heartbeat: http", "fieldPath": ".port"},
        ],
    }


def network_policy_schema(peer: dict[str, Any]) -> dict[str, Any]:
    """`spec.networkPolicy`: the per-job NetworkPolicy that admits the TF port only from the job's pods."""
    return {
        "type": "object",
        "description": "Per-job network isolation: a NetworkPolicy admitting the job's TF port only from the job's "
        "own pods and allowFrom. Needs a network plugin that enforces NetworkPolicy.",
        "properties": {
            "enabled": {
                "type": "boolean",
                "description": "true: the job gets its NetworkPolicy; false: it does not; unset: the operator's "
                "--network-policy default (off unless the operator says on).",
            },
            "allowFrom": {
                "type": "array", "maxItems": MAX_ALLOWED_PEERS,
                "items": {**peer, "x-kubernetes-validations": [{
                    "rule": "has(self.ipBlock) ? !has(self.podSelector) && !has(self.namespaceSelector) "
                    ": has(self.podSelector) || has(self.namespaceSelector)",
                    "message": PEER_RULE_MESSAGE,
                }]},
                "description": "More peers (NetworkPolicyPeer: podSelector, namespaceSelector, ipBlock) allowed to "
                "reach the TF port, e.g. TensorBoard or a metrics scraper.",
            },
            "otherPorts": {
                "type": "string", "enum": ["Allow", "Deny"], "default": "Allow",
                "description": "Allow (default): every other port of the job's pods accepts connections from "
                "anywhere, as without the policy. Deny: the policy allows nothing else, so other ports are open only "
                "where another NetworkPolicy of the namespace allows them.",
            },
        },
    }


def role_schema(template: dict[str, Any], role: str) -> dict[str, Any]:
    replicas: dict[str, Any] = {
        "type": "integer", "format": "int32", "minimum": 0, "default": 1,
        "description": "Number of pods of this role. Default 1.",
    }
    if role in ("chief", "evaluator"):
        replicas["maximum"] = 1
        replicas["description"] = f"Number of {role} pods: 0 or 1. Default 1."
    return {
        "type": "object",
        "description": f"The {role} role: its replica count, restart policy and pod template.",
        "required": ["template"],
        "properties": {
            "replicas": replicas,
            "restartPolicy": {
                "type": "string", "default": "OnFailure",
                "enum": ["Never", "OnFailure", "Always", "ExitCode"],
                "description": "What a failed pod of this role means. Never: the job fails. OnFailure/Always: "
                "the pod is restarted or recreated (counts against backoffLimit). ExitCode: exit codes 1-127 "
                "fail the job, 128 and above (signals, OOM) are retried.",
            },
            "template": template,
            "stall": stall_schema(),
        },
    }


def name_length_rule(role: str) -> dict[str, Any]:
    # The longest pod name is <job>-<role>-<replicas-1>; it is also the pod's hostname, a DNS label.
    return {
        "rule": f"!has(self.spec.{role}) || self.spec.{role}.replicas == 0 || "
        f"size(self.metadata.name) + {len(role) + 2} + size(string(self.spec.{role}.replicas - 1)) <= 63",
        "message": f"metadata.name is too long: the pod name <name>-{role}-<index> must be at most 63 characters",
    }


def pod_template_schema(inliner: Inliner, description: str) -> dict[str, Any]:
    """A PodTemplateSpec, every `$ref` inlined, at most MAX_CONTAINERS containers and at least one,
    each with an image.

    The image is required by the schema (`required`, `minLength`) rather than by a CEL rule: the API
    server checks both on every write, status writes included, and a CEL rule that walks the
    containers cost about 1 ms of its CPU per status write (a tenth of the write) where the schema's
    check costs next to nothing; the error names the container's field either way."""
    pod_spec = inliner.component("io.k8s.api.core.v1.PodSpec")
    containers = pod_spec["properties"]["containers"]
    containers["maxItems"] = MAX_CONTAINERS
    containers["minItems"] = 1
    containers["items"]["required"] = sorted({*containers["items"].get("required", ()), "image"})
    containers["items"]["properties"]["image"]["minLength"] = 1
    return {
        "type": "object",
        "description": description,
        "required": ["spec"],
        "properties": {"metadata": template_metadata_schema(), "spec": pod_spec},
    }


def build_crd(openapi: dict[str, Any], networking: dict[str, Any]) -> dict[str, Any]:
    inliner = Inliner({**openapi["components"]["schemas"], **networking["components"]["schemas"]})
    template = pod_template_schema(
        inliner, "The pod template (a core/v1 PodTemplateSpec). The container named `tensorflow` "
        "(else the first container) receives TF_CONFIG and the `tfjob-port` port (default 2222).")
    spec_props: dict[str, Any] = {role: role_schema(template, role) for role in ROLES}
    spec_props.update({
        "cleanPodPolicy": {
            "type": "string", "default": "Running", "enum": ["None", "All", "Running"],
            "description": "Which pods are deleted when the job finishes. Running (default): pods still "
            "Pending or Running (PS never exit by themselves). All: every pod and the Service. None: nothing.",
        },
        "ttlSecondsAfterFinished": {
            "type": "integer", "format": "int32", "minimum": 0,
            "description": "Delete the job (and through garbage collection its pods and Service) this many "
            "seconds after it finished.",
        },
        "activeDeadlineSeconds": {
            "type": "integer", "format": "int64", "minimum": 1,
            "description": "Fail the job (reason DeadlineExceeded) when it has run this long, counted from "
            "status.startTime.",
        },
        "backoffLimit": {
            "type": "integer", "format": "int32", "minimum": 0, "default": 6,
            "description": "Retried pod failures allowed before the job is Failed (BackoffLimitExceeded).",
        },
        "successPolicy": {
            "type": "string", "default": "", "enum": ["", "AllWorkers"],
            "description": "\"\" (default): the job succeeds when the chief succeeds, or worker 0 when there "
            "is no chief. AllWorkers: when every worker succeeded.",
        },
        "restartScope": {
            "type": "string", "default": "Pod", "enum": ["Pod", "All"],
            "description": "Pod (default): a retried failure replaces that pod. All: it restarts every pod "
            "of the job (for all-reduce training that cannot lose one member).",
        },
        "suspend": {
            "type": "boolean", "default": False,
            "description": "true: the job's pods and Service are deleted and none are created; "
            "false again resumes it (startTime is reset).",
        },
        "networkPolicy": network_policy_schema(inliner.component(NETWORK_POLICY_PEER)),
    })
    spec = {
        "type": "object",
        "description": "The desired training job: its roles and run policy.",
        "properties": spec_props,
        "x-kubernetes-validations": [
            {
                "rule": "(has(self.chief) && self.chief.replicas > 0) || "
                "(has(self.worker) && self.worker.replicas > 0)",
                "message": "at least one of spec.chief or spec.worker must have replicas > 0",
            },
        ],
    }
    replica_status = {
        "type": "object",
        "properties": {
            "active": {"type": "integer", "format": "int32"},
            "succeeded": {"type": "integer", "format": "int32"},
            "failed": {"type": "integer", "format": "int32"},
            "selector": {"type": "string"},
        },
    }
    condition = {
        "type": "object",
        "required": ["type", "status"],
        "properties": {
            "type": {"type": "string"},
            "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
            "reason": {"type": "string"},
            "message": {"type": "string"},
            "lastTransitionTime": {"type": "string", "format": "date-time"},
            "lastUpdateTime": {"type": "string", "format": "date-time"},
        },
    }
    status = {
        "type": "object",
        "description": "The observed state of the job, written by the operator.",
        "properties": {
            "conditions": {
                "type": "array", "items": condition,
                "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"],
            },
            "state": {"type": "string"},
            "replicaStatuses": {"type": "object", "additionalProperties": replica_status},
            "startTime": {"type": "string", "format": "date-time"},
            "completionTime": {"type": "string", "format": "date-time"},
            "restartCount": {"type": "integer", "format": "int32"},
            "retriedFailures": {"type": "integer", "format": "int32"},
            "countedFailedPods": {"type": "array", "items": {"type": "string"}},
            "observedGeneration": {"type": "integer", "format": "int64"},
        },
    }
    name_rules = [
        {
            "rule": "self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$') && size(self.metadata.name) <= 63",
            "message": "metadata.name must be a DNS-1035 label (lower case letters, digits and '-', starting "
            "with a letter): it names the job's headless Service",
        },
        *(name_length_rule(role) for role in ROLES),
    ]
    schema = {
        "type": "object",
        "description": "A distributed TensorFlow training job: chief, parameter servers, workers and an "
        "evaluator, each a pod template with a replica count.",
        "required": ["spec"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": spec,
            "status": status,
        },
        "x-kubernetes-validations": name_rules,
    }
    columns = [
        {"name": "State", "type": "string", "jsonPath": ".status.state"},
        {"name": "Workers", "type": "integer", "jsonPath": ".status.replicaStatuses.worker.active",
         "description": "Active worker pods"},
        {"name": "PS", "type": "integer", "jsonPath": ".status.replicaStatuses.ps.active",
         "description": "Active parameter-server pods"},
        {"name": "Restarts", "type": "integer", "jsonPath": ".status.restartCount"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        {"name": "Started", "type": "date", "jsonPath": ".status.startTime", "priority": 1},
        {"name": "Completed", "type": "date", "jsonPath": ".status.completionTime", "priority": 1},
    ]
    names = {"kind": "TensorFlowJob", "listKind": "TensorFlowJobList", "plural": "tensorflowjobs",
             "singular": "tensorflowjob", "shortNames": ["tfjob"], "categories": ["all", "kubeflow"]}
    return crd_document(names, schema, ".spec.worker.replicas", ".status.replicaStatuses.worker", columns)


def without_short_names(crd: dict[str, Any]) -> dict[str, Any]:
    """The TensorFlowJob CRD for clusters that serve a TFJob CRD too: the short name `tfjob` is the
    TFJob's singular there, and the API server serves no two CRDs of one group with clashing names."""
    names = {k: v for k, v in crd["spec"]["names"].items() if k != "shortNames"}
    return {**crd, "spec": {**crd["spec"], "names": names}}


def write(relative: str, crd: dict[str, Any], note: str) -> None:
    header = (
        "# GENERATED by hack/gen_crd.py from Kubernetes v" + K8S_VERSION + "'s OpenAPI document; do not edit.\n"
        f"# {note}\n"
        "# Large (the pod template schema is embedded per role): install with `kubectl apply --server-side`.\n"
    )
    body = yaml.safe_dump(crd, sort_keys=False, width=120)
    (ROOT / relative).write_text(header + body)
    print(f"wrote {relative} ({len(body)} bytes)")


def main(argv: list[str]) -> int:
    source = pathlib.Path(argv[1]) if len(argv) > 1 else openapi_path()
    networking = source.with_name(NETWORKING_DOCUMENT)
    openapi, networking_document = json.loads(source.read_text()), json.loads(networking.read_text())
    crd = build_crd(openapi, networking_document)
    write("manifests/crd.yaml", crd, "The TensorFlowJob CRD (short name tfjob), for clusters without a TFJob CRD.")
    write("manifests/kubeflow/tensorflowjob-crd.yaml", without_short_names(crd),
          "The TensorFlowJob CRD without its short name, for clusters that serve a TFJob CRD (docs/kubeflow.md).")
    inliner = Inliner({**openapi["components"]["schemas"], **networking_document["components"]["schemas"]})
    template = pod_template_schema(
        inliner, "The pod template (a core/v1 PodTemplateSpec). The container named `tensorflow` receives "
        "TF_CONFIG and the `tfjob-port` port (default 2222).")
    write("manifests/kubeflow/tfjob-crd.yaml", build_tfjob_crd(template),
          "Kubeflow's TFJob kind as this operator serves it (docs/kubeflow.md).")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
