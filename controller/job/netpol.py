"""The job's NetworkPolicy: its TF port reachable only from the job's own pods (docs/production.md).

TensorFlow's gRPC servers accept any connection and authenticate none, so any pod of the cluster
can join or disrupt a training job it can reach. With `spec.networkPolicy.enabled` (or the operator's
`--network-policy=on` default) the job gets one NetworkPolicy `<job>-tfjob`, owned by the job:

* it selects the job's pods (the job-name label) for Ingress;
* rule 1: the job's TF port(s) -- one per distinct port among the roles with replicas -- from the
  job's own pods and from the `allowFrom` peers;
* rule 2 (`otherPorts: Allow`, the default): every other TCP port (as `port`/`endPort` ranges around
  the TF ports), and all of UDP and SCTP, from anywhere -- what the pods accepted before the policy,
  when no other policy selects them. `otherPorts: Deny` leaves rule 2 out: other ports are then open
  only where another NetworkPolicy of the namespace allows them (policies add up; none can take
  away what another allows, so rule 2 also widens a stricter policy for the job's pods).

Egress is not restricted. Pure functions; the planner decides when to create, patch or delete.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from controller.job.builders import owned_metadata
from controller.job.kinds import JobKind
from controller.job.mergepatch import merge_patch
from tfconfig import DEFAULT_PORT, ROLES, role_port, role_replicas
from tfjob_api.names import JOB_NAME_LABEL

API_VERSION = "networking.k8s.io/v1"
KIND = "NetworkPolicy"  # and its key in `Plan.children`
NAME_SUFFIX = "-tfjob"
MAX_PORT = 65535


@dataclass(frozen=True)
class PolicyView:
    """What the planner knows about a job's NetworkPolicy: the operator-wide default, and the policy
    of that name the job owns in the cache (None when there is none)."""

    default_on: bool
    existing: Mapping[str, Any] | None


def policy_name(job_name: str) -> str:
    return job_name + NAME_SUFFIX


def wanted(job: Mapping[str, Any], default_on: bool) -> bool:
    enabled = (job["spec"].get("networkPolicy") or {}).get("enabled")
    return default_on if enabled is None else bool(enabled)


def tf_ports(job: Mapping[str, Any]) -> list[int]:
    """The distinct TF ports of the roles that have pods (the Service's ports)."""
    spec = job["spec"]
    return sorted({role_port(spec[role]) for role in ROLES if role_replicas(spec, role) > 0}) or [DEFAULT_PORT]


def other_tcp_ranges(ports: list[int]) -> list[dict[str, Any]]:
    """Every TCP port but `ports`, as NetworkPolicy ports (`port` with `endPort` for a range)."""
    ranges = []
    start = 1
    for port in sorted(set(ports)):
        if start <= port - 1:
            ranges.append((start, port - 1))
        start = port + 1
    if start <= MAX_PORT:
        ranges.append((start, MAX_PORT))
    return [{"protocol": "TCP", "port": low, **({"endPort": high} if high > low else {})} for low, high in ranges]


def policy_spec(job: Mapping[str, Any]) -> dict[str, Any]:
    name = job["metadata"]["name"]
    settings = job["spec"].get("networkPolicy") or {}
    ports = tf_ports(job)
    own_pods = {"podSelector": {"matchLabels": {JOB_NAME_LABEL: name}}}
    ingress: list[dict[str, Any]] = [{
        "from": [own_pods, *[dict(peer) for peer in settings.get("allowFrom") or []]],
        "ports": [{"protocol": "TCP", "port": port} for port in ports],
    }]
    if settings.get("otherPorts", "Allow") == "Allow":
        ingress.append({"ports": [*other_tcp_ranges(ports), {"protocol": "UDP"}, {"protocol": "SCTP"}]})
    return {"podSelector": {"matchLabels": {JOB_NAME_LABEL: name}}, "policyTypes": ["Ingress"], "ingress": ingress}


def build_network_policy(job: Mapping[str, Any], kind: JobKind) -> dict[str, Any]:
    name = job["metadata"]["name"]
    return {
        "apiVersion": API_VERSION,
        "kind": "NetworkPolicy",
        "metadata": owned_metadata(job, policy_name(name), {JOB_NAME_LABEL: name}, {}, kind),
        "spec": policy_spec(job),
    }


def spec_patch(existing: Mapping[str, Any], job: Mapping[str, Any]) -> dict[str, Any] | None:
    """The merge patch that brings an owned policy back to what the job needs (ports changed,
    allowFrom changed, or someone edited it); None when it already is."""
    desired = policy_spec(job)
    current = existing.get("spec") or {}
    if _normalized(current) == _normalized(desired):
        return None
    return {"spec": merge_patch(current, desired)}


def _normalized(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    """What a policy spec means, not how it was spelled: the API server defaults every
    NetworkPolicyPort's protocol to TCP and drops empty `matchLabels`, `matchExpressions` and
    `except` (an empty selector `{}` stays: it selects everything). Both sides of a comparison go
    through this, so a policy the server stored as asked is never patched again."""
    ingress = []
    for rule in spec.get("ingress") or []:
        entry = dict(rule)
        if "ports" in entry:
            entry["ports"] = [{"protocol": "TCP", **p} for p in entry["ports"]]
        if "from" in entry:
            entry["from"] = [_normalized_peer(peer) for peer in entry["from"]]
        ingress.append(entry)
    return {**spec, "ingress": ingress}


def _normalized_peer(peer: Mapping[str, Any]) -> dict[str, Any]:
    normalized: dict[str, Any] = {}
    for key, value in peer.items():
        if key in ("podSelector", "namespaceSelector") and isinstance(value, Mapping):
            value = {k: v for k, v in value.items() if not (k in ("matchLabels", "matchExpressions") and not v)}
        elif key == "ipBlock" and isinstance(value, Mapping):
            value = {k: v for k, v in value.items() if not (k == "except" and not v)}
        normalized[key] = value
    return normalized
