"""Where Kueue placed a queued job: a Workload's topology assignment read back, for people.

Kueue's topology-aware scheduling writes, in a Workload's `status.admission.podSetAssignments[]
.topologyAssignment`, the domains each pod set's pods go to, in v1beta2's compressed form (`levels`,
the Topology's node labels from the top down, and `slices`, each a run of domains whose values per
level are one `universal` value or `individual` values built from a prefix, roots and a suffix, with
pod counts likewise). `assigned_domains` expands it; `placement_lines` says it in a line per pod set,
for `kubectl tfjob describe`. Here, in the API contract, because both the operator
(`controller.kueue.topology`) and the client read it. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

HOSTNAME_LABEL = "kubernetes.io/hostname"


def _slice_values(level: Mapping[str, Any], count: int) -> list[str]:
    if level.get("universal") is not None:
        return [str(level["universal"])] * count
    individual = level.get("individual") or {}
    prefix, suffix = individual.get("prefix") or "", individual.get("suffix") or ""
    return [f"{prefix}{root}{suffix}" for root in individual.get("roots") or []]


def assigned_domains(assignment: Mapping[str, Any] | None) -> list[tuple[dict[str, str], int]]:
    """A `topologyAssignment` as a list of (domain, pod count), the domain being {level label: value}
    for each of its levels, in the assignment's order. [] for None."""
    if not assignment:
        return []
    levels = list(assignment.get("levels") or [])
    domains: list[tuple[dict[str, str], int]] = []
    for piece in assignment.get("slices") or []:
        count = int(piece.get("domainCount") or 0)
        values = [_slice_values(level, count) for level in piece.get("valuesPerLevel") or []]
        pods = piece.get("podCounts") or {}
        counts = ([int(pods["universal"])] * count if pods.get("universal") is not None
                  else [int(n) for n in pods.get("individual") or []])
        for index in range(count):
            domain = {levels[i]: values[i][index] for i in range(min(len(levels), len(values)))}
            domains.append((domain, counts[index] if index < len(counts) else 0))
    return domains


def placement_lines(workload: Mapping[str, Any]) -> list[str]:
    """One line per admitted pod set placed by topology: its domains above the host level with their
    pod counts, and over how many hosts, e.g. `worker: tfjob-test/block=b1,tfjob-test/rack=r1 (5 pods)
    on 3 hosts`. [] when the Workload has no topology assignment."""
    lines = []
    for assignment in ((workload.get("status") or {}).get("admission") or {}).get("podSetAssignments") or []:
        domains = assigned_domains(assignment.get("topologyAssignment"))
        if not domains:
            continue
        grouped: dict[str, int] = {}
        hosts = set()
        for domain, pods in domains:
            above = {k: v for k, v in domain.items() if k != HOSTNAME_LABEL}
            key = ",".join(f"{k}={v}" for k, v in above.items()) or "any"
            grouped[key] = grouped.get(key, 0) + pods
            hosts.add(domain.get(HOSTNAME_LABEL, ""))
        where = "; ".join(f"{key} ({pods} pods)" for key, pods in grouped.items())
        on_hosts = f" on {len(hosts)} hosts" if "" not in hosts else ""
        lines.append(f"{assignment.get('name', '')}: {where}{on_hosts}")
    return lines
