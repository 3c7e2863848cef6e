"""Why the API server does not serve a kind of job, in words that say what to do.

A request for a kind the API server does not serve answers a bare `404 page not found`, the same
whether the kind's CustomResourceDefinition is missing, was refused its names because they clash with
another CRD of its group (`NamesAccepted=False`: the TensorFlowJob CRD's short name `tfjob` is the
TFJob CRD's singular, docs/kubeflow.md), is being deleted, is not Established yet, or does not serve
the version asked for. Printed as it is, that line tells a user nothing. So when a request for a kind
answers that 404 (`ClusterApiError.no_such_path`), the client reads the kind's CRD
(`apiextensions.k8s.io/v1` customresourcedefinitions/<plural>.<group>) and raises `KindNotServed`,
whose message names the kind and the CRD, says which of those it is (the failing condition's type,
status, reason and message), and what to do. Reading CRDs takes a grant many users lack; then the
message says the kind is not served and that its CRD could not be read. The CRD is only read after
such a 404, never on the way to a request that works.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from tfjobs.connection import api_path
from tfjobs.errors import ClusterApiError, KindNotServed
from tfjobs.kinds import TENSORFLOWJOB, TFJOB, JobKind

__all__ = ["crd_path", "not_served"]

_MAX_DETAIL_CHARS = 300

# How this project's installs bring each kind's CRD (docs/operations.md, docs/kubeflow.md).
INSTALLS = {
    TENSORFLOWJOB.resource: "kubectl apply --server-side -k manifests/ (or -k manifests/kubeflow/ to serve TFJobs "
                            "too; docs/kubeflow.md)",
    TFJOB.resource: "kubectl apply --server-side --force-conflicts -k manifests/kubeflow/ (docs/kubeflow.md)",
}
# The clash this project's own CRDs can have (docs/kubeflow.md): TensorFlowJob's short name is TFJob's singular.
_BOTH = ("install manifests/kubeflow/, whose TensorFlowJob CRD has no short name, to serve both kinds: "
         "kubectl apply --server-side --force-conflicts -k manifests/kubeflow/ (docs/kubeflow.md)")
CONFLICT_FIXES = {
    TENSORFLOWJOB.resource: f"if the other is the TFJob CRD (singular tfjob), {_BOTH}",
    TFJOB.resource: f"if the other is the TensorFlowJob CRD as shipped (short name tfjob), {_BOTH}",
}


class _Reader(Protocol):
    def get(self, path: str, **query: Any) -> dict[str, Any]: ...


def crd_path(kind: JobKind) -> str:
    """The path of the kind's CustomResourceDefinition (`.../customresourcedefinitions/tfjobs.kubeflow.org`)."""
    return api_path("apiextensions.k8s.io", "v1", "customresourcedefinitions", None, kind.resource)


def not_served(connection: _Reader, kind: JobKind) -> KindNotServed:
    """The error to raise for a kind the API server answered `404 page not found` for: its CRD read
    to say why (not installed, a failing condition, an unserved version) and what to do."""
    crd = kind.resource
    what = f"{kind.name} ({kind.resource}) is not served by this cluster"
    try:
        found = connection.get(crd_path(kind))
    except ClusterApiError as error:
        if error.not_found and not error.no_such_path:
            install = INSTALLS.get(crd, f"apply the CustomResourceDefinition {crd}")
            return KindNotServed(kind.name, crd, f"{what}: its CustomResourceDefinition {crd} is not installed; "
                                                 f"install it: {install}")
        reason = error.reason if error.status else f"cannot reach the API server: {error.reason}"
        detail = _clip(f"{reason}: {error.message}" if error.message else reason)
        return KindNotServed(kind.name, crd, f"{what}, and its CustomResourceDefinition {crd} could not be read "
                                             f"({detail}); ask a cluster admin to install it or to fix it "
                                             f"(kubectl get crd {crd} -o yaml shows its conditions)")
    condition, advice = _failing(found, kind)
    return KindNotServed(kind.name, crd, f"{what}: its CustomResourceDefinition {crd} {advice}", condition)


def _failing(crd: Mapping[str, Any], kind: JobKind) -> tuple[dict[str, Any] | None, str]:
    """The CRD's condition that keeps the kind from being served (None when none says so), and the
    rest of the sentence: what it shows and what to do."""
    name = kind.resource
    conditions = {str(c.get("type")): dict(c) for c in (crd.get("status") or {}).get("conditions") or []
                  if isinstance(c, Mapping)}
    names = conditions.get("NamesAccepted")
    if names is not None and names.get("status") != "True":
        fix = CONFLICT_FIXES.get(name, "")
        return names, (f"has {_shown(names)}; resolve the name conflict with the other CRD of group {kind.group} "
                       f"that holds the name (kubectl get crd): rename or delete one of the two"
                       + (f"; {fix}" if fix else ""))
    terminating = conditions.get("Terminating")
    if terminating is not None and terminating.get("status") == "True":
        return terminating, (f"is being deleted ({_shown(terminating)}); install it again once it is gone: "
                             f"{INSTALLS.get(name, f'apply the CustomResourceDefinition {name}')}")
    established = conditions.get("Established")
    if established is None or established.get("status") != "True":
        shown = f"has {_shown(established)}" if established is not None else "is not Established yet"
        return established, (f"{shown}; wait for it (kubectl wait --for condition=Established crd/{name}), "
                             f"or see why: kubectl describe crd {name}")
    served = [str(v.get("name")) for v in (crd.get("spec") or {}).get("versions") or []
              if isinstance(v, Mapping) and v.get("served")]
    if kind.version not in served:
        return None, (f"does not serve version {kind.version} (it serves: {', '.join(served) or 'none'}); "
                      f"apply a CRD that serves {kind.api_version}: "
                      f"{INSTALLS.get(name, f'the CustomResourceDefinition {name}')}")
    return None, "is Established only now; try again in a moment"


def _shown(condition: Mapping[str, Any]) -> str:
    """`NamesAccepted=False (SingularConflict: "tfjob" is already in use)`."""
    reason, message = str(condition.get("reason") or ""), str(condition.get("message") or "")
    detail = ": ".join(part for part in (reason, message) if part)
    return f"{condition.get('type')}={condition.get('status')}" + (f" ({_clip(detail)})" if detail else "")


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MAX_DETAIL_CHARS else text[: _MAX_DETAIL_CHARS - 3] + "..."
