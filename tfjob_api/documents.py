"""Read job documents from a YAML/JSON file (or stdin): `tfjob-operator render`, `validate` and
`convert`, and `kubectl tfjob submit`.

Every way a file can be unusable — unreadable, not YAML, empty, not a mapping — becomes one
`InputError` with a single clear line; the CLI prints it instead of a traceback. A file may hold,
beside its jobs, the objects they need (a ConfigMap with the training program, a Secret, a claim):
`is_companion` is the one rule that tells those from jobs, so a mistyped job is never taken for one.
Part of `tfjob_api` so the operator's CLI and the client read files alike without one importing the other.
"""

from __future__ import annotations

import sys
from typing import Any

import yaml

from tfjob_api import kubeflow, names


class InputError(Exception):
    """A file that cannot be read as Kubernetes documents."""


def load_documents(path: str) -> list[Any]:
    """The documents of a file (`-`: stdin)."""
    try:
        text = sys.stdin.read() if path == "-" else open(path, encoding="utf-8").read()  # noqa: SIM115
    except OSError as error:
        raise InputError(f"{path}: cannot read: {error.strerror or error}") from error
    except UnicodeDecodeError as error:
        raise InputError(f"{path}: not a text file ({error.reason})") from error
    return parse_documents(text, path)


def parse_documents(text: str, source: str) -> list[Any]:
    """The documents of YAML (or JSON) text, a `kind: List` unwrapped; `source` names it in errors."""
    try:
        documents = [doc for doc in yaml.safe_load_all(text) if doc is not None]
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise InputError(f"{source}: not valid YAML{where}: {problem}") from error
    if not documents:
        raise InputError(f"{source}: no documents found")
    # A `kind: List` wrapper (what `kubectl get -o yaml` prints) is unwrapped.
    flat: list[Any] = []
    for doc in documents:
        if isinstance(doc, dict) and doc.get("kind") == "List" and isinstance(doc.get("items"), list):
            flat.extend(doc["items"])
        else:
            flat.append(doc)
    return flat


def describe(doc: Any, position: int) -> str:
    """A short name for a document in messages: `TensorFlowJob team-a/mnist` or `document 2`."""
    if isinstance(doc, dict):
        metadata = doc.get("metadata")
        meta = metadata if isinstance(metadata, dict) else {}
        name = meta.get("name")
        if name:
            namespace = meta.get("namespace")
            return f"{doc.get('kind', 'object')} {namespace + '/' if namespace else ''}{name}"
    return f"document {position}"


JOB_KINDS = (names.KIND, kubeflow.KIND)


def is_companion(doc: Any) -> bool:
    """Whether a document is an object that travels with the jobs of its file (a ConfigMap with the
    training program, a Secret, a PersistentVolumeClaim, ...) rather than a job.

    It is one when it is a mapping with a string `apiVersion` and `kind` and a `metadata.name`, its
    kind is not TensorFlowJob or TFJob (in any spelling of case) and its API group is not
    `kubeflow.org`. Everything else is a job candidate, checked as a job: `kind: TensorflowJob` or
    `apiVersion: kubeflow.org/v2` is reported as a bad job, never skipped.
    """
    if not isinstance(doc, dict):
        return False
    api_version, kind, metadata = doc.get("apiVersion"), doc.get("kind"), doc.get("metadata")
    if not isinstance(api_version, str) or not isinstance(kind, str) or not isinstance(metadata, dict):
        return False
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        return False
    group = api_version.rpartition("/")[0]  # "" for the core group ("v1")
    if group.strip().lower() == names.GROUP:
        return False
    return kind.strip().lower() not in {job_kind.lower() for job_kind in JOB_KINDS}
