"""Kubeflow TFJobs under this operator's Workload protocol: who queues them, and their Workload's identity.

Kueue has its own `kubeflow.org/tfjob` integration, which creates a TFJob's Workload and flips its
`runPolicy.suspend`; recent Kueue releases turn it off by default and plan to remove it. When it is
off, the operator queues TFJobs itself, exactly as it queues TensorFlowJobs (`controller.kueue.gate`).
The two must never both manage one job, so the operator decides once, at start
(`--kueue-tfjob=auto|operator|kueue`, `queues_tfjobs`): `auto` reads Kueue's own Configuration from the
ConfigMap its kustomize and Helm installs mount (`kueue-system/kueue-manager-config`, key
`controller_manager_config.yaml`) and queues TFJobs itself exactly when `kubeflow.org/tfjob` is not
among `integrations.frameworks` (an empty list means Kueue's default, `batch/job` only). A
Configuration that cannot be read leaves TFJobs to Kueue (what the operator always did) and says so.

The operator's Workload for a TFJob is the one Kueue's integration would have made, so that switching
between the two on a live cluster hands each Workload over instead of re-queueing its job:

* named `tfjob-<name>-<hash>` (Kueue's jobframework naming with kind TFJob), owned by the TFJob;
* its podSets named by the replica types in lower case (`master` for a TFJob's Master, which the
  job model calls `chief`), in Kueue's Kubeflow order;
* a Workload Kueue's integration left behind carries Kueue's `resource-in-use` finalizer, which only
  that integration removes: the operator removes it when it adopts the Workload (its own Workloads
  carry none; the owner reference lets garbage collection delete them).

`as_roles` gives the protocol's functions (which speak in roles) a view of such a Workload with role
names. A queued TFJob's `runPolicy.suspend` belongs to the queue, as under Kueue's integration (whose
webhook sets it at creation): `run_by_admission` drops it from the job model, so admission alone
decides whether the job has pods.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping
from typing import Any, Literal

import yaml

from controller.kueue import protocol as kueue

TFJOB_KIND = "TFJob"
TFJOB_FRAMEWORK = "kubeflow.org/tfjob"
DEFAULT_FRAMEWORKS = ("batch/job",)
CONFIG_NAMESPACE = "kueue-system"
CONFIG_MAP = "kueue-manager-config"
CONFIG_KEY = "controller_manager_config.yaml"
RESOURCE_IN_USE = f"{kueue.GROUP}/resource-in-use"

Mode = Literal["auto", "operator", "kueue"]


def kueue_queues_tfjobs(config_map: Mapping[str, Any]) -> bool:
    """Whether the Kueue Configuration in this ConfigMap enables Kueue's TFJob integration.
    ValueError when the ConfigMap holds no readable Configuration."""
    text = (config_map.get("data") or {}).get(CONFIG_KEY)
    if not text or not isinstance(text, str):
        raise ValueError(f"ConfigMap {CONFIG_NAMESPACE}/{CONFIG_MAP} has no {CONFIG_KEY}")
    try:
        config = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ValueError(f"{CONFIG_KEY} is not YAML: {error}") from error
    if not isinstance(config, Mapping):
        raise ValueError(f"{CONFIG_KEY} is not a Kueue Configuration")
    frameworks = (config.get("integrations") or {}).get("frameworks") or list(DEFAULT_FRAMEWORKS)
    return TFJOB_FRAMEWORK in frameworks


def queues_tfjobs(mode: Mode, config_map: Mapping[str, Any] | None) -> tuple[bool, str]:
    """(whether the operator queues TFJobs itself, why) for `--kueue-tfjob=mode`, given Kueue's
    ConfigMap (None: not found or not readable)."""
    if mode != "auto":
        return mode == "operator", f"--kueue-tfjob={mode}"
    if config_map is None:
        return False, (f"Kueue's Configuration ({CONFIG_NAMESPACE}/{CONFIG_MAP}) could not be read: TFJobs are "
                       "left to Kueue's own TFJob integration; set --kueue-tfjob=operator if it is off")
    try:
        kueue_does = kueue_queues_tfjobs(config_map)
    except ValueError as error:
        return False, f"{error}: TFJobs are left to Kueue's own TFJob integration"
    if kueue_does:
        return False, f"Kueue's Configuration enables {TFJOB_FRAMEWORK}: Kueue queues TFJobs"
    return True, f"Kueue's Configuration does not enable {TFJOB_FRAMEWORK}: the operator queues TFJobs"


def is_tfjob(job: Mapping[str, Any]) -> bool:
    return job.get("kind") == TFJOB_KIND


def workload_name(job: Mapping[str, Any]) -> str:
    """Kueue's name for a TFJob's Workload: `tfjob-<name>` (cut to 247), `-`, and the first 5 hex
    digits of sha1("TFJob\\nkubeflow.org\\n<name>\\n<uid>") (jobframework/workload_names.go)."""
    name, uid = job["metadata"]["name"], job["metadata"].get("uid", "")
    digest = hashlib.sha1(f"{TFJOB_KIND}\nkubeflow.org\n{name}\n{uid}".encode()).hexdigest()
    return f"{TFJOB_KIND.lower()}-{name}"[:247] + f"-{digest[:5]}"


def podset_names(job: Mapping[str, Any]) -> dict[str, str]:
    """Role → the podSet name Kueue's integration gives it: the replica type in lower case."""
    types = (job.get("kubeflow") or {}).get("replicaTypes") or {}
    return {role: str(types.get(role, role)).lower() for role in kueue.queued_roles(job)}


def for_tfjob(body: dict[str, Any], job: Mapping[str, Any], api_version: str) -> dict[str, Any]:
    """The Workload `protocol.build_workload` made for a TFJob's model, with the identity Kueue's
    integration gives it (name, owner reference, podSet names). A new dict."""
    result = copy.deepcopy(body)
    result["metadata"]["name"] = workload_name(job)
    result["metadata"]["ownerReferences"][0].update(apiVersion=api_version, kind=TFJOB_KIND)
    names = podset_names(job)
    for podset in result["spec"]["podSets"]:
        podset["name"] = names.get(podset["name"], podset["name"])
    return result


def as_roles(workload: Mapping[str, Any], job: Mapping[str, Any]) -> dict[str, Any]:
    """The Workload with its podSet names read as the job's roles (`master` → `chief`), everywhere the
    protocol reads them: spec.podSets, the admission's podSetAssignments, admission checks' podSetUpdates."""
    roles = {name: role for role, name in podset_names(job).items()}
    view = copy.deepcopy(dict(workload))
    status = view.get("status") or {}
    entries = [*((view.get("spec") or {}).get("podSets") or []),
               *((status.get("admission") or {}).get("podSetAssignments") or []),
               *(u for c in status.get("admissionChecks") or [] for u in c.get("podSetUpdates") or [])]
    for entry in entries:
        entry["name"] = roles.get(entry.get("name"), entry.get("name"))
    return view


def podset_label_fix(flavored: dict[str, Any], job: Mapping[str, Any]) -> None:
    """Set each role's `kueue.x-k8s.io/podset` pod label back to its Kueue podSet name (in place):
    Kueue's topology ungater finds a podSet's pods by it."""
    for role, name in podset_names(job).items():
        labels = ((flavored["spec"][role].get("template") or {}).get("metadata") or {}).get("labels")
        if labels and kueue.PODSET_LABEL in labels:
            labels[kueue.PODSET_LABEL] = name


def run_by_admission(job: Mapping[str, Any]) -> dict[str, Any]:
    """The model of a queued TFJob with `runPolicy.suspend` left to the queue (see the docstring), and
    without the `kueue.x-k8s.io/podset` label Kueue's integration may have written into a template
    (`master` for the chief; the admission gives it again). A new dict; the input is untouched."""
    spec = copy.deepcopy(dict(job["spec"]))
    spec["suspend"] = False
    for role in kueue.queued_roles(job):
        labels = ((spec[role].get("template") or {}).get("metadata") or {}).get("labels")
        if labels:
            labels.pop(kueue.PODSET_LABEL, None)
    return {**job, "spec": spec}


def finalizer_patch(workload: Mapping[str, Any]) -> dict[str, Any] | None:
    """The merge patch that drops Kueue's `resource-in-use` finalizer from an adopted Workload, or None."""
    finalizers = list((workload.get("metadata") or {}).get("finalizers") or [])
    if RESOURCE_IN_USE not in finalizers:
        return None
    return {"metadata": {"resourceVersion": workload["metadata"].get("resourceVersion"),
                         "finalizers": [f for f in finalizers if f != RESOURCE_IN_USE]}}
