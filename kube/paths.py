"""REST paths of Kubernetes resources, built and taken apart; the verb and query of a request.

One generic client serves every resource (core, custom resources, subresources), so the only thing
that differs between them is the path: `resource_path()` builds it, `parse_path()` reads it back for
metrics and logs, `request_verb()` names the Kubernetes verb and `query_pairs()` turns snake_case
keywords into the API's camelCase query.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

__all__ = ["ParsedPath", "parse_path", "query_pairs", "request_verb", "resource_path"]


def resource_path(
    group: str,
    version: str,
    plural: str,
    namespace: str | None = None,
    name: str | None = None,
    subresource: str | None = None,
) -> str:
    """The REST path of a collection, an object or a subresource.

    `resource_path("", "v1", "pods", "ns", "p", "status")` → `/api/v1/namespaces/ns/pods/p/status`;
    `resource_path("kubeflow.org", "v1", "tensorflowjobs")` → `/apis/kubeflow.org/v1/tensorflowjobs`
    (every namespace).
    """
    if subresource and not name:
        raise ValueError("a subresource needs an object name")
    parts = ["/api", version] if not group else ["/apis", group, version]
    if namespace:
        parts += ["namespaces", namespace]
    parts.append(plural)
    if name:
        parts.append(name)
    if subresource:
        parts.append(subresource)
    return "/".join(parts)


class ParsedPath(NamedTuple):
    group: str
    version: str
    namespace: str | None
    resource: str
    name: str | None
    subresource: str | None


_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})


def parse_path(path: str) -> ParsedPath | None:
    """The parts of a resource path, or None for non-resource paths (`/version`, discovery)."""
    segments = [s for s in path.split("?", 1)[0].split("/") if s]
    if len(segments) >= 3 and segments[0] == "api":
        group, version, rest = "", segments[1], segments[2:]
    elif len(segments) >= 4 and segments[0] == "apis":
        group, version, rest = segments[1], segments[2], segments[3:]
    else:
        return None
    namespace = None
    if rest[0] == "namespaces" and len(rest) >= 3 and not (len(rest) == 3 and rest[2] in _NAMESPACE_SUBRESOURCES):
        namespace, rest = rest[1], rest[2:]
    return ParsedPath(
        group,
        version,
        namespace,
        rest[0],
        rest[1] if len(rest) > 1 else None,
        "/".join(rest[2:]) if len(rest) > 2 else None,
    )


def request_verb(method: str, parsed: ParsedPath | None) -> str:
    """The Kubernetes verb of a request: get/list/create/update/patch/delete/deletecollection."""
    has_name = parsed is None or parsed.name is not None  # a non-resource path is a plain get
    return {
        "GET": "get" if has_name else "list",
        "POST": "create",
        "PUT": "update",
        "PATCH": "patch",
        "DELETE": "delete" if has_name else "deletecollection",
    }.get(method, method.lower())


def _camel(key: str) -> str:
    """`label_selector` → `labelSelector`; `continue_` / `_continue` → `continue`."""
    stripped = key.strip("_")
    if "_" not in stripped:
        return stripped
    head, *tail = stripped.split("_")
    return head + "".join(t[:1].upper() + t[1:] for t in tail)


def query_pairs(query: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for key, value in (query or {}).items():
        if value is None:
            continue
        values = value if isinstance(value, list | tuple) else [value]
        for v in values:
            text = ("true" if v else "false") if isinstance(v, bool) else str(v)
            pairs.append((_camel(key), text))
    return pairs

