"""Kueue's Topology-Aware Scheduling (TAS) for queued jobs of both kinds, as pure functions over dicts.

With TAS, Kueue admits a Workload into topology domains (a block, a rack, a host: node labels that a
`Topology` object lists as levels) and writes where each podSet's pods go in the admission's
`podSetAssignments[].topologyAssignment`. The job's controller has three parts in it (Kueue v0.17.0:
pkg/controller/jobframework/tas.go, pkg/podset/podset.go, pkg/controller/tas/topology_ungater.go):

* **the request** -- each podSet's `topologyRequest`, read from the role template's annotations
  (`podset_topology_request`, jobframework's PodSetTopologyRequest builder): `podset-required-topology`,
  `-preferred-topology` or `-unconstrained-topology`, the slice form (`podset-slice-required-topology`
  with `podset-slice-size`), and `podset-group-name` → `podSetGroupName` (with required or preferred
  only), so that, say, a chief and its workers share one domain. `podIndexLabel` is always set: it
  names the pod label holding the replica index, by which Kueue's ungater orders a podSet's pods
  within the domains (Kubeflow's `training.kubeflow.org/replica-index` for a TFJob, as Kueue's own
  integration sets it; the operator's `tensorflowjob.kubeflow.org/replica-index` for a
  TensorFlowJob). Both kinds' pods carry their index label already.
* **the gate** -- whenever an admitted podSet has a `topologyAssignment`, its pods are created with
  the scheduling gate `kueue.x-k8s.io/topology` (`gate_assigned_roles`). Kueue's topology ungater
  then gives each pod the node selector of its domain and lifts the gate; the operator never
  compares node selectors of running pods, so that selector is never taken for drift. Kueue 0.17
  assigns a topology even to a podSet that asked for none when its flavor has a topology; such pods
  also get the annotation `podset-unconstrained-topology: "true"`, as podset.FromAssignment does,
  without which the ungater leaves them gated.
* **replacement** -- a pod that fails or is lost is recreated from the same template, gate included,
  while the Workload stays admitted; the ungater places it in a domain of the same assignment
  (where a pod is missing), so the job is never re-queued for it.

`assigned_domains` (from `tfjob_api.kueue_placement`, which the client shares) reads an assignment back.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from controller.kueue.protocol import GROUP
from tfjob_api.kueue_placement import assigned_domains

__all__ = ["GROUP_NAME", "PREFERRED", "REQUIRED", "SCHEDULING_GATE", "SLICE_REQUIRED", "SLICE_SIZE",
           "UNCONSTRAINED", "TopologyRequestError", "assigned_domains", "gate_assigned_roles",
           "podset_topology_request", "with_topology_requests"]

REQUIRED = f"{GROUP}/podset-required-topology"
PREFERRED = f"{GROUP}/podset-preferred-topology"
UNCONSTRAINED = f"{GROUP}/podset-unconstrained-topology"
SLICE_REQUIRED = f"{GROUP}/podset-slice-required-topology"
SLICE_SIZE = f"{GROUP}/podset-slice-size"
GROUP_NAME = f"{GROUP}/podset-group-name"
SCHEDULING_GATE = f"{GROUP}/topology"


class TopologyRequestError(ValueError):
    """A role template's topology annotation cannot be read (the message names the annotation)."""


def podset_topology_request(annotations: Mapping[str, str], index_label: str, role: str) -> dict[str, Any]:
    """The `topologyRequest` of one podSet from its role template's annotations (see the docstring)."""
    request: dict[str, Any] = {}
    where = f"spec.{role}.template.metadata.annotations"
    if REQUIRED in annotations:
        request["required"] = annotations[REQUIRED]
    elif PREFERRED in annotations:
        request["preferred"] = annotations[PREFERRED]
    elif UNCONSTRAINED in annotations:
        value = str(annotations[UNCONSTRAINED]).lower()
        if value not in ("true", "false", "1", "0", "t", "f"):
            raise TopologyRequestError(f"{where}[{UNCONSTRAINED}]: {annotations[UNCONSTRAINED]!r} is not a boolean")
        request["unconstrained"] = value in ("true", "1", "t")
    if SLICE_REQUIRED in annotations and SLICE_SIZE in annotations:
        try:
            size = int(annotations[SLICE_SIZE])
        except ValueError:
            message = f"{where}[{SLICE_SIZE}]: {annotations[SLICE_SIZE]!r} is not an integer"
            raise TopologyRequestError(message) from None
        request["podSetSliceRequiredTopology"] = annotations[SLICE_REQUIRED]
        request["podSetSliceSize"] = size
    request["podIndexLabel"] = index_label
    if GROUP_NAME in annotations and ("required" in request or "preferred" in request):
        request["podSetGroupName"] = annotations[GROUP_NAME]
    return request


def with_topology_requests(workload: dict[str, Any], index_label: str) -> dict[str, Any]:
    """The Workload with each podSet's `topologyRequest` from its template's annotations (a new dict).
    The podSet's name is taken as the role for the error message."""
    result = copy.deepcopy(workload)
    for podset in result["spec"]["podSets"]:
        annotations = ((podset.get("template") or {}).get("metadata") or {}).get("annotations") or {}
        podset["topologyRequest"] = podset_topology_request(annotations, index_label, podset["name"])
    return result


def _asks_for_topology(request: Mapping[str, Any] | None) -> bool:
    return bool(request) and any(key in request for key in ("required", "preferred", "unconstrained"))  # type: ignore[operator]


def gate_assigned_roles(flavored: Mapping[str, Any], workload: Mapping[str, Any]) -> dict[str, Any]:
    """A new job dict whose roles admitted with a `topologyAssignment` have the topology scheduling gate
    on their template (and `podset-unconstrained-topology: "true"` when the podSet asked for no
    topology). `workload` must name its podSets by role (`tfjobs.as_roles` for a TFJob)."""
    result = copy.deepcopy(dict(flavored))
    requests = {p.get("name"): p.get("topologyRequest") for p in (workload.get("spec") or {}).get("podSets") or []}
    assignments = ((workload.get("status") or {}).get("admission") or {}).get("podSetAssignments") or []
    for assignment in assignments:
        role = assignment.get("name")
        if not assignment.get("topologyAssignment") or role not in result["spec"]:
            continue
        template = result["spec"][role].setdefault("template", {})
        spec = template.setdefault("spec", {})
        gates = list(spec.get("schedulingGates") or [])
        if not any(g.get("name") == SCHEDULING_GATE for g in gates):
            gates.append({"name": SCHEDULING_GATE})
        spec["schedulingGates"] = gates
        if not _asks_for_topology(requests.get(role)):
            metadata = template.setdefault("metadata", {})
            metadata["annotations"] = {**(metadata.get("annotations") or {}), UNCONSTRAINED: "true"}
    return result
