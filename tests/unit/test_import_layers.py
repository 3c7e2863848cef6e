"""The import direction of the operator's packages: every import goes down the layers, never up.

    tfconfig, kube  →  tfjob_api, workqueue, informers  →  controller.job  →  controller.kueue
                                                            →  controller (the loop)  →  controller.process
    tfconfig  →  tfjob_api  →  tfjobs (beside controller)

`tfjob_api` is the API contract (the kinds' names, labels, conditions, pod reading, the CRD schema and
defaults): it sits directly above `tfconfig`, whose role names it uses, and below everything that
acts on jobs. `tfjobs` (the kubectl plugin and the Python client) builds on `tfjob_api` and `tfconfig`
only (the client distribution imports none of the operator's packages) and stands beside the operator:
neither it nor any layer of `controller` imports the other, so a user who only wants the client never
loads the controller.

A module may import its own package, anything in a lower layer, and nothing else: packages in the
same layer stay independent of each other, and so do packages that stand beside each other.
`devcluster` (the local control plane) imports none of the operator's packages, and only
`kube/client.py` imports the `kubernetes` client, so an upgrade of that client touches one file.
Imports inside functions count too.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Most specific prefix first; a module belongs to the first layer whose prefix it starts with.
LAYERS: list[tuple[str, int]] = [
    ("tfconfig", 0),
    ("kube", 0),
    ("tfjob_api", 1),
    ("workqueue", 1),
    ("informers", 1),
    ("controller.job", 2),
    ("controller.kueue", 3),
    ("controller.process", 5),
    ("controller", 4),
    ("tfjobs", 2),
]
# Packages beside each other: neither imports the other, whatever the ranks of their layers.
BESIDE: list[tuple[str, str]] = [("tfjobs", "controller")]
OPERATOR_PACKAGES = ("tfjob_api", "tfconfig", "kube", "workqueue", "informers", "controller", "tfjobs")
KUBERNETES_CLIENT_MODULES = ["kube.client", "tfjobs.connection"]  # the operator's, the user tools'
# What the client distribution (tfjob-client) installs: these import nothing else of the project.
CLIENT_PACKAGES = ("tfjobs", "tfjob_api", "tfconfig", "tfheartbeat")


def owner(module: str) -> tuple[str, int] | None:
    """The layer prefix and rank a module belongs to, or None for modules outside the operator."""
    for prefix, rank in LAYERS:
        if module == prefix or module.startswith(prefix + "."):
            return prefix, rank
    return None


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(module: str, source: str, is_package: bool = False) -> Iterator[tuple[int, str]]:
    """(line, imported module) for every import in a module's source, relative ones resolved, and
    for every module named to `importlib.import_module` / `find_spec` as a literal string."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            target = ".".join([*base, node.module] if node.module else base)
            yield node.lineno, target
            for alias in node.names:  # `from controller import memory` imports controller.memory
                yield node.lineno, f"{target}.{alias.name}"
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute | ast.Name)
              and getattr(node.func, "attr", getattr(node.func, "id", "")) in ("import_module", "find_spec")
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            yield node.lineno, node.args[0].value


def file_imports(path: Path) -> Iterator[tuple[int, str]]:
    return imports(module_name(path), path.read_text(), path.name == "__init__.py")


def sources(*packages: str) -> list[Path]:
    return sorted(p for package in packages for p in (ROOT / package).rglob("*.py"))


def beside(one: str, other: str) -> bool:
    """Whether two layer prefixes belong to packages that stand beside each other."""
    packages = {one.split(".")[0], other.split(".")[0]}
    return any(packages == set(pair) for pair in BESIDE)


def layer_violations(module: str, found: Iterator[tuple[int, str]]) -> list[str]:
    here = owner(module)
    assert here is not None, module
    violations = []
    for line, target in found:
        there = owner(target)
        if there is None or there[0] == here[0]:
            continue
        if beside(here[0], there[0]):
            violations.append(f"{module}:{line} imports {target}: {here[0]} and {there[0]} stand beside each other")
        elif there[1] > here[1] or (there[1] == here[1] and not here[0].startswith(there[0] + ".")):
            violations.append(f"{module}:{line} imports {target} ({there[0]}, layer {there[1]}) "
                              f"from {here[0]} (layer {here[1]})")
    return violations


@pytest.mark.parametrize("path", sources(*OPERATOR_PACKAGES), ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_go_only_down_the_layers(path: Path) -> None:
    assert layer_violations(module_name(path), file_imports(path)) == []


def test_only_the_two_client_modules_import_the_kubernetes_package() -> None:
    importers = sorted({module_name(path) for path in sources(*OPERATOR_PACKAGES, "devcluster")
                        for _, target in file_imports(path) if target.split(".")[0] == "kubernetes"})
    assert importers == KUBERNETES_CLIENT_MODULES


def test_the_client_distribution_imports_only_its_own_packages() -> None:
    project = {*OPERATOR_PACKAGES, "devcluster", "tfheartbeat"}
    found = [f"{path.relative_to(ROOT)}:{line} imports {target}" for path in sources(*CLIENT_PACKAGES)
             for line, target in file_imports(path)
             if target.split(".")[0] in project and target.split(".")[0] not in CLIENT_PACKAGES]
    assert found == []


def test_importing_the_client_leaves_the_official_kubernetes_client_whole() -> None:
    program = ("import tfjobs, tfjobs.cli\n"
               "from kubernetes import client, config, watch\n"
               "print(client.CoreV1Api.__name__, client.V1Pod.__name__, watch.Watch.__name__, config.load_kube_config.__name__)")
    printed = subprocess.run([sys.executable, "-c", program], cwd=ROOT, capture_output=True, text=True, check=True)
    assert printed.stdout.split() == ["CoreV1Api", "V1Pod", "Watch", "load_kube_config"]


def test_the_client_loads_none_of_the_controller() -> None:
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, tfjobs, tfjobs.cli; print(*sorted(sys.modules))"],
        cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    assert [name for name in loaded if name.split(".")[0] == "controller"] == []


def test_the_local_control_plane_imports_none_of_the_operator() -> None:
    found = [f"{path.relative_to(ROOT)}:{line} imports {target}" for path in sources("devcluster")
             for line, target in file_imports(path) if target.split(".")[0] in OPERATOR_PACKAGES]
    assert found == []


@pytest.mark.parametrize(("module", "source"), [
    ("controller.job.plan", "from controller.reconciler import Reconciler"),
    ("controller.job.plan", "from controller import memory"),
    ("controller.reconciler", "import controller.process.app"),
    ("informers.store", "from workqueue import Queue"),
    ("kube.client", "def f():\n    from tfconfig import ROLES"),
    ("tfjob_api.conditions", "from controller.job import plan"),
    ("tfjob_api.names", "from informers import store"),
    ("tfjobs.client", "from controller.job import plan"),
    ("tfjobs.cli", "from controller.process.cli import main"),
    ("controller.process.cli", "from tfjobs import manifests"),
    ("controller.job.plan", "import tfjobs.jobview"),
    ("controller.kueue.gate", "from ..process import cli"),
])
def test_an_import_up_or_across_the_layers_is_caught(module: str, source: str) -> None:
    assert layer_violations(module, imports(module, source)) != []


@pytest.mark.parametrize(("module", "source"), [
    ("controller.reconciler", "from controller.job.plan import plan_job"),
    ("controller.kueue.gate", "from controller.kueue import protocol"),
    ("controller.kueue.gate", "from . import protocol"),
    ("controller.process.app", "from controller.controller import Controller"),
    ("informers.reflector", "from kube import ApiError"),
    ("controller.job.plan", "from api import conditions"),
    ("tfjob_api.defaults", "from tfjob_api.crd import job_schema"),
    ("tfjobs.describe", "from api import podstate"),
    ("tfjobs.watching", "from informers.informer import SharedInformer"),
    ("tfjobs.logs", "from kube import Kube"),
    ("workqueue.queue", "import threading"),
])
def test_an_import_down_the_layers_or_within_a_package_is_allowed(module: str, source: str) -> None:
    assert layer_violations(module, imports(module, source)) == []
