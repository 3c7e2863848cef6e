"""tfheartbeat runs inside training images: it imports only the standard library and itself (Keras is
looked up by name, on first use of the callback), never the operator."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[3] / "tfheartbeat"


def imported(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("path", sorted(PACKAGE.glob("*.py")), ids=lambda p: p.name)
def test_a_module_imports_only_the_standard_library_and_tfheartbeat(path: Path) -> None:
    foreign = imported(path) - set(sys.stdlib_module_names) - {"tfheartbeat", "__future__"}
    assert foreign == set()
