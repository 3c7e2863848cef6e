"""The two kinds of job are defined once (`tfjob_api.kinds`) and passed explicitly everywhere.

The user tools (`tfjobs.kinds`) and the operator (`controller.job.kinds`) each extend the one identity
of a kind with what they need, so they cannot disagree on where a kind lives or how its work-queue key
reads. No function takes a kind with a default: a forgotten kind is a TypeError (and a mypy error),
never a TFJob silently treated as a TensorFlowJob.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from controller.job import kinds as operator_kinds
from tfjob_api import kinds
from tfjobs import kinds as client_kinds

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("identity", kinds.KINDS, ids=lambda kind: kind.name)
def test_the_user_tools_and_the_operator_extend_the_one_identity_of_each_kind(identity: kinds.Kind) -> None:
    client = next(kind for kind in client_kinds.KINDS if kind.name == identity.name)
    operator = next(kind for kind in operator_kinds.KINDS if kind.name == identity.name)

    assert isinstance(client, kinds.Kind) and isinstance(operator, kinds.Kind)
    assert client.identity() == operator.identity() == identity.identity()


def test_a_work_queue_key_names_its_kind_only_for_a_tfjob() -> None:
    assert kinds.TENSORFLOWJOB.key("ns", "mnist") == "ns/mnist"
    assert kinds.TFJOB.key("ns", "mnist") == "TFJob:ns/mnist"
    assert operator_kinds.parse_key(operator_kinds.TFJOB.key("ns", "mnist")) == (operator_kinds.TFJOB, "ns/mnist")


def kind_defaults(source: str) -> list[str]:
    """The functions of a module's source that give a parameter annotated with a kind a default kind.
    A default of None is no kind: the user tools' "either kind, whichever has a job of that name"."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        arguments = node.args
        positional = [*arguments.posonlyargs, *arguments.args]
        defaults = [*zip(positional[len(positional) - len(arguments.defaults):], arguments.defaults, strict=True),
                    *((arg, default) for arg, default in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True)
                      if default is not None)]
        if any(arg.annotation is not None and "Kind" in ast.unparse(arg.annotation)
               and not (isinstance(default, ast.Constant) and default.value is None) for arg, default in defaults):
            found.append(node.name)
    return found


def test_no_function_gives_a_kind_a_default() -> None:
    sources = sorted(path for package in ("tfjob_api", "tfjobs", "controller") for path in (ROOT / package).rglob("*.py"))
    assert [f"{path.relative_to(ROOT)}:{name}" for path in sources for name in kind_defaults(path.read_text())] == []


@pytest.mark.parametrize("signature", ["job: dict, kind: JobKind = TENSORFLOWJOB", "*, kind: JobKind = TFJOB",
                                       "job: dict, *, n: int = 1, kind: kinds.Kind = kinds.TFJOB"])
def test_a_default_kind_is_found(signature: str) -> None:
    source = (f"def build({signature}) -> None: ...\n"
              "def explicit(job: dict, kind: JobKind, n: int = 1) -> None: ...\n"
              "def either(name: str, *, kind: JobKind | None = None) -> None: ...\n")
    assert kind_defaults(source) == ["build"]
