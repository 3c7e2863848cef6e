"""devcluster.host.raise_inotify_limits: several clusters on one host need more inotify instances than
a host allows by default; a limit already high enough is left alone."""

from __future__ import annotations

from pathlib import Path

from devcluster.host import INOTIFY_LIMITS, raise_inotify_limits


def test_low_inotify_limits_are_raised(tmp_path: Path) -> None:
    (tmp_path / "max_user_instances").write_text("128\n")
    (tmp_path / "max_user_watches").write_text("8192\n")
    assert raise_inotify_limits(tmp_path) == []
    assert {name: int((tmp_path / name).read_text()) for name in INOTIFY_LIMITS} == INOTIFY_LIMITS


def test_a_higher_limit_is_kept(tmp_path: Path) -> None:
    (tmp_path / "max_user_instances").write_text("65536\n")
    (tmp_path / "max_user_watches").write_text("1048576\n")
    raise_inotify_limits(tmp_path)
    assert (tmp_path / "max_user_instances").read_text() == "65536\n"


def test_a_limit_that_cannot_be_raised_is_reported(tmp_path: Path) -> None:
    (tmp_path / "max_user_instances").write_text("128\n")  # max_user_watches unreadable: missing
    problems = raise_inotify_limits(tmp_path)
    assert len(problems) == 1 and "fs.inotify.max_user_watches" in problems[0]
