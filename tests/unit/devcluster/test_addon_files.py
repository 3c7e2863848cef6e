"""Kueue, scheduler-plugins and Volcano share one lifecycle (devcluster/addon.py) but keep their own
files: the cluster subfolder, the shape of its state.json, the log names, the folder of binaries and
its variable. `tfjob-devcluster down`/`status` and managers started by earlier code rely on them.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from devcluster import kueue, schedulerplugins, volcano
from devcluster.addon import AddonError
from devcluster.binaries import read_versions
from devcluster.state import Layout


def fake_cluster(tmp_path: Path) -> Any:
    return SimpleNamespace(dir=tmp_path, layout=Layout(tmp_path), kubeconfig=tmp_path / "kubeconfig")


def test_kueue_records_its_one_manager_as_pid(tmp_path: Path) -> None:
    state = kueue.KueueState(bin_dir="/opt/kueue", pids={"kueue": 4242}, ports={"webhook": 19443, "health": 18081})
    state.save(tmp_path / "state.json")

    assert json.loads((tmp_path / "state.json").read_text()) == {
        "bin_dir": "/opt/kueue", "pid": 4242, "ports": {"webhook": 19443, "health": 18081}}
    assert kueue.KueueState.load(tmp_path / "state.json") == state


def test_a_running_kueue_is_read_from_its_state_file(tmp_path: Path) -> None:
    (tmp_path / "kueue").mkdir()
    (tmp_path / "kueue" / "state.json").write_text(
        json.dumps({"bin_dir": "/opt/kueue", "pid": 4242, "ports": {"webhook": 19443, "health": 18081}}))

    manager = kueue.Kueue(fake_cluster(tmp_path))

    assert manager.pid == 4242 and manager.pids == {"kueue": 4242}
    assert manager.ports == {"webhook": 19443, "health": 18081} and manager.bin_dir == Path("/opt/kueue")
    assert manager.log_file() == tmp_path / "logs" / "kueue.log"


def test_the_gang_schedulers_record_pids_and_ports_per_binary(tmp_path: Path) -> None:
    (tmp_path / "scheduler-plugins").mkdir()
    (tmp_path / "scheduler-plugins" / "state.json").write_text(json.dumps({
        "bin_dir": "/opt/sp", "pids": {"kube-scheduler-plugins": 11, "scheduler-plugins-controller": 12},
        "ports": {"kube-scheduler-plugins": 10259, "scheduler-plugins-controller": 18082}}))
    (tmp_path / "volcano").mkdir()
    (tmp_path / "volcano" / "state.json").write_text(json.dumps({
        "bin_dir": "/opt/vc", "pids": {"vc-scheduler": 21}, "ports": {"vc-scheduler": 11251}, "log_offset": 99}))

    gang, scheduler = schedulerplugins.SchedulerPlugins(fake_cluster(tmp_path)), volcano.Volcano(fake_cluster(tmp_path))

    assert gang.status()["scheduler-plugins-controller"] == {
        "pid": 12, "running": False, "port": 18082, "log": str(tmp_path / "logs" / "scheduler-plugins-controller.log")}
    assert gang.log_file() == tmp_path / "logs" / "scheduler-plugins-scheduler.log"
    assert scheduler.status() == {"vc-scheduler": {
        "pid": 21, "running": False, "port": 11251, "log": str(tmp_path / "logs" / "volcano-scheduler.log")}}
    assert volcano.VolcanoState.load(tmp_path / "volcano" / "state.json") == volcano.VolcanoState(
        bin_dir="/opt/vc", pids={"vc-scheduler": 21}, ports={"vc-scheduler": 11251}, log_offset=99)


@pytest.mark.parametrize(("module", "variable", "folder"), [
    (kueue, "TFJOB_KUEUE_BIN_DIR", f"kueue-{read_versions()['KUEUE_VERSION']}"),
    (schedulerplugins, "TFJOB_SCHEDULER_PLUGINS_BIN_DIR",
     f"scheduler-plugins-{read_versions()['SCHEDULER_PLUGINS_VERSION']}"),
    (volcano, "TFJOB_VOLCANO_BIN_DIR", f"volcano-{read_versions()['VOLCANO_VERSION']}"),
])
def test_each_addons_binaries_live_in_a_folder_of_its_version(module: Any, variable: str, folder: str,
                                                                monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert module.BUILD.env_var == variable
    assert module.BUILD.folder() == tmp_path / "tfjob-operator" / folder
    assert issubclass(module.BUILD.error, AddonError)
