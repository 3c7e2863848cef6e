"""How the suite is shared out among parallel workers (pytest-xdist, `--dist loadgroup`).

Each worker is a pytest process of its own with its own session fixtures: its own local cluster, its
own shared operator, its own Kueue. So tests are grouped (`xdist_group`) by what they must not share
or should pay for once:

* every test of one module runs on one worker, so a module's fixtures are set up once;
* the real-node tests form one group: only one cluster with real nodes can run on a machine (one
  bridge, one set of iptables rules, the node's CPUs);
* the MultiKueue tests form one group: each session of them starts two more control planes.

The groups are handed out longest first (real nodes, MultiKueue, chaos, Kueue, the other integration
tests, then the unit tests, which fill the gaps at the end), so no long group starts last and holds up
the end of the run. Without xdist (no `-n`) the groups mean nothing and pytest's own order is kept.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent

# (folder under tests/, the group every test below it joins or None for one group per module), in the
# order they are handed out.
PLAN: tuple[tuple[str, str | None], ...] = (
    ("real", "real-nodes"),
    ("integration/controller/multikueue", "multikueue"),
    ("integration/controller/chaos", None),
    ("integration/controller/kueue", None),
    ("integration", None),
    ("", None),
)


def placement(path: Path) -> tuple[int, str]:
    """The rank at which a test module's group is handed out, and the group's name."""
    relative = path.resolve().relative_to(HERE)
    for rank, (folder, group) in enumerate(PLAN):
        if not folder or relative.is_relative_to(folder):
            return rank, group or relative.as_posix()
    raise AssertionError(f"{path} is outside {HERE}")  # (the last folder, "", matches every path)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    ranks: dict[str, int] = {}
    for item in items:
        rank, group = placement(Path(str(item.path)))
        item.add_marker(pytest.mark.xdist_group(group))
        ranks[item.nodeid] = rank
    if os.environ.get("PYTEST_XDIST_WORKER"):  # one process keeps pytest's own order
        items.sort(key=lambda item: ranks[item.nodeid])  # stable: the order within a rank is kept
