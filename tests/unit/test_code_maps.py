"""The maps of the code say where everything is, and stay true as the code moves.

Two maps, two homes (docs/development.md, "Maps of the code"): the README's "Map of the code" names
every top-level package, for a newcomer; `controller/__init__.py`'s docstring names every module of
`controller/` and its subpackages, beside the code that changes most. In the docstring each bullet
starts with the package it maps (`` `job/` ``, `` `job/kubeflow/` ``, ...) and names its modules in
backticks (`` `plan` `` or `` `plan.plan_job` ``); the bullet that starts with no package maps the
modules at the root of `controller/`.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONTROLLER = ROOT / "controller"


def top_level_packages() -> list[str]:
    return sorted(path.parent.name for path in ROOT.glob("*/__init__.py"))


def readme_map_entries(readme: str) -> list[str]:
    """The top-level entries of the README's map (`kube/`, `hack/`, ...), as written."""
    section = readme.split("## Map of the code", 1)[1]
    block = section.split("```", 2)[1]
    return [line.split()[0] for line in block.splitlines() if line.strip() and not line[0].isspace()]


def map_bullets(docstring: str) -> dict[str, str]:
    """The docstring's bullets by the package they map, relative to `controller/` ("" for the root)."""
    bullets = re.split(r"^\* ", docstring, flags=re.M)[1:]
    mapped: dict[str, str] = {}
    for bullet in bullets:
        first = re.search(r"`([^`]+)`", bullet)
        package = first.group(1) if first and first.group(1).endswith("/") and bullet.startswith("`") else ""
        assert package not in mapped, f"two bullets map {package or 'the root'}"
        mapped[package] = bullet
    return mapped


def unmapped_modules(docstring: str, package_root: Path) -> list[str]:
    """The modules of a package tree (its `__init__`s aside) that its map's bullets do not name."""
    bullets = map_bullets(docstring)
    missing = []
    for path in sorted(package_root.rglob("*.py")):
        if path.name == "__init__.py":
            continue
        package = path.parent.relative_to(package_root).as_posix()
        package = "" if package == "." else package + "/"
        bullet = bullets.get(package, "")
        if not re.search(rf"`{re.escape(path.stem)}[`.]", bullet):
            missing.append(path.relative_to(package_root.parent).as_posix())
    return missing


def controller_map() -> str:
    docstring = ast.get_docstring(ast.parse((CONTROLLER / "__init__.py").read_text()))
    assert docstring is not None
    return docstring


def test_the_readme_maps_every_top_level_package() -> None:
    entries = readme_map_entries((ROOT / "README.md").read_text())
    assert [package for package in top_level_packages() if f"{package}/" not in entries] == []


def test_everything_the_readme_maps_exists() -> None:
    entries = readme_map_entries((ROOT / "README.md").read_text())
    assert [entry for entry in entries if not (ROOT / entry).exists()] == []


def test_the_controller_map_names_every_module_of_the_controller() -> None:
    assert unmapped_modules(controller_map(), CONTROLLER) == []


def test_every_package_the_controller_map_has_a_bullet_for_exists() -> None:
    assert [package for package in map_bullets(controller_map()) if not (CONTROLLER / package).is_dir()] == []


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "controller"
    for module in ("__init__.py", "loop.py", "job/__init__.py", "job/plan.py", "job/kubeflow/__init__.py",
                   "job/kubeflow/convert.py"):
        (root / module).parent.mkdir(parents=True, exist_ok=True)
        (root / module).write_text("")
    return root


@pytest.mark.parametrize(("docstring", "missing"), [
    ("* `job/` -- `plan.plan_job`.\n* `job/kubeflow/` -- `convert`.\n* the loop: `loop`.", []),
    ("* `job/` -- `plan`.\n* the loop: `loop`.", ["controller/job/kubeflow/convert.py"]),
    ("* `job/` -- `plan`, `convert`.\n* `job/kubeflow/` -- nothing.\n* the loop: `loop`.",
     ["controller/job/kubeflow/convert.py"]),
    ("* `job/` -- `planner`.\n* `job/kubeflow/` -- `convert`.\n* the loop: `loop`.", ["controller/job/plan.py"]),
    ("* `job/` -- `plan`, `loop`.\n* `job/kubeflow/` -- `convert`.", ["controller/loop.py"]),
])
def test_a_module_missing_from_its_packages_bullet_is_found(tree: Path, docstring: str, missing: list[str]) -> None:
    assert unmapped_modules(docstring, tree) == missing


def test_a_package_missing_from_the_readme_map_is_told_apart_from_one_mapped() -> None:
    readme = "# x\n## Map of the code\n\n```\nkube/     the client\n  client.py  Kube\nhack/  scripts\n```\n"
    assert readme_map_entries(readme) == ["kube/", "hack/"]
