"""Unit tests of the host-process lifecycle every devcluster add-on shares (devcluster/addon.py).

The add-on here is a fake: its two "binaries" are shell scripts that log `ready <pid>` (or crash, or
never get ready) and sleep, so start, readiness, status, logs and stop run for real processes
without a cluster. The real add-ons run in tests/integration/controller/{kueue,gang}/.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from devcluster import addon, processes
from devcluster.addon import AddonBuild, AddonError, AddonState, HostAddon
from devcluster.state import Layout

SERVES = "#!/bin/sh\necho \"ready $$\"\nexec sleep 60\n"
CRASHES = "#!/bin/sh\necho 'boom: no such flag'\nexit 3\n"
HANGS = "#!/bin/sh\necho starting\nexec sleep 60\n"


class FakeError(AddonError):
    pass


BUILD = AddonBuild(name="fake-addon", title="Fake", binaries=("first", "second"), cold_build="no time",
                   error=FakeError)


class Fake(HostAddon[AddonState]):
    """Two processes, ready when each has logged `ready <its pid>`; nothing to install in a cluster."""

    build = BUILD
    crd_names = ()
    readiness = "the fakes' ready lines"
    log_names = {"first": "fake-first"}
    state_type = AddonState

    def _install(self) -> None:
        pass

    def ready(self) -> bool:
        return bool(self.pids) and all(f"ready {pid}" in self.logs(binary) for binary, pid in self.pids.items())

    def _prepare(self, state: AddonState) -> dict[str, list[str]]:
        return {binary: [str(Path(state.bin_dir) / binary), f"--port={state.ports[binary]}"]
                for binary in self.binaries}


def binaries(folder: Path, first: str = SERVES, second: str = SERVES) -> Path:
    folder.mkdir(exist_ok=True)
    for name, script in (("first", first), ("second", second)):
        (folder / name).write_text(script)
        (folder / name).chmod(0o755)
    return folder


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Any]:
    """What an add-on reads of a Cluster; at the end whatever the test left running is stopped."""
    fake: Any = SimpleNamespace(dir=tmp_path, layout=Layout(tmp_path), kubeconfig=tmp_path / "kubeconfig")
    yield fake
    Fake(fake, bin_dir=tmp_path).stop(grace=0)


def running(fake: Fake, pids: dict[str, int]) -> dict[str, bool]:
    return {binary: processes.is_running(pid, fake.bin_dir / binary) for binary, pid in pids.items()}


def test_start_records_pids_and_ports_that_another_instance_reads(cluster: Any, tmp_path: Path) -> None:
    started = Fake(cluster, bin_dir=binaries(tmp_path / "bin"))
    started.start(timeout=10)

    saved = json.loads((tmp_path / "fake-addon" / "state.json").read_text())
    assert saved == {"bin_dir": str(tmp_path / "bin"), "pids": started.pids, "ports": started.ports}
    assert set(saved["pids"]) == set(saved["ports"]) == {"first", "second"}
    other = Fake(cluster)
    assert other.is_running() and other.pids == started.pids and other.bin_dir == tmp_path / "bin"
    assert other.status() == {
        "first": {"pid": started.pids["first"], "running": True, "port": started.ports["first"],
                  "log": str(tmp_path / "logs" / "fake-first.log")},
        "second": {"pid": started.pids["second"], "running": True, "port": started.ports["second"],
                   "log": str(tmp_path / "logs" / "second.log")},
    }


def test_stop_from_another_instance_ends_every_process_and_forgets_them(cluster: Any, tmp_path: Path) -> None:
    started = Fake(cluster, bin_dir=binaries(tmp_path / "bin"))
    started.start(timeout=10)
    pids = started.pids

    Fake(cluster).stop(grace=1)

    assert running(started, pids) == {"first": False, "second": False}
    assert not (tmp_path / "fake-addon" / "state.json").exists()
    assert Fake(cluster, bin_dir=tmp_path / "bin").status() == {}
    assert not Fake(cluster, bin_dir=tmp_path / "bin").is_running()


def test_starting_what_already_runs_changes_nothing(cluster: Any, tmp_path: Path) -> None:
    started = Fake(cluster, bin_dir=binaries(tmp_path / "bin"))
    started.start(timeout=10)
    pids = started.pids

    Fake(cluster).start(timeout=10)

    assert Fake(cluster).pids == pids and all(running(started, pids).values())


def test_when_one_process_died_start_restarts_both(cluster: Any, tmp_path: Path) -> None:
    started = Fake(cluster, bin_dir=binaries(tmp_path / "bin"))
    started.start(timeout=10)
    old = started.pids
    processes.stop(old["second"], started.bin_dir / "second", timeout=0)
    assert not started.is_running()
    assert started.status()["second"]["running"] is False and started.status()["first"]["running"] is True

    started.start(timeout=10)

    assert started.is_running()
    assert set(started.pids.values()).isdisjoint(old.values())
    assert running(started, old) == {"first": False, "second": False}


def test_a_binary_that_exits_fails_the_start_naming_it_with_its_log(cluster: Any, tmp_path: Path) -> None:
    fake = Fake(cluster, bin_dir=binaries(tmp_path / "bin", second=CRASHES))

    with pytest.raises(FakeError) as failure:
        fake.start(timeout=10)

    message = str(failure.value)
    assert message.startswith("second exited; ")
    assert f"last lines of {tmp_path / 'logs' / 'second.log'}:" in message and "boom: no such flag" in message
    assert not fake.is_running() and fake.status() == {}
    assert not (tmp_path / "fake-addon" / "state.json").exists()


def test_a_start_that_never_gets_ready_times_out_and_stops_what_it_started(cluster: Any, tmp_path: Path) -> None:
    fake = Fake(cluster, bin_dir=binaries(tmp_path / "bin", second=HANGS))

    with pytest.raises(FakeError, match=r"^timed out after 0.5s waiting for the fakes' ready lines; last lines of"):
        fake.start(timeout=0.5)

    first = int(fake.logs("first", tail=1).removeprefix("ready "))
    assert not processes.is_running(first, tmp_path / "bin" / "first")
    assert not (tmp_path / "fake-addon" / "state.json").exists()


def test_logs_are_the_main_binarys_unless_another_is_named(cluster: Any, tmp_path: Path) -> None:
    fake = Fake(cluster, bin_dir=binaries(tmp_path / "bin"))
    assert fake.logs() == "" and fake.logs("second", tail=5) == ""

    fake.start(timeout=10)

    assert fake.logs(tail=1) == f"ready {fake.pids['first']}"
    assert fake.logs("second", tail=1) == f"ready {fake.pids['second']}"
    assert "starting: " in fake.logs("second")  # the line devcluster.processes writes before each start


def test_an_addons_binaries_are_taken_from_its_variable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert BUILD.env_var == "TFJOB_FAKE_ADDON_BIN_DIR"
    monkeypatch.setenv("TFJOB_FAKE_ADDON_BIN_DIR", str(tmp_path / "bin"))
    binaries(tmp_path / "bin")
    assert not BUILD.complete(tmp_path / "bin")  # not until the build script marks it .complete

    (tmp_path / "bin" / ".complete").touch()

    assert BUILD.find(build=False) == tmp_path / "bin"


def test_an_incomplete_folder_names_what_it_lacks_and_how_to_build_it(monkeypatch: pytest.MonkeyPatch,
                                                                      tmp_path: Path) -> None:
    monkeypatch.setenv("TFJOB_FAKE_ADDON_BIN_DIR", str(tmp_path))
    with pytest.raises(FakeError) as failure:
        BUILD.find(build=False)
    assert str(failure.value) == (f"{tmp_path} lacks first or second or .complete; "
                                  f"run `bash {addon.BUILD_SCRIPT} fake-addon`")


def test_a_failed_build_says_so(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TFJOB_FAKE_ADDON_BIN_DIR", str(tmp_path))
    calls: list[list[str]] = []

    def build(argv: list[str], **_: Any) -> subprocess.CompletedProcess[bytes]:
        calls.append(argv)
        return subprocess.CompletedProcess(argv, 2)

    monkeypatch.setattr(addon.subprocess, "run", build)
    with pytest.raises(FakeError, match=r"fake-addon` exited 2 and .* is incomplete \(needs Go"):
        BUILD.find()
    assert calls == [["bash", str(addon.BUILD_SCRIPT), "fake-addon"]]
