"""`Volcano`: run the real Volcano scheduler against a devcluster.

The second gang scheduler the operator can target (the first is scheduler-plugins' Coscheduling,
devcluster/schedulerplugins.py): volcano.sh/volcano (version in versions.env), the scheduler
Kubeflow's training operator uses for `gangScheduling`. Its unit is a PodGroup of
scheduling.volcano.sh/v1beta1 (`spec.minMember`, `spec.queue`, `spec.priorityClassName`); pods join
one by the annotation `scheduling.k8s.io/group-name: <name>` (POD_GROUP_ANNOTATION) and reach the
scheduler by `spec.schedulerName: volcano` (SCHEDULER_NAME). Only the scheduler is run
(`vc-scheduler`, the module's cmd/scheduler, built by `build-binaries.sh volcano`): its `enqueue`
action moves a PodGroup Pending -> Inqueue when its queue has room for `minResources`, `allocate`
binds the pods of a group only when `minMember` of them fit at once, and at the end of every
scheduling cycle (once a second) it writes each PodGroup's `status` itself (phase Pending, Inqueue,
Running; `running`/`succeeded`/`failed` counts; conditions Scheduled and Unschedulable, the latter
left True after the group runs, so the phase says whether a group waits). The
controller-manager is not needed for PodGroups someone else creates (the operator, like Kubeflow's):
it creates PodGroups for Volcano Jobs and for bare pods that name none, and reconciles Queue states,
none of which this needs. The admission webhooks are not run either (they validate and default
Volcano Jobs, Queues and PodGroups: e.g. they refuse a PodGroup of a closed queue).

Like scheduler-plugins it is a host process with the admin kubeconfig and leader election off,
beside the devcluster's stock kube-scheduler: pods that do not ask for `volcano` keep the default
scheduler. Set-up done here:

* **CRDs**: the five of config/crd/volcano/bases of the same module version (podgroups and queues of
  scheduling.volcano.sh, jobs of batch.volcano.sh, commands of bus.volcano.sh, numatopologies of
  nodeinfo.volcano.sh), copied next to the binary into `crd/`, applied server-side and waited for
  until Established: the scheduler's informers cover PodGroups, Queues and NUMA topologies and
  would otherwise never sync.
* **The `default` Queue** (open, weight 1, reclaimable): PodGroups without `spec.queue` go there.
  The scheduler creates it too at start-up when it is missing; created here first so that it is
  there whatever the scheduler's version does.
* **Configuration** (`<cluster>/volcano/scheduler.conf`): Volcano's own format (not a
  KubeSchedulerConfiguration), the actions and plugin tiers of upstream's default (SCHEDULER_CONF).
  The scheduler serves /healthz over plain HTTP on a free port of 127.0.0.1 (`--enable-healthz`);
  metrics are off. It is ready when /healthz answers and its log says its informers synced
  ("Scheduler completes Initialization", logged at -v=2).

The pid and port are recorded in `<cluster>/volcano/state.json` and the log goes to the cluster's
logs folder (`logs/volcano-scheduler.log`), so `stop()` works from another process too
(`tfjob-devcluster down`); it is stopped by its recorded pid only (devcluster.processes).
"""

from __future__ import annotations

import contextlib
import http.client
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import processes
from .api import ApiError
from .binaries import BUILD_SCRIPT, read_versions
from .cluster import Cluster
from .crds import install_crds
from .ports import free_ports
from .state import JsonState

SCHEDULER = "vc-scheduler"
BINARIES = (SCHEDULER,)
"""The file names `build-binaries.sh volcano` installs (the module's cmd/scheduler)."""

SCHEDULER_NAME = "volcano"
"""The `spec.schedulerName` of the pods Volcano schedules (its `--scheduler-name`)."""
POD_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
"""The pod annotation naming the pod's PodGroup (in the pod's namespace)."""
GROUP, VERSION = "scheduling.volcano.sh", "v1beta1"
API_VERSION = f"{GROUP}/{VERSION}"
DEFAULT_QUEUE = "default"
CRD_NAMES = ("podgroups.scheduling.volcano.sh", "queues.scheduling.volcano.sh", "jobs.batch.volcano.sh",
             "commands.bus.volcano.sh", "numatopologies.nodeinfo.volcano.sh")
LOGS = {SCHEDULER: "volcano-scheduler"}
"""The log file (without .log) in the cluster's logs folder."""
READY_LINE = "Scheduler completes Initialization and start to run"
"""What the scheduler logs (at -v=2) once its informers synced and its scheduling loop starts."""
SCHEDULER_CONF = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
"""
"""Upstream's default scheduler configuration (installer/volcano-development.yaml of this era): the
`enqueue` action admits PodGroups whose queue has room, `allocate` places them whole (gang),
`backfill` places pods that request nothing. `proportion` shares the cluster between queues by weight."""


class VolcanoError(RuntimeError):
    """Volcano could not be built, installed or started (the message says which and why)."""


def volcano_dir() -> Path:
    """The folder `build-binaries.sh volcano` fills: $TFJOB_VOLCANO_BIN_DIR, else the user cache."""
    if os.environ.get("TFJOB_VOLCANO_BIN_DIR"):
        return Path(os.environ["TFJOB_VOLCANO_BIN_DIR"]).expanduser()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "tfjob-operator" / f"volcano-{read_versions()['VOLCANO_VERSION']}"


def _complete(folder: Path) -> bool:
    return all(os.access(folder / name, os.X_OK) for name in BINARIES) and (folder / ".complete").is_file()


def find_volcano_dir(build: bool = True) -> Path:
    """The Volcano folder (vc-scheduler, CRDs in `crd/`), running `build-binaries.sh volcano` when it
    is incomplete and `build` allows (a no-op when complete)."""
    folder = volcano_dir()
    if _complete(folder):
        return folder
    if build:
        print(f"devcluster: building Volcano into {folder} (first run: several minutes)", file=sys.stderr)
        result = subprocess.run(["bash", str(BUILD_SCRIPT), "volcano"], stdout=sys.stderr, check=False)
        if result.returncode == 0 and _complete(folder):
            return folder
        raise VolcanoError(f"`bash {BUILD_SCRIPT} volcano` exited {result.returncode} and "
                           f"{folder} is incomplete (needs Go and the Go module proxy)")
    raise VolcanoError(f"{folder} lacks {SCHEDULER} or .complete; run `bash {BUILD_SCRIPT} volcano`")


def _http_ok(port: int, path: str) -> bool:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5.0)
    try:
        connection.request("GET", path)
        return connection.getresponse().status == 200
    except (OSError, http.client.HTTPException):
        return False
    finally:
        connection.close()


@dataclass
class VolcanoState(JsonState):
    """What start() decided and started; saved as <cluster>/volcano/state.json."""

    bin_dir: str
    pids: dict[str, int]  # binary name -> pid
    ports: dict[str, int]  # binary name -> health port (plain HTTP /healthz)
    log_offset: int  # the size of the log before this start: READY_LINE is looked for after it


class Volcano:
    """The Volcano scheduler for one running devcluster (see the module docstring)."""

    def __init__(self, cluster: Cluster, bin_dir: str | os.PathLike[str] | None = None) -> None:
        self.cluster = cluster
        self.dir = cluster.dir / "volcano"
        self._bin_dir = Path(bin_dir) if bin_dir else None
        self._state = VolcanoState.load(self.state_file)

    # ------------------------------------------------------------------ facts

    @property
    def state_file(self) -> Path:
        return self.dir / "state.json"

    @property
    def config_file(self) -> Path:
        return self.dir / "scheduler.conf"

    def log_file(self, binary: str = SCHEDULER) -> Path:
        return self.cluster.layout.log(LOGS[binary])

    @property
    def bin_dir(self) -> Path:
        if self._state is not None:
            return Path(self._state.bin_dir)
        return self._bin_dir or find_volcano_dir(build=False)

    @property
    def ports(self) -> dict[str, int]:
        """{SCHEDULER: port}: where it serves /healthz on 127.0.0.1 (plain HTTP)."""
        return dict(self._state.ports) if self._state else {}

    @property
    def pids(self) -> dict[str, int]:
        return dict(self._state.pids) if self._state else {}

    def is_running(self) -> bool:
        state = self._state
        return state is not None and all(
            processes.is_running(state.pids.get(name), Path(state.bin_dir) / name) for name in BINARIES)

    def status(self) -> dict[str, dict[str, Any]]:
        """Per binary, like Cluster.status(): pid, whether it runs, its health port and log file
        ({} when it was not started)."""
        state = self._state
        if state is None:
            return {}
        return {binary: {"pid": pid, "running": processes.is_running(pid, Path(state.bin_dir) / binary),
                         "port": state.ports.get(binary), "log": str(self.log_file(binary))}
                for binary, pid in state.pids.items()}

    def ready(self) -> bool:
        """True when /healthz answers 200 and the log of this start says the informers synced."""
        state = self._state
        if state is None or not _http_ok(state.ports[SCHEDULER], "/healthz"):
            return False
        try:
            with open(self.log_file(), "rb") as log:
                log.seek(state.log_offset)
                return READY_LINE.encode() in log.read()
        except FileNotFoundError:
            return False

    def logs(self, binary: str = SCHEDULER, tail: int | None = None) -> str:
        """The scheduler's log (its last `tail` lines when given); '' if there is none yet."""
        try:
            text = self.log_file(binary).read_text(errors="replace")
        except FileNotFoundError:
            return ""
        return "\n".join(text.splitlines()[-tail:]) if tail else text

    # ------------------------------------------------------------------ set-up

    def install_crds(self, timeout: float = 60.0) -> None:
        """Server-side apply the five Volcano CRDs and wait until each is Established."""
        problem = install_crds(self.cluster, self.bin_dir / "crd", CRD_NAMES, timeout)
        if problem:
            raise VolcanoError(f"{problem}; rerun `bash {BUILD_SCRIPT} volcano`")

    def ensure_default_queue(self) -> None:
        """Create the Queue `default` (open, weight 1, reclaimable) unless it exists."""
        queue = {"apiVersion": API_VERSION, "kind": "Queue", "metadata": {"name": DEFAULT_QUEUE},
                 "spec": {"weight": 1, "reclaimable": True}}
        with contextlib.suppress(ApiError):  # 409: it exists (made by an earlier start or the scheduler)
            self.cluster.api.request("POST", f"/apis/{API_VERSION}/queues", queue)

    # ------------------------------------------------------------------ lifecycle

    def start(self, timeout: float = 120.0) -> None:
        """Install the CRDs and the default Queue, write the configuration, start the scheduler and
        wait until it is ready. A no-op when it already runs. On failure it is stopped again."""
        if self.is_running():
            return
        self.stop(grace=0)
        bin_dir = self._bin_dir or find_volcano_dir()
        self.dir.mkdir(parents=True, exist_ok=True)
        self._state = VolcanoState(bin_dir=str(bin_dir), pids={}, ports={}, log_offset=0)
        self.install_crds()
        self.ensure_default_queue()
        self.config_file.write_text(SCHEDULER_CONF)
        ports = free_ports(BINARIES)
        kubeconfig = str(self.cluster.kubeconfig)
        # DEBUG_SOCKET_DIR: where it serves its klog-level socket (default /tmp/klog-socks, shared by
        # every Volcano scheduler of the host, each removing the others' socket at start).
        env = {**os.environ, "KUBECONFIG": kubeconfig, "DEBUG_SOCKET_DIR": str(self.dir / "klog-socks"),
               "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
        argv = [str(bin_dir / SCHEDULER), f"--kubeconfig={kubeconfig}", f"--scheduler-conf={self.config_file}",
                f"--scheduler-name={SCHEDULER_NAME}", f"--default-queue={DEFAULT_QUEUE}",
                "--leader-elect=false", "--enable-healthz=true", f"--healthz-address=127.0.0.1:{ports[SCHEDULER]}",
                "--enable-metrics=false",
                "--cache-dumper=false", "--schedule-period=1s", "--kube-api-qps=50", "--kube-api-burst=100",
                "--v=2"]
        log = self.log_file()
        offset = log.stat().st_size if log.exists() else 0
        self._state = VolcanoState(bin_dir=str(bin_dir), pids={}, ports=ports, log_offset=offset)
        try:
            self._state.pids[SCHEDULER] = processes.spawn(argv, log, env)
            self._state.save(self.state_file)
            self._wait_ready(timeout)
        except BaseException:
            self.stop(grace=0)
            raise

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not self.ready():
            if not self.is_running():
                raise VolcanoError(f"{SCHEDULER} exited; last lines of {self.log_file()}:\n{self.logs(tail=20)}")
            if time.monotonic() >= deadline:
                raise VolcanoError(f"timed out after {timeout:g}s waiting for {SCHEDULER} to be ready; "
                                   f"last lines of {self.log_file()}:\n{self.logs(tail=20)}")
            time.sleep(0.2)

    def stop(self, grace: float = 5.0) -> None:
        """Stop the scheduler by its recorded pid (SIGTERM, SIGKILL after `grace` s). The CRDs, the
        Queue and PodGroups stay, as after uninstalling a Deployment."""
        if self._state is None:
            return
        for binary, pid in self._state.pids.items():
            processes.stop(pid, Path(self._state.bin_dir) / binary, timeout=grace)
        self.state_file.unlink(missing_ok=True)
        self._state = None
