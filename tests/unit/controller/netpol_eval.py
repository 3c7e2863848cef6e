"""A NetworkPolicy evaluator for tests, written from the Kubernetes semantics (networking.k8s.io/v1),
so the operator's policies can be checked for what they admit without a network plugin.

The rules, as the API documents them:

* A pod is isolated for ingress when at least one policy in its namespace selects it (podSelector;
  empty selects every pod) and has `Ingress` in policyTypes (default: Ingress, plus Egress when the
  policy has egress rules). An unisolated pod accepts everything.
* An isolated pod accepts a connection when any rule of any selecting policy admits it; policies add
  up, none takes away what another allows.
* A rule admits a connection when one of its `from` peers matches the source (absent or empty `from`:
  every source) and one of its `ports` matches the destination port and protocol (absent or empty:
  every port).
* A peer: `ipBlock` matches source IPs in `cidr` but not in `except`; otherwise `podSelector` alone
  matches pods in the policy's namespace, `namespaceSelector` alone every pod of the matching
  namespaces, both together the matching pods of the matching namespaces.
* A port: `protocol` (default TCP) must match; `port` absent means every port; a number, that port
  or, with `endPort`, the range; a name, the target pod's container port of that name and protocol.
* Label selectors: `matchLabels` and `matchExpressions` (In, NotIn, Exists, DoesNotExist) must all
  hold; an empty selector matches everything.

Egress and hostNetwork pods (which policies do not cover) are outside what the tests ask.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Pod:
    name: str
    namespace: str
    labels: Mapping[str, str]
    ip: str = "10.244.0.1"
    named_ports: Mapping[tuple[str, str], int] = field(default_factory=dict)  # (name, protocol) -> number

    @classmethod
    def from_manifest(cls, manifest: Mapping[str, Any], ip: str = "10.244.0.1") -> Pod:
        meta = manifest["metadata"]
        named = {(p["name"], p.get("protocol", "TCP")): p["containerPort"]
                 for c in manifest["spec"]["containers"] for p in c.get("ports") or [] if p.get("name")}
        return cls(meta["name"], meta.get("namespace", "default"), dict(meta.get("labels") or {}), ip, named)


def selector_matches(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or []:
        key, operator, values = expression["key"], expression["operator"], expression.get("values") or []
        if operator == "In" and labels.get(key) not in values:
            return False
        if operator == "NotIn" and key in labels and labels[key] in values:
            return False
        if operator == "Exists" and key not in labels:
            return False
        if operator == "DoesNotExist" and key in labels:
            return False
    return True


def policy_types(policy: Mapping[str, Any]) -> list[str]:
    spec = policy["spec"]
    if spec.get("policyTypes"):
        return list(spec["policyTypes"])
    return ["Ingress", *(["Egress"] if spec.get("egress") else [])]


def selects(policy: Mapping[str, Any], pod: Pod) -> bool:
    return (policy["metadata"].get("namespace", "default") == pod.namespace
            and selector_matches(policy["spec"].get("podSelector") or {}, pod.labels))


def peer_matches(peer: Mapping[str, Any], policy_namespace: str, source: Pod,
                 namespace_labels: Mapping[str, Mapping[str, str]]) -> bool:
    if "ipBlock" in peer:
        address = ipaddress.ip_address(source.ip)
        block = peer["ipBlock"]
        return (address in ipaddress.ip_network(block["cidr"], strict=False)
                and not any(address in ipaddress.ip_network(e, strict=False) for e in block.get("except") or []))
    if "namespaceSelector" in peer:
        namespace_ok = selector_matches(peer["namespaceSelector"], namespace_labels.get(source.namespace, {}))
    else:
        namespace_ok = source.namespace == policy_namespace
    pod_ok = "podSelector" not in peer or selector_matches(peer["podSelector"], source.labels)
    return namespace_ok and pod_ok


def port_matches(rule_port: Mapping[str, Any], target: Pod, port: int, protocol: str) -> bool:
    if rule_port.get("protocol", "TCP") != protocol:
        return False
    wanted = rule_port.get("port")
    if wanted is None:
        return True
    if isinstance(wanted, str):
        resolved = target.named_ports.get((wanted, protocol))
        return resolved == port
    end = rule_port.get("endPort")
    return wanted <= port <= end if end is not None else port == wanted


def ingress_allowed(policies: Iterable[Mapping[str, Any]], source: Pod, target: Pod, port: int,
                    protocol: str = "TCP", namespace_labels: Mapping[str, Mapping[str, str]] | None = None) -> bool:
    """Whether `source` may open a connection to `target` on `port`/`protocol`."""
    labels = namespace_labels or {}
    isolating = [p for p in policies if selects(p, target) and "Ingress" in policy_types(p)]
    if not isolating:
        return True
    for policy in isolating:
        namespace = policy["metadata"].get("namespace", "default")
        for rule in policy["spec"].get("ingress") or []:
            peers = rule.get("from") or []
            ports = rule.get("ports") or []
            peer_ok = not peers or any(peer_matches(peer, namespace, source, labels) for peer in peers)
            port_ok = not ports or any(port_matches(p, target, port, protocol) for p in ports)
            if peer_ok and port_ok:
                return True
    return False
