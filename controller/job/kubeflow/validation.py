"""Validate a TFJob the way admission does -- this project's TFJob CRD, whose CEL rules carry what
Kubeflow's validating webhook checked -- plus what only the defaulted job can tell.

Problems name the TFJob's own fields (`spec.tfReplicaSpecs.Worker...`), in the words the CRD's rules
use, so `tfjob-operator validate`, `convert` and a TFJob's `Failed` condition read the same. The
schema is the CRD's (`tfjob_api.crd`); the rules it states in CEL are restated here.
Pure, like the TensorFlowJob's validation: the controller remembers the answer per job
(`controller.memory.JobMemory.validated`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import jsonschema

from controller.job.validation import (
    Problem,
    name_problems,
    pod_name_problems,
    schema_problems,
    strict_validator,
    without_status,
)
from tfconfig import TF_CONTAINER, role_port, role_replicas
from tfjob_api.crd import tfjob_schema
from tfjob_api.kubeflow import API_VERSION, KIND, REPLICA_TYPES, ROLE_OF_TYPE, canonical_type
from tfjob_api.kubeflow_model import to_model

ONE_AT_MOST = ("chief", "evaluator")
SPECS = "spec.tfReplicaSpecs"



@functools.cache
def _validator() -> jsonschema.protocols.Validator:
    return strict_validator(tfjob_schema())


def validate_tfjob(tfjob: Any) -> list[Problem]:
    """Every problem of one TFJob document (its status is not validated); empty when it is valid."""
    return _validate(without_status(tfjob))


def _validate(tfjob: Any) -> list[Problem]:
    if not isinstance(tfjob, Mapping):
        return [Problem("", "a TFJob must be a mapping")]
    problems = []
    if tfjob.get("apiVersion") != API_VERSION:
        problems.append(Problem("apiVersion", f"must be {API_VERSION!r}, got {tfjob.get('apiVersion')!r}"))
    if tfjob.get("kind") != KIND:
        problems.append(Problem("kind", f"must be {KIND!r}, got {tfjob.get('kind')!r}"))
    metadata = tfjob.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    if not isinstance(name, str) or not name:
        problems.append(Problem("metadata.name", "required: the job needs a name"))
    problems += schema_problems(_validator(), tfjob)
    if problems:
        return problems
    return _check_replica_types(tfjob["spec"]["tfReplicaSpecs"]) or _check_semantics(tfjob)


def _check_replica_types(specs: Mapping[str, Any]) -> list[Problem]:
    problems = []
    seen: dict[str, str] = {}
    for key in specs:
        replica_type = canonical_type(key)
        if replica_type is None:
            problems.append(Problem(f"{SPECS}.{key}", "unknown replica type; replica types are "
                                    + ", ".join(REPLICA_TYPES[:-1]) + f" and {REPLICA_TYPES[-1]}"))
        elif replica_type in seen:
            problems.append(Problem(f"{SPECS}.{key}", f"the replica type {replica_type} is given twice "
                                    f"({seen[replica_type]!r} and {key!r}; replica types are compared "
                                    "case-insensitively)"))
        else:
            seen[replica_type] = key
    if "Chief" in seen and "Master" in seen:
        problems.append(Problem(SPECS, "must not have more than 1 Chief or Master role"))
    return problems


def _check_semantics(tfjob: Mapping[str, Any]) -> list[Problem]:
    name = tfjob["metadata"]["name"]
    specs = tfjob["spec"]["tfReplicaSpecs"]
    problems = name_problems(name)
    for key, replica in specs.items():
        path = f"{SPECS}.{key}"
        containers = replica["template"]["spec"]["containers"]
        if not any(container.get("name") == TF_CONTAINER for container in containers):
            problems.append(Problem(f"{path}.template.spec.containers",
                                    f"template.spec.containers must have a container named {TF_CONTAINER}"))
    model = to_model(tfjob)
    spec = model["spec"]
    key_of = {ROLE_OF_TYPE[canonical_type(key) or ""]: key for key in specs}
    for role in ONE_AT_MOST:
        if role_replicas(spec, role) > 1:
            problems.append(Problem(f"{SPECS}.{key_of[role]}.replicas",
                                    "a job has at most one chief (or master) and one evaluator replica"))
    if role_replicas(spec, "chief") == 0 and role_replicas(spec, "worker") == 0:
        problems.append(Problem(SPECS, "at least one of Chief, Master or Worker must have replicas > 0"))
    for role in ("chief", "ps", "worker", "evaluator"):
        if role not in spec:
            continue
        problems += pod_name_problems(name, role, role_replicas(spec, role))
        port = role_port(spec[role])
        if not 1 <= port <= 65535:
            problems.append(Problem(f"{SPECS}.{key_of[role]}.template.spec.containers",
                                    f"tfjob-port {port} is not a valid port (1-65535)"))
    if spec.get("successPolicy") == "AllWorkers" and role_replicas(spec, "worker") == 0:
        problems.append(Problem("spec.successPolicy", "AllWorkers needs a Worker replica type with replicas > 0"))
    return problems
