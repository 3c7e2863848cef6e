"""Job manifests for `submit` and `create`: read them, pick the TensorFlowJobs and the objects that
travel with them, apply `--set` overrides.

Files are read with the operator's own reader (`tfjob_api.documents`: one clear error for
an unreadable or invalid file, `kind: List` unwrapped); YAML text and dicts are accepted as well.
Beside its jobs a file may hold companions (`tfjob_api.documents.is_companion`): the ConfigMaps, Secrets
and PersistentVolumeClaims (core/v1) a job needs, which are created with it; any other kind is
refused with a message that says to `kubectl apply` it.
`--set worker.replicas=8` changes one field: the path is relative to `spec` unless it starts with
`spec.` or `metadata.`, list items are addressed as `containers[0]`, and the value is read as a
YAML scalar (`8` is a number, `true` a boolean, `null` removes the field).
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from tfjob_api import kubeflow, names
from tfjob_api.documents import InputError, describe, is_companion, load_documents, parse_documents

__all__ = ["COMPANION_PLURALS", "InputError", "Manifest", "apply_overrides", "companion_plural", "jobs_from_documents",
           "load_manifest", "manifest_from_documents", "manifest_from_yaml", "parse_override", "set_path"]

COMPANION_PLURALS = {"ConfigMap": "configmaps", "Secret": "secrets", "PersistentVolumeClaim": "persistentvolumeclaims"}
"""The kinds (all core/v1) created beside a job, with their resource names."""


@dataclass
class Manifest:
    """What a file asks `submit` to create: its companions (in the file's order), then its jobs."""

    jobs: list[dict[str, Any]] = field(default_factory=list)
    companions: list[dict[str, Any]] = field(default_factory=list)


# The job kinds the tools create: this project's, and Kubeflow's TFJob (served with manifests/kubeflow/).
JOB_KINDS = {(names.API_VERSION, names.KIND), (kubeflow.API_VERSION, kubeflow.KIND)}


def _job(doc: Any, position: int, source: str) -> dict[str, Any]:
    """A deep copy of a TensorFlowJob or TFJob document; InputError naming it when it is something else."""
    if not isinstance(doc, Mapping):
        raise InputError(f"{source}: {describe(doc, position)} is not a mapping")
    if (doc.get("apiVersion"), doc.get("kind")) not in JOB_KINDS:
        raise InputError(f"{source}: {describe(doc, position)} is a {doc.get('apiVersion')}/{doc.get('kind')}, "
                         f"not a {names.API_VERSION}/{names.KIND} or {kubeflow.API_VERSION}/{kubeflow.KIND}")
    return copy.deepcopy(dict(doc))


def companion_plural(doc: Mapping[str, Any], where: str) -> str:
    """The resource name (`configmaps`, ...) of a companion created beside a job; InputError
    saying what to do with a companion of another kind. `where` starts the message."""
    plural = COMPANION_PLURALS.get(doc.get("kind", "")) if doc.get("apiVersion") == "v1" else None
    if plural is None:
        raise InputError(f"{where}: kubectl tfjob submit creates ConfigMaps, Secrets and PersistentVolumeClaims "
                         f"beside its jobs; apply the {doc.get('kind')} with kubectl apply")
    return plural


def _companion(doc: dict[str, Any], position: int, source: str) -> dict[str, Any]:
    """A deep copy of a companion of a supported kind."""
    companion_plural(doc, f"{source}: {describe(doc, position)}")
    return copy.deepcopy(doc)


def manifest_from_documents(documents: Iterable[Any], source: str) -> Manifest:
    """The TensorFlowJobs and companions among `documents` (deep copies); InputError when there is
    no job, a job candidate is not a TensorFlowJob, or a companion is of a kind not created here.
    Every document is checked before anything is created."""
    manifest = Manifest()
    for position, doc in enumerate(documents, 1):
        if is_companion(doc):
            manifest.companions.append(_companion(doc, position, source))
        else:
            manifest.jobs.append(_job(doc, position, source))
    if not manifest.jobs:
        raise InputError(f"{source}: no TensorFlowJob found")
    return manifest


def jobs_from_documents(documents: Iterable[Any], source: str) -> list[dict[str, Any]]:
    """The TensorFlowJobs of `documents` (deep copies), which must all be TensorFlowJobs;
    InputError when there is none or a document is something else."""
    jobs = [_job(doc, position, source) for position, doc in enumerate(documents, 1)]
    if not jobs:
        raise InputError(f"{source}: no TensorFlowJob found")
    return jobs


def load_manifest(path: str) -> Manifest:
    """The TensorFlowJobs and companions of a YAML/JSON file (`-`: standard input)."""
    return manifest_from_documents(load_documents(path), path)


def manifest_from_yaml(text: str) -> Manifest:
    """The TensorFlowJobs and companions of YAML (or JSON) text."""
    return manifest_from_documents(parse_documents(text, "YAML"), "YAML")


def _path_steps(path: str) -> list[str | int]:
    """`worker.template.spec.containers[0].image` → its keys and indexes; `\\.` is a literal dot
    (annotation keys: `metadata.annotations.example\\.com/owner`)."""
    steps: list[str | int] = []
    key, i, escaped, pending = "", 0, False, False
    while i < len(path):
        ch = path[i]
        if escaped:
            key, escaped = key + ch, False
        elif ch == "\\":
            escaped = True
        elif ch == ".":
            if not key and not pending:
                raise ValueError("an empty key")
            if key:
                steps.append(key)
            key, pending = "", False
        elif ch == "[":
            close = path.find("]", i)
            if close < 0 or not path[i + 1:close].isdigit():
                raise ValueError("an index must be [number]")
            if key:
                steps.append(key)
            elif not steps:
                raise ValueError("an index needs a list before it")
            steps.append(int(path[i + 1:close]))
            key, pending, i = "", True, close
        else:
            key += ch
        i += 1
    if key:
        steps.append(key)
    elif not pending or escaped:
        raise ValueError("an empty key")
    return steps


def parse_override(text: str) -> tuple[list[str | int], Any]:
    """`worker.replicas=8` → (['spec', 'worker', 'replicas'], 8)."""
    path, sep, raw = text.partition("=")
    path = path.strip()
    if not sep or not path:
        raise InputError(f"--set {text!r}: expected PATH=VALUE, e.g. worker.replicas=8")
    try:
        steps = _path_steps(path)
    except ValueError as error:
        raise InputError(f"--set {text!r}: cannot read the path {path!r}: {error}") from error
    if not isinstance(steps[0], str):
        raise InputError(f"--set {text!r}: the path must start with a field name")
    if steps[0] not in ("spec", "metadata"):
        steps.insert(0, "spec")
    try:
        value = yaml.safe_load(raw) if raw.strip() else raw
    except yaml.YAMLError:
        value = raw
    return steps, value


def set_path(document: dict[str, Any], steps: list[str | int], value: Any) -> None:
    """Set (or, with None, remove) the field at `steps`, creating mappings on the way."""
    where: Any = document
    for step, following in itertools.pairwise(steps):
        if isinstance(step, int):
            if not isinstance(where, list) or step >= len(where):
                raise InputError(f"--set: no item [{step}] at {'.'.join(map(str, steps))}")
            where = where[step]
            continue
        if not isinstance(where, dict):
            raise InputError(f"--set: {step!r} is not inside a mapping at {'.'.join(map(str, steps))}")
        if where.get(step) is None:
            if isinstance(following, int):
                raise InputError(f"--set: {step} is not a list at {'.'.join(map(str, steps))}")
            where[step] = {}
        where = where[step]
    last = steps[-1]
    if isinstance(last, int):
        if not isinstance(where, list) or last >= len(where):
            raise InputError(f"--set: no item [{last}] at {'.'.join(map(str, steps))}")
        where[last] = value
    elif not isinstance(where, dict):
        raise InputError(f"--set: {last!r} is not inside a mapping")
    elif value is None:
        where.pop(last, None)
    else:
        where[last] = value


def apply_overrides(job: Mapping[str, Any], overrides: Iterable[str] | Mapping[str, Any]) -> dict[str, Any]:
    """A copy of `job` with `--set`-style overrides (strings `PATH=VALUE`, or a mapping of PATH to
    value) applied in order."""
    result = copy.deepcopy(dict(job))
    for item in overrides.items() if isinstance(overrides, Mapping) else overrides:
        if isinstance(item, str):
            steps, value = parse_override(item)
        else:
            steps, value = parse_override(f"{item[0]}=")[0], item[1]
        set_path(result, steps, value)
    return result
