"""The TensorFlowJob CRD as data: its OpenAPI schema, validation rules, printer columns and scale
subresource, built from the names and defaults the rest of `tfjob_api` declares.

`hack/gen_crd.py` writes what `build_crd` returns to manifests/crd.yaml (and, without the short
name, to manifests/kubeflow/tensorflowjob-crd.yaml); `tfjob_api.kubeflow_schema` builds Kubeflow's TFJob
CRD from the same pieces. The builders live here, not in the script, so the role list, the defaults
and the kinds' names are the ones the operator uses, and a test can build the schema and compare it
with the committed file.

What the schema embeds from Kubernetes — the PodSpec for the pod templates and the
NetworkPolicyPeer for `spec.networkPolicy.allowFrom` — comes from Kubernetes' published OpenAPI
document with every `$ref` inlined (the API server refuses `$ref` in a CRD). Fetching and inlining
that document is the script's job; the builders ask for each part through a `Component` function,
which must return a new dict at every call (the builders complete what they receive in place).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tfconfig import ROLES
from tfjob_api import managed_by
from tfjob_api.bounds import CONDITION_MESSAGE_MAX, CONDITION_REASON_MAX, PROGRESS_TEXT_MAX
from tfjob_api.defaults import BACKOFF_LIMIT, CLEAN_POD_POLICY, RESTART_POLICY
from tfjob_api.names import GROUP, KIND, PLURAL, VERSION

# The inlined schema of a named OpenAPI component of Kubernetes' API, e.g. "io.k8s.api.core.v1.PodSpec".
Component = Callable[[str], dict[str, Any]]

POD_SPEC = "io.k8s.api.core.v1.PodSpec"
NETWORK_POLICY_PEER = "io.k8s.api.networking.v1.NetworkPolicyPeer"
MAX_CONTAINERS = 100  # bounds the CEL cost of the TFJob kind's rule on container names
MAX_ALLOWED_PEERS = 32  # spec.networkPolicy.allowFrom
ONE_AT_MOST = ("chief", "evaluator")  # roles of at most one replica
ONE_WEEK = 7 * 24 * 3600
PEER_RULE_MESSAGE = "a peer is either an ipBlock, or a podSelector and/or a namespaceSelector"
TEMPLATE_DESCRIPTION = (
    "The pod template (a core/v1 PodTemplateSpec). The container named `tensorflow` "
    "(else the first container) receives TF_CONFIG and the `tfjob-port` port (default 2222).")


def crd_document(names: dict[str, Any], schema: dict[str, Any], scale_replicas: str, scale_status: str,
                 columns: list[dict[str, Any]]) -> dict[str, Any]:
    """The shape both CRDs share: a namespaced kind in kubeflow.org, one served and stored version
    `v1` with its schema, the status subresource, and a scale subresource: `kubectl scale` sets the
    spec field at `scale_replicas` and reads `<scale_status>.active` and `<scale_status>.selector`."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{names['plural']}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "names": names,
            "scope": "Namespaced",
            "versions": [{
                "name": VERSION, "served": True, "storage": True,
                "schema": {"openAPIV3Schema": schema},
                "subresources": {
                    "status": {},
                    "scale": {
                        "specReplicasPath": scale_replicas,
                        "statusReplicasPath": f"{scale_status}.active",
                        "labelSelectorPath": f"{scale_status}.selector",
                    },
                },
                "additionalPrinterColumns": columns,
            }],
        },
    }


def template_metadata_schema() -> dict[str, Any]:
    """A pod template's metadata: labels and annotations typed, the rest kept as given (also what an
    ObjectMeta inside the pod spec becomes when inlined)."""
    string_map = {"type": "object", "additionalProperties": {"type": "string"}}
    return {
        "type": "object",
        "properties": {"labels": string_map, "annotations": string_map},
        "x-kubernetes-preserve-unknown-fields": True,
    }


def pod_template_schema(component: Component, description: str) -> dict[str, Any]:
    """A PodTemplateSpec, every `$ref` inlined, at most MAX_CONTAINERS containers and at least one,
    each with an image.

    The image is required by the schema (`required`, `minLength`) rather than by a CEL rule: the API
    server checks both on every write, status writes included, and a CEL rule that walks the
    containers cost about 1 ms of its CPU per status write (a tenth of the write) where the schema's
    check costs next to nothing; the error names the container's field either way."""
    pod_spec = component(POD_SPEC)
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


def progress_schema() -> dict[str, Any]:
    """`spec.progress`: opt-in training progress in the status (docs/production.md)."""
    return {
        "type": "object",
        "description": "Opt-in training progress: the chief (else worker 0) serves what it reports with tfheartbeat "
        "at /progress on this port, and the operator reads it through the API server's pod proxy every "
        "periodSeconds into status.progress (step, epoch, percent, metrics, ETA).",
        "properties": {
            "port": {
                "type": "integer", "format": "int32", "minimum": 1, "maximum": 65535, "default": 8090,
                "description": "The port tfheartbeat serves /progress on in the reporting pod (TFJOB_PROGRESS_PORT). "
                "Default 8090; the heartbeat's own port (stall: {heartbeat: http}) may be the same.",
            },
            "periodSeconds": {
                "type": "integer", "format": "int32", "minimum": 10, "maximum": 3600, "default": 30,
                "description": "Seconds between two reads, so at most one status write per period. Default 30.",
            },
        },
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


def scheduling_policy_schema(path: str, description: str) -> dict[str, Any]:
    """A job's gang-scheduling settings (`path` names the field in messages), as Kubeflow's TFJob has
    them in `runPolicy.schedulingPolicy`: used when the operator runs with `--gang-scheduler`
    (docs/production.md, "Gang scheduling")."""
    return {
        "type": "object",
        "description": description,
        "properties": {
            "minAvailable": {
                "type": "integer", "format": "int32", "minimum": 1,
                "description": "Pods that must be placed together before any runs. Default: every pod of the job.",
            },
            "queue": {
                "type": "string",
                "description": "The Volcano queue of the job's PodGroup (Volcano only; default: `default`). Immutable.",
                "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": f"{path}.queue is immutable"}],
            },
            "minResources": {
                "type": "object", "additionalProperties": {"x-kubernetes-int-or-string": True},
                "description": "Resources the whole gang needs before it is placed (e.g. cpu: 20, memory: 40Gi). "
                "Default: the requests of the first minAvailable pods.",
            },
            "priorityClass": {
                "type": "string",
                "description": "The PriorityClass of the job's PodGroup (Volcano orders and preempts gangs by it).",
            },
            "scheduleTimeoutSeconds": {
                "type": "integer", "format": "int32", "minimum": 1,
                "description": "How long the scheduler-plugins coscheduler waits for the whole gang before it "
                "releases the pods it holds and tries again.",
            },
            "topologyKey": {
                "type": "string", "maxLength": 317,
                "description": "Kubernetes' own gang scheduling only (--gang-scheduler=kubernetes, with the "
                "TopologyAwareWorkloadScheduling gate): a node label, e.g. topology.kubernetes.io/rack; the whole "
                "gang is placed inside one domain of it, or waits. Immutable.",
                "x-kubernetes-validations": [{"rule": "self == oldSelf",
                                              "message": f"{path}.topologyKey is immutable"}],
            },
        },
    }


FAILURE_ACTIONS = ("FailJob", "Ignore", "Count", "RestartJob")
FAILURE_REASONS = ("OOMKilled", "Error", "DeadlineExceeded", "Evicted", "Preempted", "ContainerCannotRun", "Stalled")
FAILURE_POD_CONDITIONS = ("DisruptionTarget",)
MAX_FAILURE_RULES = 20
RULE_NEEDS_A_CRITERION = "a rule needs at least one of roles, onExitCodes, onPodConditions, onReasons"
ROLE_NOT_IN_JOB = "spec.failurePolicy.rules[].roles names a role the job does not have"
IN_WITHOUT_ZERO = "exit code 0 is not a failure: onExitCodes with operator In cannot list 0"


def failure_policy_schema() -> dict[str, Any]:
    """`spec.failurePolicy`: ordered rules saying what a failed pod means (controller.job.failurepolicy)."""
    def listed(values: tuple[str, ...], description: str) -> dict[str, Any]:
        return {"type": "array", "items": {"type": "string", "enum": list(values)}, "minItems": 1,
                "maxItems": len(values), "x-kubernetes-list-type": "set", "description": description}
    rule = {
        "type": "object",
        "required": ["action"],
        "properties": {
            "name": {"type": "string", "maxLength": 63, "description": "Named in the job's messages."},
            "action": {
                "type": "string", "enum": list(FAILURE_ACTIONS),
                "description": "FailJob: the job fails now. Ignore: the pod is replaced, not counted. Count: "
                "replaced and counted (the default without rules). RestartJob: every pod of the job is "
                "replaced for this failure (restartScope All for it), counted.",
            },
            "roles": listed(ROLES, "The roles the rule applies to (default: all)."),
            "onExitCodes": {
                "type": "object", "required": ["operator", "values"],
                "description": "The TensorFlow container's exit code is In (or NotIn, never 0) these values.",
                "properties": {
                    "operator": {"type": "string", "enum": ["In", "NotIn"]},
                    "values": {"type": "array", "minItems": 1, "maxItems": 255, "x-kubernetes-list-type": "set",
                               "items": {"type": "integer", "format": "int32", "minimum": 0, "maximum": 255}},
                },
                "x-kubernetes-validations": [
                    {"rule": "self.operator != 'In' || !self.values.exists(v, v == 0)", "message": IN_WITHOUT_ZERO},
                ],
            },
            "onPodConditions": listed(FAILURE_POD_CONDITIONS, "A condition of the pod that is True "
                                      "(DisruptionTarget: evicted, preempted, its node lost or drained)."),
            "onReasons": listed(FAILURE_REASONS, "The TensorFlow container's termination reason (OOMKilled, "
                                "Error, ...), the pod's reason (Evicted, DeadlineExceeded, Preempted) or Stalled "
                                "(killed by the role's stall rule)."),
        },
        "x-kubernetes-validations": [{
            "rule": "has(self.roles) || has(self.onExitCodes) || has(self.onPodConditions) || has(self.onReasons)",
            "message": RULE_NEEDS_A_CRITERION,
        }],
    }
    return {
        "type": "object",
        "description": "What a failed pod means, by ordered rules: the first that matches decides. A failure "
        "no rule matches is handled as without rules (restartPolicy, disruptions uncounted).",
        "properties": {"rules": {"type": "array", "maxItems": MAX_FAILURE_RULES, "items": rule}},
    }


def role_schema(template: dict[str, Any], role: str) -> dict[str, Any]:
    replicas: dict[str, Any] = {
        "type": "integer", "format": "int32", "minimum": 0, "default": 1,
        "description": "Number of pods of this role. Default 1.",
    }
    if role in ONE_AT_MOST:
        replicas["maximum"] = 1
        replicas["description"] = f"Number of {role} pods: 0 or 1. Default 1."
    return {
        "type": "object",
        "description": f"The {role} role: its replica count, restart policy and pod template.",
        "required": ["template"],
        "properties": {
            "replicas": replicas,
            "restartPolicy": {
                "type": "string", "default": RESTART_POLICY,
                "enum": ["Never", "OnFailure", "Always", "ExitCode"],
                "description": "What a failed pod of this role means. Never: the job fails. OnFailure/Always: "
                "the pod is restarted or recreated (counts against backoffLimit). ExitCode: exit codes 1-127 "
                "fail the job, 128 and above (signals, OOM) are retried.",
            },
            "template": template,
            "stall": stall_schema(),
            "backoffLimit": {
                "type": "integer", "format": "int32", "minimum": 0,
                "description": f"Counted failures of the {role} pods allowed before the job fails "
                "(beside the job-wide spec.backoffLimit). Default: no limit of its own.",
            },
        },
    }


def name_length_rule(role: str) -> dict[str, Any]:
    # The longest pod name is <job>-<role>-<replicas-1>; it is also the pod's hostname, a DNS label.
    return {
        "rule": f"!has(self.spec.{role}) || self.spec.{role}.replicas == 0 || "
        f"size(self.metadata.name) + {len(role) + 2} + size(string(self.spec.{role}.replicas - 1)) <= 63",
        "message": f"metadata.name is too long: the pod name <name>-{role}-<index> must be at most 63 characters",
    }


def spec_schema(component: Component) -> dict[str, Any]:
    """`spec`: the roles (one pod template schema shared by all four) and the run policy."""
    template = pod_template_schema(component, TEMPLATE_DESCRIPTION)
    spec_props: dict[str, Any] = {role: role_schema(template, role) for role in ROLES}
    spec_props.update({
        "cleanPodPolicy": {
            "type": "string", "default": CLEAN_POD_POLICY, "enum": ["None", "All", "Running"],
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
            "type": "integer", "format": "int32", "minimum": 0, "default": BACKOFF_LIMIT,
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
        "networkPolicy": network_policy_schema(component(NETWORK_POLICY_PEER)),
        "schedulingPolicy": scheduling_policy_schema(
            "spec.schedulingPolicy", "Gang scheduling: the job's PodGroup for the operator's --gang-scheduler "
            "(Volcano or the scheduler-plugins coscheduler), so all of its pods are placed together or none is. "
            "Not used without a gang scheduler."),
    })
    spec_props["progress"] = progress_schema()
    spec_props["failurePolicy"] = failure_policy_schema()
    spec_props["managedBy"] = managed_by.schema()
    return {
        "type": "object",
        "description": "The desired training job: its roles and run policy.",
        "properties": spec_props,
        "x-kubernetes-validations": [
            {
                "rule": "(has(self.chief) && self.chief.replicas > 0) || "
                "(has(self.worker) && self.worker.replicas > 0)",
                "message": "at least one of spec.chief or spec.worker must have replicas > 0",
            },
            {
                "rule": "!has(self.failurePolicy) || !has(self.failurePolicy.rules) || self.failurePolicy.rules.all("
                "r, !has(r.roles) || r.roles.all(x, " + " || ".join(
                    f"(x == '{role}' && has(self.{role}))" for role in ROLES) + "))",
                "message": ROLE_NOT_IN_JOB,
            },
            managed_by.immutable_rule(),
        ],
    }


def status_schema() -> dict[str, Any]:
    """`status`, written by the operator only."""
    replica_status = {
        "type": "object",
        "properties": {
            "active": {"type": "integer", "format": "int32"},
            "succeeded": {"type": "integer", "format": "int32"},
            "failed": {"type": "integer", "format": "int32"},
            "selector": {"type": "string"},
            "restarts": {"type": "integer", "format": "int32"},
            "restartsLeft": {"type": "integer", "format": "int32"},
        },
    }
    condition = {
        "type": "object",
        "required": ["type", "status"],
        "properties": {
            "type": {"type": "string"},
            "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
            "reason": {"type": "string", "maxLength": CONDITION_REASON_MAX},
            "message": {"type": "string", "maxLength": CONDITION_MESSAGE_MAX},
            "lastTransitionTime": {"type": "string", "format": "date-time"},
            "lastUpdateTime": {"type": "string", "format": "date-time"},
        },
    }
    return {
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
            "retriedFailuresByRole": {"type": "object", "additionalProperties": {"type": "integer", "format": "int32"}},
            "observedGeneration": {"type": "integer", "format": "int64"},
            "progress": progress_status_schema(),
        },
    }


def progress_status_schema() -> dict[str, Any]:
    """`status.progress`: the training's progress as the reporting pod last said (controller/progress)."""
    count = {"type": "integer", "format": "int64", "minimum": 0}
    text = {"type": "string", "maxLength": PROGRESS_TEXT_MAX}
    return {
        "type": "object",
        "description": "The training's progress as the chief (else worker 0) reports it (spec.progress).",
        "properties": {
            "step": count, "totalSteps": count, "epoch": count, "totalEpochs": count,
            "percent": {"type": "integer", "format": "int32", "minimum": 0, "maximum": 100},
            "metrics": {"type": "object", "maxProperties": 8,
                        "additionalProperties": {"type": "string", "maxLength": 32}},
            "summary": text, "remaining": text, "metricsSummary": text, "reportedBy": text, "problem": text,
            "estimatedCompletionTime": {"type": "string", "format": "date-time"},
            "lastUpdateTime": {"type": "string", "format": "date-time"},
            "lastResume": {
                "type": "object",
                "description": "The last time the training resumed after an interruption (its reporting pod "
                "replaced or restarted): when, the first step it reported, the last step seen before, and "
                "the steps lost between them.",
                "properties": {"time": {"type": "string", "format": "date-time"}, "step": count,
                               "stepBefore": count, "stepsLost": count},
            },
        },
    }


def build_crd(component: Component) -> dict[str, Any]:
    """The TensorFlowJob CRD (manifests/crd.yaml)."""
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
            "spec": spec_schema(component),
            "status": status_schema(),
        },
        "x-kubernetes-validations": name_rules,
    }
    columns: list[dict[str, Any]] = [
        {"name": "State", "type": "string", "jsonPath": ".status.state"},
        {"name": "Workers", "type": "integer", "jsonPath": ".status.replicaStatuses.worker.active",
         "description": "Active worker pods"},
        {"name": "PS", "type": "integer", "jsonPath": ".status.replicaStatuses.ps.active",
         "description": "Active parameter-server pods"},
        {"name": "Restarts", "type": "integer", "jsonPath": ".status.restartCount"},
        {"name": "Progress", "type": "string", "jsonPath": ".status.progress.summary",
         "description": "Training progress the chief (else worker 0) reports (spec.progress)"},
        {"name": "ETA", "type": "string", "jsonPath": ".status.progress.remaining",
         "description": "Time left at the recent rate, as of status.progress.lastUpdateTime"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        {"name": "Started", "type": "date", "jsonPath": ".status.startTime", "priority": 1},
        {"name": "Completed", "type": "date", "jsonPath": ".status.completionTime", "priority": 1},
        {"name": "Metrics", "type": "string", "jsonPath": ".status.progress.metricsSummary", "priority": 1},
    ]
    names = {"kind": KIND, "listKind": f"{KIND}List", "plural": PLURAL, "singular": KIND.lower(),
             "shortNames": ["tfjob"], "categories": ["kubeflow"]}
    return crd_document(names, schema, ".spec.worker.replicas", ".status.replicaStatuses.worker", columns)


def without_short_names(crd: dict[str, Any]) -> dict[str, Any]:
    """The TensorFlowJob CRD for clusters that serve a TFJob CRD too: the short name `tfjob` is the
    TFJob's singular there, and the API server serves no two CRDs of one group with clashing names."""
    names = {k: v for k, v in crd["spec"]["names"].items() if k != "shortNames"}
    return {**crd, "spec": {**crd["spec"], "names": names}}
