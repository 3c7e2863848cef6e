"""Kueue's topology-aware scheduling: podSet topology requests from role annotations, and the gate."""

from __future__ import annotations

from typing import Any

import pytest

from controller.kueue import protocol as kueue
from controller.kueue import topology
from tests.support.jobs import container, role, tfjob
from tfjob_api.defaults import apply_defaults
from tfjob_api.names import REPLICA_INDEX_LABEL

RACK = "tfjob-test/rack"


def job(chief_annotations: dict[str, str] | None = None,
        worker_annotations: dict[str, str] | None = None) -> dict[str, Any]:
    roles = {}
    for name, replicas, notes in (("chief", 1, chief_annotations), ("worker", 4, worker_annotations)):
        spec = role(replicas, containers=[container(requests={"cpu": "1"})])
        if notes is not None:
            spec["template"]["metadata"] = {"annotations": notes}
        roles[name] = spec
    return apply_defaults(tfjob("j", roles, namespace="ns", uid="u", labels={kueue.QUEUE_LABEL: "lq"}))


def requests(job: dict[str, Any]) -> dict[str, Any]:
    body = topology.with_topology_requests(kueue.build_workload(job), REPLICA_INDEX_LABEL)
    return {p["name"]: p["topologyRequest"] for p in body["spec"]["podSets"]}


def test_required_topology_and_group_name_become_the_podsets_request() -> None:
    together = {topology.REQUIRED: RACK, topology.GROUP_NAME: "all"}
    assert requests(job(together, together)) == {
        "chief": {"required": RACK, "podIndexLabel": REPLICA_INDEX_LABEL, "podSetGroupName": "all"},
        "worker": {"required": RACK, "podIndexLabel": REPLICA_INDEX_LABEL, "podSetGroupName": "all"}}


def test_preferred_and_unconstrained_topologies_are_read_and_a_group_needs_one_of_the_first_two() -> None:
    found = requests(job({topology.UNCONSTRAINED: "true", topology.GROUP_NAME: "g"}, {topology.PREFERRED: RACK}))
    assert found["chief"] == {"unconstrained": True, "podIndexLabel": REPLICA_INDEX_LABEL}
    assert found["worker"] == {"preferred": RACK, "podIndexLabel": REPLICA_INDEX_LABEL}


def test_a_role_without_annotations_still_names_its_index_label() -> None:
    assert requests(job())["worker"] == {"podIndexLabel": REPLICA_INDEX_LABEL}


def test_the_slice_form_needs_its_size_as_an_integer() -> None:
    found = requests(job(None, {topology.REQUIRED: "block", topology.SLICE_REQUIRED: RACK, topology.SLICE_SIZE: "2"}))
    assert found["worker"] == {"required": "block", "podSetSliceRequiredTopology": RACK, "podSetSliceSize": 2,
                               "podIndexLabel": REPLICA_INDEX_LABEL}
    with pytest.raises(topology.TopologyRequestError, match=r"spec.worker.template.metadata.annotations.*slice-size"):
        requests(job(None, {topology.SLICE_REQUIRED: RACK, topology.SLICE_SIZE: "two"}))


def test_an_unconstrained_annotation_that_is_no_boolean_is_an_error_naming_it() -> None:
    with pytest.raises(topology.TopologyRequestError, match=r"podset-unconstrained-topology.*'maybe'"):
        requests(job({topology.UNCONSTRAINED: "maybe"}))


def admitted_with_topology(job: dict[str, Any], assigned: tuple[str, ...]) -> dict[str, Any]:
    workload = topology.with_topology_requests(kueue.build_workload(job), REPLICA_INDEX_LABEL)
    assignment = {"levels": [RACK], "slices": [{"domainCount": 1, "valuesPerLevel": [{"universal": "r1"}],
                                                "podCounts": {"universal": 4}}]}
    workload["status"] = {"admission": {"clusterQueue": "cq", "podSetAssignments": [
        {"name": name, "flavors": {"cpu": "f"}, **({"topologyAssignment": assignment} if name in assigned else {})}
        for name in ("chief", "worker")]}}
    return workload


def test_roles_placed_by_topology_get_the_gate_and_others_do_not() -> None:
    queued = job(None, {topology.REQUIRED: RACK})
    gated = topology.gate_assigned_roles(queued, admitted_with_topology(queued, ("worker",)))
    assert gated["spec"]["worker"]["template"]["spec"]["schedulingGates"] == [{"name": topology.SCHEDULING_GATE}]
    assert "schedulingGates" not in gated["spec"]["chief"]["template"]["spec"]
    assert topology.UNCONSTRAINED not in (gated["spec"]["worker"]["template"].get("metadata") or {}).get(
        "annotations", {})
    assert "schedulingGates" not in queued["spec"]["worker"]["template"]["spec"]  # the input is untouched


def test_a_role_placed_by_topology_without_asking_is_marked_unconstrained_for_the_ungater() -> None:
    queued = job()
    gated = topology.gate_assigned_roles(queued, admitted_with_topology(queued, ("chief", "worker")))
    for name in ("chief", "worker"):
        template = gated["spec"][name]["template"]
        assert template["metadata"]["annotations"][topology.UNCONSTRAINED] == "true"
        assert template["spec"]["schedulingGates"] == [{"name": topology.SCHEDULING_GATE}]


def test_an_assignment_reads_back_as_domains_with_pod_counts() -> None:
    assignment = {"levels": ["block", RACK], "slices": [
        {"domainCount": 2, "valuesPerLevel": [{"universal": "b1"}, {"individual": {"prefix": "r", "roots": ["1", "2"]}}],
         "podCounts": {"individual": [3, 2]}}]}
    assert topology.assigned_domains(assignment) == [({"block": "b1", RACK: "r1"}, 3), ({"block": "b1", RACK: "r2"}, 2)]
    assert topology.assigned_domains(None) == []
