"""The parallel suite's groups hold: tests that `tests/conftest.py` puts in one `xdist_group` run on
one pytest-xdist worker.

The real-node tests rely on it (only one cluster with real nodes can run on a machine), and so do
the MultiKueue tests and every module's shared fixtures. pytest-xdist carries a group in the test's
node id, which some pytest releases silently stopped honouring (9.2: every group spread over every
worker, three real-node clusters started at once). This runs a small suite the way `make test`
does, with the groups added at collection as tests/conftest.py adds them, and checks where each
test ran.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

CONFTEST = '''
import json, os
from pathlib import Path
import pytest

@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.name.startswith("test_together"):
            item.add_marker(pytest.mark.xdist_group("together"))

@pytest.fixture(autouse=True)
def where(request):
    yield
    out = Path(os.environ["WHERE_DIR"]) / (request.node.name + ".json")
    out.write_text(json.dumps(os.environ.get("PYTEST_XDIST_WORKER")))
'''

TESTS = "".join(f"def test_together_{n}(): pass\ndef test_alone_{n}(): pass\n" for n in range(8))


def test_a_group_added_at_collection_runs_on_one_worker(tmp_path: Path) -> None:
    suite, where = tmp_path / "suite", tmp_path / "where"
    suite.mkdir()
    where.mkdir()
    (suite / "conftest.py").write_text(CONFTEST)
    (suite / "test_grouped.py").write_text(TESTS)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "loadgroup", "-p", "no:cacheprovider",
         str(suite)],
        cwd=suite, env={"WHERE_DIR": str(where), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True,
        timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    workers = {path.stem: json.loads(path.read_text()) for path in where.glob("*.json")}
    assert len(workers) == 16
    together = {workers[f"test_together_{n}"] for n in range(8)}
    assert len(together) == 1, f"the group ran on {sorted(together)}"
    assert None not in together  # it did run on xdist workers
