"""Which APIs the server serves: discovery, cached, and corrected by the CustomResourceDefinitions.

`Kube.has_api(group, version, kind)` answers from here. Discovery listings are cached (5 minutes; a
miss 10 seconds), because the operator asks at start and then every few seconds (`--kubeflow-tfjob=auto`
follows the TFJob CRD). Discovery lags a new CustomResourceDefinition: for a moment after the CRD is
Established the API server serves its kind but does not list it yet, so a kind that discovery does not
list is looked for among the Established CRDs, and when one serves it the cached listing is dropped. A
client that may not list CRDs asks with `crds=False` and keeps discovery's answer.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from kube.clock import Clock
from kube.errors import ApiError

__all__ = ["Discovery"]

NEGATIVE_TTL = 10.0
POSITIVE_TTL = 300.0
CRDS_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"

Get = Callable[[str], dict[str, Any]]


class Discovery:
    """The cached answers to "is group/version (and kind) served?", read with `get` (a GET of a path)."""

    def __init__(self, get: Get, clock: Clock) -> None:
        self._get = get
        self._clock = clock
        self._cache: dict[tuple[str, str], tuple[float, dict[str, Any] | None]] = {}
        self._lock = threading.Lock()

    def has_api(self, group: str, version: str, kind: str | None = None, *, crds: bool = True) -> bool:
        resources = self._listing(group, version)
        if kind is None:
            return resources is not None
        if resources is not None and lists_kind(resources, kind):
            return True
        if not crds or not group or not self._established_crd_serves(group, version, kind):
            return False
        with self._lock:
            self._cache.pop((group, version), None)
        return True

    def invalidate(self) -> None:
        with self._lock:
            self._cache.clear()

    def _established_crd_serves(self, group: str, version: str, kind: str) -> bool:
        """Whether an Established CRD serves `kind` in group/version: the API server's own word,
        which discovery follows a moment later. A miss is remembered for 10 s; a client that may
        not read CRDs (or a failed read) learns nothing here and keeps discovery's answer."""
        key = ("crd", f"{group}/{version}/{kind}")
        now = self._clock.now()
        with self._lock:
            cached = self._cache.get(key)
        if cached is not None and cached[0] > now:
            return False
        try:
            listing = self._get(CRDS_PATH)
        except ApiError:
            listing = {}
        if any(crd_serves(crd, group, version, kind) for crd in listing.get("items") or []):
            return True
        with self._lock:
            self._cache[key] = (now + NEGATIVE_TTL, None)
        return False

    def _listing(self, group: str, version: str) -> dict[str, Any] | None:
        key = (group, version)
        now = self._clock.now()
        with self._lock:
            cached = self._cache.get(key)
        if cached is not None and cached[0] > now:
            return cached[1]
        path = f"/api/{version}" if not group else f"/apis/{group}/{version}"
        try:
            resources: dict[str, Any] | None = self._get(path)
        except ApiError as exc:
            if not exc.not_found:
                raise
            resources = None
        ttl = POSITIVE_TTL if resources is not None else NEGATIVE_TTL
        with self._lock:
            self._cache[key] = (now + ttl, resources)
        return resources


def lists_kind(resources: Mapping[str, Any], kind: str) -> bool:
    """Whether a discovery listing (APIResourceList) names `kind` as a resource (not a subresource)."""
    return any(r.get("kind") == kind and "/" not in str(r.get("name", "")) for r in resources.get("resources") or [])


def crd_serves(crd: Mapping[str, Any], group: str, version: str, kind: str) -> bool:
    """Whether a CustomResourceDefinition is Established and serves `kind` in group/version."""
    spec, status = crd.get("spec") or {}, crd.get("status") or {}
    established = any(c.get("type") == "Established" and c.get("status") == "True"
                      for c in status.get("conditions") or [])
    served = any(v.get("name") == version and v.get("served") for v in spec.get("versions") or [])
    return (established and served and spec.get("group") == group
            and (status.get("acceptedNames") or {}).get("kind") == kind)
