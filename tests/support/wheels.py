"""The two distributions as a user meets them: wheels built from this repository, installed (not
editable) into fresh virtualenvs, run from a directory with no source tree in sight.

`build_wheels` builds the operator's and the client's wheel; `Venv` is a fresh virtualenv with a
`run(program, *args)` that runs its console scripts in a clean environment (no PYTHONPATH, no
TFJOB_* variable, no active virtualenv), so nothing of the checkout leaks in. Installing pulls the
dependencies from the package index, which is why the tests that use this are slow.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
from dataclasses import dataclass

ROOT = pathlib.Path(__file__).resolve().parents[2]


def clean_environment() -> dict[str, str]:
    """This process's environment without what would let the checkout or its venv leak in."""
    return {key: value for key, value in os.environ.items()
            if not key.startswith("TFJOB_") and key not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}


def run(argv: list[str], cwd: pathlib.Path, *, check: bool = True, timeout: float = 900,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, cwd=cwd, env=env or clean_environment(), capture_output=True, text=True,
                          timeout=timeout)
    if check:
        assert done.returncode == 0, f"{' '.join(argv)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done


@dataclass(frozen=True)
class Wheels:
    operator: pathlib.Path
    client: pathlib.Path


def checkout_copy(destination: pathlib.Path) -> pathlib.Path:
    """The files git tracks or would track (links kept as links), copied to `destination`: what a fresh
    clone holds, without the build/ and egg-info leftovers an editable install leaves in the tree."""
    tracked = run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], ROOT).stdout.split("\0")
    for name in filter(None, tracked):
        source, target = ROOT / name, destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            target.symlink_to(os.readlink(source))
        elif source.exists():  # a file deleted but not yet committed is not part of the copy
            shutil.copy2(source, target)
    return destination


def build_wheels(out: pathlib.Path) -> Wheels:
    """Both wheels, built without their dependencies into `out`, from a copy of the checkout."""
    source = checkout_copy(out / "source")
    for project in (source / "client", source):
        run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--disable-pip-version-check",
             "-w", str(out), str(project)], source)
    [operator] = out.glob("tfjob_operator-*.whl")
    [client] = out.glob("tfjob_client-*.whl")
    return Wheels(operator, client)


@dataclass(frozen=True)
class Venv:
    path: pathlib.Path
    workdir: pathlib.Path  # a directory away from the checkout, where commands run

    @classmethod
    def create(cls, path: pathlib.Path, *requirements: str | pathlib.Path) -> Venv:
        """A fresh virtualenv with `requirements` installed (wheel paths or requirement strings)."""
        run([sys.executable, "-m", "venv", str(path)], path.parent)
        run([str(path / "bin" / "pip"), "install", "-q", "--disable-pip-version-check",
             *map(str, requirements)], path.parent)
        workdir = path.parent / f"{path.name}-workdir"
        workdir.mkdir(exist_ok=True)
        return cls(path, workdir)

    def bin(self, program: str) -> str:
        return str(self.path / "bin" / program)

    def run(self, program: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return run([self.bin(program), *args], self.workdir, check=check)

    def python(self, code: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.run("python", "-c", code, check=check)
