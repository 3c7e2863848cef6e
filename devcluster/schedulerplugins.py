"""`SchedulerPlugins`: run the real kubernetes-sigs scheduler-plugins gang scheduler against a devcluster.

Gang scheduling (all of a job's pods bound together, or none) is done by a scheduler, not by the
operator: tfjob-operator's tests need the real one. This is sigs.k8s.io/scheduler-plugins (version
in versions.env), whose Coscheduling plugin admits the pods of a PodGroup
(scheduling.x-k8s.io/v1alpha1; pods join one by the label `scheduling.x-k8s.io/pod-group: <name>`)
only when `spec.minMember` of them can be placed at once. It is two programs, both built by
`build-binaries.sh scheduler-plugins` from the module's own commands:

* **the scheduler** (`kube-scheduler-plugins`: kube-scheduler 1.34 with the out-of-tree plugins
  compiled in) runs *beside* the devcluster's stock kube-scheduler as a second scheduler, the way
  the project's Helm chart "as-a-second-scheduler" installs it: one profile, `schedulerName:
  scheduler-plugins-scheduler` (SCHEDULER_NAME), so only pods that ask for it by
  `spec.schedulerName` are its business and everything else keeps the default scheduler.
  The profile is the one of upstream's install guide and chart: Coscheduling enabled under
  `multiPoint` (so at every extension point it implements: queueSort, preFilter, postFilter,
  permit, reserve/unreserve) and the default queue sort PrioritySort disabled, since a profile has
  exactly one queue sort and Coscheduling's keeps a group's pods together in the queue.
  Its `permitWaitingTimeSeconds` (how long the pods already placed wait in Permit for the rest of
  their group, when the PodGroup has no `scheduleTimeoutSeconds`) is a constructor argument, 10 s
  by default as in upstream's chart (PERMIT_WAITING_SECONDS says why it matters).
* **the controller** (`scheduler-plugins-controller`) keeps each PodGroup's `status` (phase,
  running/succeeded/failed counts). It reconciles ElasticQuotas too, so both CRDs must exist.

Like Kueue here (devcluster/kueue.py), both run as host processes with the admin kubeconfig and
leader election off (a devcluster has no kubelet to run a Deployment): the admin identity needs no
RBAC, which a real install must grant (the chart's ClusterRoles). Set-up done here:

* **CRDs**: podgroups and elasticquotas (config/crd/bases of the same module version, copied next
  to the binaries into `crd/`), applied server-side and waited for until Established: the
  scheduler's PodGroup informer and the controller's caches would otherwise never sync.
* **Configuration** (`<cluster>/scheduler-plugins/scheduler-config.json`: JSON, which the scheduler
  reads like YAML): a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) with the profile above; the
  scheduler serves /healthz and /readyz over HTTPS on a free port of 127.0.0.1 (`--secure-port`,
  a self-signed serving cert it makes itself), authenticating and authorizing through the admin
  kubeconfig like the devcluster's kube-scheduler. The controller's health probes are on another
  free port (plain HTTP), its metrics server is off.

Pids and ports are recorded in `<cluster>/scheduler-plugins/state.json` and the logs go to the
cluster's logs folder (`logs/scheduler-plugins-scheduler.log`, `logs/scheduler-plugins-controller.log`),
so `stop()` works from another process too (`tfjob-devcluster down`); like the control-plane
components both are stopped by their recorded pids only (devcluster.processes).
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import processes
from .api import probe_https
from .binaries import BUILD_SCRIPT, read_versions
from .cluster import Cluster
from .crds import install_crds
from .ports import free_ports
from .state import JsonState

SCHEDULER = "kube-scheduler-plugins"
CONTROLLER = "scheduler-plugins-controller"
BINARIES = (SCHEDULER, CONTROLLER)
"""The file names `build-binaries.sh scheduler-plugins` installs (the module's cmd/scheduler, cmd/controller)."""

SCHEDULER_NAME = "scheduler-plugins-scheduler"
"""The profile's schedulerName: pods that set `spec.schedulerName` to it are gang-scheduled."""
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
"""The pod label naming the pod's PodGroup (in the pod's namespace)."""
GROUP, VERSION = "scheduling.x-k8s.io", "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
CRD_NAMES = ("podgroups.scheduling.x-k8s.io", "elasticquotas.scheduling.x-k8s.io")
"""The scheduler watches PodGroups; the controller reconciles PodGroups and ElasticQuotas."""
LOGS = {SCHEDULER: "scheduler-plugins-scheduler", CONTROLLER: "scheduler-plugins-controller"}
"""The log file (without .log) in the cluster's logs folder of each process."""
PERMIT_WAITING_SECONDS = 10
"""Coscheduling's `permitWaitingTimeSeconds` here: the value upstream's Helm chart installs (the
plugin's own default is 60). It bounds a stall seen on this cluster: while a group that does not fit
keeps being retried, one member can be left out of the queue while its siblings wait in Permit
holding their places; only the Permit timeout frees them, so the group starts up to this long after
room is made."""
UNSCHEDULABLE_FLUSH = "30s"
"""The scheduler's `--pod-max-in-unschedulable-pods-duration` here (default 5m). A pod Coscheduling
rejected ("optimistic rejection in PostFilter") is moved back to the active queue only by the events
the plugin registers (a pod or PodGroup added or updated) or by this periodic flush -- not by the
pods of another group going away. So after a job finishes, the next gang may wait up to this long
for its retry; 30 s keeps the tests that wait for it short, the default is what clusters have."""


class SchedulerPluginsError(RuntimeError):
    """scheduler-plugins could not be built, installed or started (the message says which and why)."""


def scheduler_plugins_dir() -> Path:
    """The folder `build-binaries.sh scheduler-plugins` fills: $TFJOB_SCHEDULER_PLUGINS_BIN_DIR, else the user cache."""
    if os.environ.get("TFJOB_SCHEDULER_PLUGINS_BIN_DIR"):
        return Path(os.environ["TFJOB_SCHEDULER_PLUGINS_BIN_DIR"]).expanduser()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "tfjob-operator" / f"scheduler-plugins-{read_versions()['SCHEDULER_PLUGINS_VERSION']}"


def _complete(folder: Path) -> bool:
    return all(os.access(folder / name, os.X_OK) for name in BINARIES) and (folder / ".complete").is_file()


def find_scheduler_plugins_dir(build: bool = True) -> Path:
    """The scheduler-plugins folder (the two binaries, CRDs in `crd/`), running `build-binaries.sh
    scheduler-plugins` when it is incomplete and `build` allows (a no-op when complete)."""
    folder = scheduler_plugins_dir()
    if _complete(folder):
        return folder
    if build:
        print(f"devcluster: building scheduler-plugins into {folder} (first run: several minutes)", file=sys.stderr)
        result = subprocess.run(["bash", str(BUILD_SCRIPT), "scheduler-plugins"], stdout=sys.stderr, check=False)
        if result.returncode == 0 and _complete(folder):
            return folder
        raise SchedulerPluginsError(f"`bash {BUILD_SCRIPT} scheduler-plugins` exited {result.returncode} and "
                                    f"{folder} is incomplete (needs Go and the Go module proxy)")
    raise SchedulerPluginsError(f"{folder} lacks {' or '.join(BINARIES)} or .complete; "
                                f"run `bash {BUILD_SCRIPT} scheduler-plugins`")


def fetch_crds() -> Path:
    """The folder of the two CRDs alone (`build-binaries.sh scheduler-plugins-crds`: the module is
    downloaded, nothing is built), for clusters that only need the PodGroup API served."""
    folder = scheduler_plugins_dir()
    if not (folder / "crd" / "scheduling.x-k8s.io_podgroups.yaml").is_file():
        result = subprocess.run(["bash", str(BUILD_SCRIPT), "scheduler-plugins-crds"], stdout=sys.stderr, check=False)
        if result.returncode != 0:
            raise SchedulerPluginsError(f"`bash {BUILD_SCRIPT} scheduler-plugins-crds` exited {result.returncode} "
                                        "(needs Go and the Go module proxy)")
    return folder


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
class SchedulerPluginsState(JsonState):
    """What start() decided and started; saved as <cluster>/scheduler-plugins/state.json."""

    bin_dir: str
    pids: dict[str, int]  # binary name -> pid
    ports: dict[str, int]  # binary name -> health port (the scheduler's HTTPS, the controller's HTTP)


class SchedulerPlugins:
    """The scheduler-plugins scheduler and controller for one running devcluster (see the module docstring)."""

    def __init__(self, cluster: Cluster, bin_dir: str | os.PathLike[str] | None = None,
                 permit_waiting_seconds: int = PERMIT_WAITING_SECONDS) -> None:
        """`permit_waiting_seconds` is Coscheduling's `permitWaitingTimeSeconds`: how long the pods
        of a group already placed wait for the rest (a PodGroup's `scheduleTimeoutSeconds` wins)."""
        self.cluster = cluster
        self.permit_waiting_seconds = permit_waiting_seconds
        self.dir = cluster.dir / "scheduler-plugins"
        self._bin_dir = Path(bin_dir) if bin_dir else None
        self._state = SchedulerPluginsState.load(self.state_file)

    # ------------------------------------------------------------------ facts

    @property
    def state_file(self) -> Path:
        return self.dir / "state.json"

    @property
    def config_file(self) -> Path:
        return self.dir / "scheduler-config.json"

    def log_file(self, binary: str) -> Path:
        return self.cluster.layout.log(LOGS[binary])

    @property
    def bin_dir(self) -> Path:
        if self._state is not None:
            return Path(self._state.bin_dir)
        return self._bin_dir or find_scheduler_plugins_dir(build=False)

    @property
    def ports(self) -> dict[str, int]:
        """{SCHEDULER: port, CONTROLLER: port}: where each serves /healthz and /readyz on 127.0.0.1
        (the scheduler over HTTPS with a self-signed certificate, the controller over HTTP)."""
        return dict(self._state.ports) if self._state else {}

    @property
    def pids(self) -> dict[str, int]:
        return dict(self._state.pids) if self._state else {}

    def is_running(self) -> bool:
        """True when both processes run."""
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
        """True when the scheduler's /readyz (its informers synced) and the controller's /readyz answer 200."""
        if self._state is None:
            return False
        ports = self._state.ports
        return probe_https(f"https://127.0.0.1:{ports[SCHEDULER]}/readyz") and _http_ok(ports[CONTROLLER], "/readyz")

    def logs(self, binary: str = SCHEDULER, tail: int | None = None) -> str:
        """The log of SCHEDULER or CONTROLLER (its last `tail` lines when given); '' if there is none yet."""
        try:
            text = self.log_file(binary).read_text(errors="replace")
        except FileNotFoundError:
            return ""
        return "\n".join(text.splitlines()[-tail:]) if tail else text

    # ------------------------------------------------------------------ set-up

    def install_crds(self, timeout: float = 60.0) -> None:
        """Server-side apply the PodGroup and ElasticQuota CRDs and wait until each is Established."""
        problem = install_crds(self.cluster, self.bin_dir / "crd", CRD_NAMES, timeout)
        if problem:
            raise SchedulerPluginsError(f"{problem}; rerun `bash {BUILD_SCRIPT} scheduler-plugins`")

    def configuration(self) -> dict[str, Any]:
        """The KubeSchedulerConfiguration of the second scheduler (one gang-scheduling profile)."""
        return {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "leaderElection": {"leaderElect": False},
            "clientConnection": {"kubeconfig": str(self.cluster.kubeconfig), "qps": 50, "burst": 100},
            "profiles": [{
                "schedulerName": SCHEDULER_NAME,
                "plugins": {
                    # multiPoint: every extension point Coscheduling implements (queueSort, preFilter,
                    # postFilter, permit, reserve); PrioritySort is the default queue sort it replaces.
                    "multiPoint": {"enabled": [{"name": "Coscheduling"}],
                                   "disabled": [{"name": "PrioritySort"}]},
                },
                "pluginConfig": [{"name": "Coscheduling",
                                  "args": {"permitWaitingTimeSeconds": self.permit_waiting_seconds}}],
            }],
        }

    # ------------------------------------------------------------------ lifecycle

    def start(self, timeout: float = 120.0) -> None:
        """Install the CRDs, write the configuration, start the scheduler and the controller and wait
        until both are ready. A no-op when both already run. On failure both are stopped again."""
        if self.is_running():
            return
        self.stop(grace=0)  # one of the two may have died: start both afresh
        bin_dir = self._bin_dir or find_scheduler_plugins_dir()
        self.dir.mkdir(parents=True, exist_ok=True)
        self._state = SchedulerPluginsState(bin_dir=str(bin_dir), pids={}, ports={})
        self.install_crds()
        self.config_file.write_text(json.dumps(self.configuration(), indent=2) + "\n")
        ports = free_ports(BINARIES)
        kubeconfig = str(self.cluster.kubeconfig)
        env = {**os.environ, "KUBECONFIG": kubeconfig,
               "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
        commands = {
            SCHEDULER: [str(bin_dir / SCHEDULER), f"--config={self.config_file}",
                        f"--authentication-kubeconfig={kubeconfig}", f"--authorization-kubeconfig={kubeconfig}",
                        "--bind-address=127.0.0.1", f"--secure-port={ports[SCHEDULER]}", "--profiling=false",
                        f"--pod-max-in-unschedulable-pods-duration={UNSCHEDULABLE_FLUSH}"],
            CONTROLLER: [str(bin_dir / CONTROLLER), f"--kubeconfig={kubeconfig}", "--metricsAddr=0",
                         f"--probeAddr=127.0.0.1:{ports[CONTROLLER]}", "--qps=50", "--burst=100"],
        }
        self._state = SchedulerPluginsState(bin_dir=str(bin_dir), pids={}, ports=ports)
        try:
            for binary, argv in commands.items():
                self._state.pids[binary] = processes.spawn(argv, self.log_file(binary), env)
                self._state.save(self.state_file)
            self._wait_ready(timeout)
        except BaseException:
            self.stop(grace=0)
            raise

    def _tails(self) -> str:
        return "\n".join(f"last lines of {self.log_file(b)}:\n{self.logs(b, tail=20)}" for b in BINARIES)

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not self.ready():
            if not self.is_running():
                raise SchedulerPluginsError(f"scheduler-plugins exited; {self._tails()}")
            if time.monotonic() >= deadline:
                raise SchedulerPluginsError(f"timed out after {timeout:g}s waiting for scheduler-plugins' "
                                            f"/readyz; {self._tails()}")
            time.sleep(0.2)

    def stop(self, grace: float = 5.0) -> None:
        """Stop both processes by their recorded pids (SIGTERM, SIGKILL after `grace` s). The CRDs and
        PodGroups stay, as after uninstalling a Deployment."""
        if self._state is None:
            return
        for binary, pid in self._state.pids.items():
            processes.stop(pid, Path(self._state.bin_dir) / binary, timeout=grace)
        self.state_file.unlink(missing_ok=True)
        self._state = None
