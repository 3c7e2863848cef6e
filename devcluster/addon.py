"""Add-ons the devcluster runs as host processes beside its control plane (Kueue, scheduler-plugins, Volcano).

A real cluster installs such an add-on in-cluster (a Deployment, webhooks, RBAC); a devcluster has
no kubelet, so here its programs run as plain host processes with the admin kubeconfig, like the
control-plane components. Every add-on goes through the same lifecycle, which lives here once:

* **its binaries** (`AddonBuild`): one folder per pinned version ($TFJOB_<NAME>_BIN_DIR, else the
  user cache), filled by `build-binaries.sh <name>` on demand and complete once `.complete` exists;
* **its processes** (`HostAddon`): started each in a session of its own (devcluster.processes), with
  their pids and ports recorded in `<cluster>/<name>/state.json` and their logs in the cluster's logs
  folder, so `is_running`, `status`, `logs` and `stop` work from another process too (`tfjob-devcluster
  down`); they are stopped by their recorded pids only, never by name. `start` is a no-op when all
  run, starts all afresh when one died, and stops what it started when it fails.

An add-on module (kueue.py, schedulerplugins.py, volcano.py) is one subclass holding only what is
its own: which binaries (its `AddonBuild`), its CRDs, what else it needs in the cluster (`_install`),
its configuration and command lines (`_prepare`) and its readiness check (`ready`).
"""

from __future__ import annotations

import http.client
import os
import subprocess
import sys
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from . import ports, processes
from .binaries import BUILD_SCRIPT, read_versions
from .cluster import Cluster
from .crds import install_crds
from .state import JsonState

LOG_TAIL_LINES = 30
STARTS = 3  # attempts at a start whose ports were taken between the pick and the bind
"""How many of each log's last lines an error about a failed start carries."""


class AddonError(RuntimeError):
    """An add-on could not be built, installed or started (the message says which and why)."""


@dataclass(frozen=True)
class AddonBuild:
    """Where an add-on's binaries come from: `build-binaries.sh <name>` into a folder per version."""

    name: str  # the build script's target, the cache folder's prefix and the add-on's folder in a cluster
    title: str  # how messages name the add-on
    binaries: tuple[str, ...]  # the executables the folder must hold; the first is the main one
    cold_build: str  # how long building takes the first time, for the message
    error: type[AddonError]

    @property
    def env_var(self) -> str:
        """The variable naming another folder, e.g. TFJOB_SCHEDULER_PLUGINS_BIN_DIR."""
        return f"TFJOB_{self._key}_BIN_DIR"

    @property
    def _key(self) -> str:
        return self.name.upper().replace("-", "_")

    def folder(self) -> Path:
        """The folder the build script fills: $<env_var>, else the user cache (named after the
        version, <NAME>_VERSION in versions.env)."""
        if os.environ.get(self.env_var):
            return Path(os.environ[self.env_var]).expanduser()
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        return base / "tfjob-operator" / f"{self.name}-{read_versions()[f'{self._key}_VERSION']}"

    marker = ".complete"  # what the build script leaves last, once the folder is whole

    def complete(self, folder: Path) -> bool:
        return all(os.access(folder / name, os.X_OK) for name in self.binaries) and (folder / self.marker).exists()

    def build_command(self) -> list[str]:
        """The command that builds the folder."""
        return ["bash", str(BUILD_SCRIPT), self.name]

    def find(self, build: bool = True) -> Path:
        """The folder (the binaries, CRDs in `crd/`), running the build script when it is incomplete
        and `build` allows (a no-op when complete)."""
        folder = self.folder()
        if self.complete(folder):
            return folder
        command = self.build_command()
        if build:
            print(f"devcluster: building {self.title} into {folder} (first run: {self.cold_build})", file=sys.stderr)
            result = subprocess.run(command, stdout=sys.stderr, check=False)
            if result.returncode == 0 and self.complete(folder):
                return folder
            raise self.error(f"`{' '.join(command)}` exited {result.returncode} and "
                             f"{folder} is incomplete (needs Go and the Go module proxy)")
        raise self.error(f"{folder} lacks {' or '.join(self.binaries)} or {self.marker}; run `{' '.join(command)}`")


@dataclass
class AddonState(JsonState):
    """What start() decided and started; saved as <cluster>/<name>/state.json."""

    bin_dir: str
    pids: dict[str, int]  # binary name -> pid
    ports: dict[str, int]  # port name (the binary's, unless the add-on names them) -> port on 127.0.0.1


StateT = TypeVar("StateT", bound=AddonState)


def http_ok(port: int, path: str) -> bool:
    """True when http://127.0.0.1:<port><path> answers 200 (a plain-HTTP health endpoint)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5.0)
    try:
        connection.request("GET", path)
        return connection.getresponse().status == 200
    except (OSError, http.client.HTTPException):
        return False
    finally:
        connection.close()


class HostAddon(ABC, Generic[StateT]):
    """The processes of one add-on for one devcluster (see the module docstring). A subclass sets the
    class attributes and implements `ready` and `_prepare`."""

    build: ClassVar[AddonBuild]
    crd_names: ClassVar[tuple[str, ...]]
    """The CRDs in `<bin dir>/crd` that `install_crds` waits for."""
    readiness: ClassVar[str]
    """What `ready` waits for, as a timeout names it: e.g. "kueue's /readyz"."""
    log_names: ClassVar[dict[str, str]] = {}
    """A binary's log file in the cluster's logs folder (without .log), where it is not the binary's name."""
    state_type: type[StateT]

    def __init__(self, cluster: Cluster, bin_dir: str | os.PathLike[str] | None = None) -> None:
        self.cluster = cluster
        self.dir = cluster.dir / self.build.name
        self._bin_dir = Path(bin_dir) if bin_dir else None
        self._state: StateT | None = self.state_type.load(self.state_file)

    # ------------------------------------------------------------------ facts

    @property
    def state_file(self) -> Path:
        return self.dir / "state.json"

    @property
    def binaries(self) -> tuple[str, ...]:
        return self.build.binaries

    @property
    def port_names(self) -> tuple[str, ...]:
        """The ports start() picks: one per binary unless the add-on names them."""
        return self.binaries

    def log_file(self, binary: str | None = None) -> Path:
        """The log of `binary` (the main one when omitted)."""
        binary = binary or self.binaries[0]
        return self.cluster.layout.log(self.log_names.get(binary, binary))

    @property
    def bin_dir(self) -> Path:
        if self._state is not None:
            return Path(self._state.bin_dir)
        return self._bin_dir or self.build.find(build=False)

    @property
    def ports(self) -> dict[str, int]:
        """The ports of the running processes, all on 127.0.0.1 ({} when not started)."""
        return dict(self._state.ports) if self._state else {}

    @property
    def pids(self) -> dict[str, int]:
        return dict(self._state.pids) if self._state else {}

    def _runs(self, binary: str) -> bool:
        state = self._state
        return state is not None and processes.is_running(state.pids.get(binary), Path(state.bin_dir) / binary)

    def is_running(self) -> bool:
        """True when every binary runs."""
        return self._state is not None and all(self._runs(binary) for binary in self.binaries)

    def status(self) -> dict[str, dict[str, Any]]:
        """Per binary started, like Cluster.status(): pid, whether it runs, its port and log file ({}
        when none was started)."""
        state = self._state
        if state is None:
            return {}
        return {binary: {"pid": pid, "running": self._runs(binary), "port": state.ports.get(binary),
                         "log": str(self.log_file(binary))}
                for binary, pid in state.pids.items()}

    @abstractmethod
    def ready(self) -> bool:
        """True when the running processes serve (each add-on's own check)."""

    def logs(self, binary: str | None = None, tail: int | None = None) -> str:
        """The log of `binary` (the main one when omitted; its last `tail` lines when given); '' if
        there is none yet."""
        try:
            text = self.log_file(binary).read_text(errors="replace")
        except FileNotFoundError:
            return ""
        return "\n".join(text.splitlines()[-tail:]) if tail else text

    # ------------------------------------------------------------------ set-up

    def install_crds(self, timeout: float = 60.0) -> None:
        """Server-side apply the add-on's CRDs and wait until each is Established."""
        problem = install_crds(self.cluster, self.bin_dir / "crd", self.crd_names, timeout)
        if problem:
            raise self.build.error(f"{problem}; rerun `bash {BUILD_SCRIPT} {self.build.name}`")

    def _install(self) -> None:
        """Put into the cluster what the processes need before they start: the CRDs, and whatever
        else an add-on adds (namespaces, queues, certificates)."""
        self.install_crds()

    @abstractmethod
    def _prepare(self, state: StateT) -> dict[str, list[str]]:
        """Write the files the processes read (configuration) and return each binary's command line,
        in start order. `state` holds the folder of the binaries and the ports picked; an add-on may
        record more of its own facts there before it is saved."""

    def _environment(self) -> dict[str, str]:
        return {**os.environ, "KUBECONFIG": str(self.cluster.kubeconfig),
                "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}

    # ------------------------------------------------------------------ lifecycle

    def start(self, timeout: float = 120.0) -> None:
        """Install what the add-on needs, write its configuration, start its processes and wait until
        they are ready. A no-op when all run. On failure they are stopped again; a start that lost one
        of its ports (picked now, every start) to another process is retried on new ones."""
        if self.is_running():
            return
        self.stop(grace=0)  # one of them may have died: start all afresh
        bin_dir = self._bin_dir or self.build.find()
        self.dir.mkdir(parents=True, exist_ok=True)
        self._install()
        for attempt in range(1, STARTS + 1):
            try:
                self._start_once(bin_dir, timeout)
                return
            except Exception:
                lost = any(ports.lost_port_race(self.logs(binary, tail=LOG_TAIL_LINES)) for binary in self.binaries)
                if attempt == STARTS or not lost:
                    raise

    def _start_once(self, bin_dir: Path, timeout: float) -> None:
        state = self._state = self.state_type(bin_dir=str(bin_dir), pids={}, ports={})
        state.ports = ports.free_ports(self.port_names, holder=ports.this_process(self.state_file))
        commands = self._prepare(state)
        environment = self._environment()
        try:
            for binary, argv in commands.items():
                state.pids[binary] = processes.spawn(argv, self.log_file(binary), environment)
                state.save(self.state_file)
            self._wait_ready(timeout)
        except BaseException:
            self.stop(grace=0)
            raise

    def _tails(self) -> str:
        return "\n".join(f"last lines of {self.log_file(binary)}:\n{self.logs(binary, tail=LOG_TAIL_LINES)}"
                         for binary in self.binaries)

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not self.ready():
            if not self.is_running():
                exited = [binary for binary in self.binaries if not self._runs(binary)]
                raise self.build.error(f"{' and '.join(exited)} exited; {self._tails()}")
            if time.monotonic() >= deadline:
                raise self.build.error(f"timed out after {timeout:g}s waiting for {self.readiness}; {self._tails()}")
            time.sleep(0.2)

    def stop(self, grace: float = 5.0) -> None:
        """Stop the processes by their recorded pids (SIGTERM, SIGKILL after `grace` s). What the
        add-on installed in the cluster (CRDs and their objects) stays, as after uninstalling a Deployment."""
        if self._state is None:
            return
        for binary, pid in self._state.pids.items():
            processes.stop(pid, Path(self._state.bin_dir) / binary, timeout=grace)
        ports.release(self._state.ports.values())
        self.state_file.unlink(missing_ok=True)
        self._state = None
