"""The CRD of Kubeflow's `TFJob` kind (kubeflow.org/v1) as this operator serves it; hack/gen_crd.py
writes it to manifests/kubeflow/tfjob-crd.yaml.

The same API as Kubeflow's training operator v1.9 (names, fields, the State and Age columns, the
status subresource) with what Kubeflow left to its validating webhook, or did not check, as CEL
rules, each naming the field: known replica types (any letter case, as Kubeflow's defaulting
accepts), at most one Chief or Master, a container named `tensorflow` (every container's image is
required by the pod template's schema), `managedBy` one of the known controllers and immutable,
`schedulingPolicy.queue` immutable; and what this operator needs: at most one chief (or master) and
evaluator replica, a chief, master or worker with replicas, pod names that fit a DNS label. The pod
template schema is embedded, as in the TensorFlowJob CRD. Beside Kubeflow's: the category
`tfjob-operator` (how `--kubeflow-tfjob=auto` tells this CRD from Kubeflow's), a `scale`
subresource on the Worker replicas, and the operator's status fields.

Built here, beside the TensorFlowJob's CRD (`tfjob_api.schema`, whose shared pieces it uses), so its
replica types and `managedBy` values are the ones the controller compares against (`tfjob_api.kubeflow`).
"""

from __future__ import annotations

from typing import Any

from tfjob_api.bounds import CONDITION_MESSAGE_MAX, CONDITION_REASON_MAX
from tfjob_api.kubeflow import KIND, MANAGED_BY_VALUES, OPERATOR_CATEGORY, PLURAL, REPLICA_TYPES
from tfjob_api.schema import Component, crd_document, pod_template_schema, scheduling_policy_schema

TYPES = "[" + ", ".join(f"'{replica_type.lower()}'" for replica_type in REPLICA_TYPES) + "]"  # CEL's list
MAX_REPLICA_TYPES = len(REPLICA_TYPES)  # the map is bounded so CEL can cost its rules
TEMPLATE_DESCRIPTION = ("The pod template (a core/v1 PodTemplateSpec). The container named `tensorflow` receives "
                        "TF_CONFIG and the `tfjob-port` port (default 2222).")


def replica_spec_schema(template: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "description": "A replica type: its replica count, restart policy and pod template.",
        "properties": {
            "replicas": {"type": "integer", "format": "int32", "minimum": 0,
                         "description": "Number of pods of this replica type. Default 1."},
            "restartPolicy": {
                "type": "string", "enum": ["Always", "OnFailure", "Never", "ExitCode"],
                "description": "What a failed pod means: Never (default) fails the job; OnFailure and Always "
                "retry it; ExitCode fails the job on exit codes 1-127 and retries 128 and above.",
            },
            "template": template,
        },
        "required": ["template"],
        "x-kubernetes-validations": [
            {"rule": "self.template.spec.containers.exists(c, c.name == 'tensorflow')",
             "message": "template.spec.containers must have a container named tensorflow",
             "fieldPath": ".template.spec.containers"},
        ],
    }


def replicas_of(key: str) -> str:
    return f"(has(self[{key}].replicas) ? self[{key}].replicas : 1)"


def replica_specs_schema(template: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "description": "The replica types of the job (Chief or Master, PS, Worker, Evaluator) and their specs.",
        "maxProperties": MAX_REPLICA_TYPES,
        "additionalProperties": replica_spec_schema(template),
        "x-kubernetes-validations": [
            {"rule": f"self.all(k, k.lowerAscii() in {TYPES})",
             "message": "replica types are Chief, Master, PS, Worker and Evaluator"},
            {"rule": "self.all(k, self.filter(j, j.lowerAscii() == k.lowerAscii()).size() == 1)",
             "message": "a replica type is given twice (replica types are compared case-insensitively)"},
            {"rule": "self.filter(k, k.lowerAscii() in ['chief', 'master']).size() <= 1",
             "message": "must not have more than 1 Chief or Master role"},
            {"rule": f"self.all(k, !(k.lowerAscii() in ['chief', 'master', 'evaluator']) || {replicas_of('k')} <= 1)",
             "message": "a job has at most one chief (or master) and one evaluator replica"},
            {"rule": f"self.exists(k, k.lowerAscii() in ['chief', 'master', 'worker'] && {replicas_of('k')} > 0)",
             "message": "at least one of Chief, Master or Worker must have replicas > 0"},
        ],
    }


def run_policy_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "description": "How the job runs: cleanup, deadlines, retries, suspension, and which controller runs it.",
        "properties": {
            "cleanPodPolicy": {
                "type": "string", "enum": ["None", "All", "Running"],
                "description": "Which pods are deleted when the job finishes. None (default): nothing. Running: "
                "pods still Pending or Running. All: every pod and the Service.",
            },
            "ttlSecondsAfterFinished": {"type": "integer", "format": "int32", "minimum": 0,
                                        "description": "Delete the job this many seconds after it finished."},
            "activeDeadlineSeconds": {"type": "integer", "format": "int64", "minimum": 1,
                                      "description": "Fail the job when it has run this long, from status.startTime."},
            "backoffLimit": {"type": "integer", "format": "int32", "minimum": 0,
                             "description": "Retried pod failures allowed before the job fails. Unset: no limit."},
            "schedulingPolicy": scheduling_policy_schema(
                "spec.runPolicy.schedulingPolicy", "Gang scheduling, as Kubeflow's operator reads it: the job's "
                "PodGroup when this operator runs with --gang-scheduler (Volcano or scheduler-plugins)."),
            "suspend": {"type": "boolean", "default": False,
                        "description": "true: the job's pods and Service are deleted and none are created."},
            "managedBy": {
                "type": "string", "enum": list(MANAGED_BY_VALUES),
                "description": "The controller that runs the job (immutable). Unset: the cluster's default TFJob "
                "controller. tensorflowjob.kubeflow.org/tfjob-operator: this operator. "
                "kubeflow.org/training-operator: Kubeflow's training operator; kueue.x-k8s.io/multikueue: MultiKueue.",
            },
        },
    }


def name_rules() -> list[dict[str, Any]]:
    role_length = ("(k.lowerAscii() == 'ps' ? 2 : k.lowerAscii() == 'worker' ? 6 : "
                   "k.lowerAscii() == 'evaluator' ? 9 : 5)")
    replicas = "(has(self.spec.tfReplicaSpecs[k].replicas) ? self.spec.tfReplicaSpecs[k].replicas : 1)"
    return [
        {"rule": "self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$') && size(self.metadata.name) <= 63",
         "message": "metadata.name must be a DNS-1035 label (lower case letters, digits and '-', starting "
         "with a letter): it names the job's headless Service"},
        {"rule": f"self.spec.tfReplicaSpecs.all(k, {replicas} == 0 || "
         f"size(self.metadata.name) + {role_length} + 2 + size(string({replicas} - 1)) <= 63)",
         "message": "metadata.name is too long: the pod name <name>-<chief|ps|worker|evaluator>-<index> must be "
         "at most 63 characters"},
    ]


def managed_by_rule() -> dict[str, Any]:
    value = "(has({0}.runPolicy) && has({0}.runPolicy.managedBy) ? {0}.runPolicy.managedBy : '')"
    return {"rule": f"{value.format('self')} == {value.format('oldSelf')}",
            "message": "spec.runPolicy.managedBy is immutable"}


def status_schema() -> dict[str, Any]:
    string_map = {"type": "object", "additionalProperties": {"type": "string"}}
    selector = {
        "type": "object", "x-kubernetes-map-type": "atomic",
        "properties": {
            "matchLabels": string_map,
            "matchExpressions": {"type": "array", "items": {
                "type": "object", "required": ["key", "operator"],
                "properties": {"key": {"type": "string"}, "operator": {"type": "string"},
                               "values": {"type": "array", "items": {"type": "string"}}}}},
        },
    }
    replica_status = {"type": "object", "properties": {
        "active": {"type": "integer", "format": "int32"},
        "succeeded": {"type": "integer", "format": "int32"},
        "failed": {"type": "integer", "format": "int32"},
        "selector": {"type": "string"},
        "labelSelector": selector,
    }}
    condition = {"type": "object", "required": ["type", "status"], "properties": {
        "type": {"type": "string"},
        "status": {"type": "string"},
        "reason": {"type": "string", "maxLength": CONDITION_REASON_MAX},
        "message": {"type": "string", "maxLength": CONDITION_MESSAGE_MAX},
        "lastTransitionTime": {"type": "string", "format": "date-time"},
        "lastUpdateTime": {"type": "string", "format": "date-time"},
    }}
    return {
        "type": "object",
        "description": "The observed state of the job, as Kubeflow writes it, and the operator's own bookkeeping.",
        "properties": {
            "conditions": {"type": "array", "items": condition, "x-kubernetes-list-type": "map",
                           "x-kubernetes-list-map-keys": ["type"]},
            "replicaStatuses": {"type": "object", "additionalProperties": replica_status},
            "startTime": {"type": "string", "format": "date-time"},
            "completionTime": {"type": "string", "format": "date-time"},
            "lastReconcileTime": {"type": "string", "format": "date-time"},
            "restartCount": {"type": "integer", "format": "int32"},
            "observedGeneration": {"type": "integer", "format": "int64"},
            "retriedFailures": {"type": "integer", "format": "int32"},
            "countedFailedPods": {"type": "array", "items": {"type": "string"}},
            "conditionReasons": string_map,
        },
    }


def build_tfjob_crd(component: Component) -> dict[str, Any]:
    """The TFJob CRD (manifests/kubeflow/tfjob-crd.yaml); `component` gives the PodSpec schema to embed."""
    template = pod_template_schema(component, TEMPLATE_DESCRIPTION)
    spec = {
        "type": "object",
        "description": "The TFJob: its replica types and run policy.",
        "required": ["tfReplicaSpecs"],
        "properties": {
            "tfReplicaSpecs": replica_specs_schema(template),
            "runPolicy": run_policy_schema(),
            "successPolicy": {
                "type": "string", "enum": ["", "AllWorkers"],
                "description": "\"\" (default): the chief (or master) decides, else worker 0. AllWorkers: all workers.",
            },
            "enableDynamicWorker": {"type": "boolean",
                                    "description": "Kubeflow's sparse TF_CONFIG switch; accepted, not used."},
        },
        "x-kubernetes-validations": [managed_by_rule()],
    }
    schema = {
        "type": "object",
        "description": "Kubeflow's TFJob: a distributed TensorFlow training job.",
        "required": ["spec"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": spec,
            "status": status_schema(),
        },
        "x-kubernetes-validations": name_rules(),
    }
    names = {"kind": KIND, "listKind": f"{KIND}List", "plural": PLURAL, "singular": KIND.lower(),
             "categories": ["kubeflow", OPERATOR_CATEGORY]}
    columns = [
        {"name": "State", "type": "string", "jsonPath": ".status.conditions[-1:].type"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]
    return crd_document(names, schema, ".spec.tfReplicaSpecs.Worker.replicas", ".status.replicaStatuses.Worker",
                        columns)
