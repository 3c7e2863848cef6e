"""One cluster at a time may have real nodes on a machine (they share the bridge, its addresses and
containerd's socket): a second cluster is refused with a message naming the first, which a stopped
first cluster no longer blocks. Tried with a stand-in process whose command line names the owner's
folder, as a real containerd's does."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from devcluster.realnodes import RealNodeError, claim, owner, wait_until_free
from devcluster.state import ClusterState, Layout


@pytest.fixture
def running_cluster(tmp_path: Path) -> Iterator[Path]:
    """A cluster folder whose state names a live "containerd" of its real nodes."""
    folder = tmp_path / "first"
    folder.mkdir()
    process = subprocess.Popen([sys.executable, "-c", "import time; print('up', flush=True); time.sleep(60)",
                                f"--config={folder}/real-nodes/real-node-0/containerd.toml"],
                               stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdout.readline() == "up\n"  # exec'd: its command line is its own
    ClusterState("bin", "127.0.0.1", "etcd", {}, pids={"containerd-0": process.pid}, real_nodes=1).save(
        Layout(folder).state_file)
    try:
        yield folder
    finally:
        process.kill()
        process.wait()


def test_a_second_cluster_with_real_nodes_is_refused_naming_the_first(tmp_path: Path, running_cluster: Path) -> None:
    runtime = tmp_path / "run"
    claim(Layout(running_cluster), runtime)
    with pytest.raises(RealNodeError, match=f"the cluster in {running_cluster} has real nodes on this machine"):
        claim(Layout(tmp_path / "second"), runtime)
    assert owner(runtime) == running_cluster


def test_a_cluster_claims_again_what_it_holds(tmp_path: Path, running_cluster: Path) -> None:
    runtime = tmp_path / "run"
    claim(Layout(running_cluster), runtime)
    claim(Layout(running_cluster), runtime)
    assert owner(runtime) == running_cluster


def test_a_stopped_cluster_no_longer_holds_the_real_nodes(tmp_path: Path, running_cluster: Path) -> None:
    runtime = tmp_path / "run"
    claim(Layout(running_cluster), runtime)
    ClusterState("bin", "127.0.0.1", "etcd", {}, pids={}, real_nodes=1).save(Layout(running_cluster).state_file)
    claim(Layout(tmp_path / "second"), runtime)
    assert owner(runtime) is None  # the second one's processes are not started yet


def test_a_waiting_cluster_goes_on_once_the_first_one_stops(tmp_path: Path, running_cluster: Path) -> None:
    runtime = tmp_path / "run"
    claim(Layout(running_cluster), runtime)
    waits: list[float] = []

    def first_cluster_stops_while_waiting(seconds: float) -> None:
        waits.append(seconds)
        ClusterState("bin", "127.0.0.1", "etcd", {}, pids={}, real_nodes=1).save(Layout(running_cluster).state_file)

    wait_until_free(600, runtime, poll=5, clock=lambda: 0.0, sleep=first_cluster_stops_while_waiting)
    assert waits == [5]
    claim(Layout(tmp_path / "second"), runtime)


def test_waiting_for_real_nodes_gives_up_naming_the_cluster_that_holds_them(tmp_path: Path,
                                                                            running_cluster: Path) -> None:
    runtime = tmp_path / "run"
    claim(Layout(running_cluster), runtime)
    now = [0.0]

    def tick(seconds: float) -> None:
        now[0] += seconds

    with pytest.raises(RealNodeError, match=f"the cluster in {running_cluster} still has real nodes .* after 30 s"):
        wait_until_free(30, runtime, poll=10, clock=lambda: now[0], sleep=tick)
    assert now[0] == 30


def test_no_wait_when_no_cluster_has_real_nodes(tmp_path: Path) -> None:
    wait_until_free(0, tmp_path / "run", sleep=lambda _s: pytest.fail("waited"))
