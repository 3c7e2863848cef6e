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

Both are one `HostAddon` (devcluster/addon.py): pids and ports are recorded in
`<cluster>/scheduler-plugins/state.json` and the logs go to the cluster's logs folder
(`logs/scheduler-plugins-scheduler.log`, `logs/scheduler-plugins-controller.log`), so `stop()` works
from another process too (`tfjob-devcluster down`); both are stopped by their recorded pids only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from .addon import AddonBuild, AddonError, AddonState, HostAddon, http_ok
from .api import probe_https
from .binaries import BUILD_SCRIPT
from .cluster import Cluster

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


class SchedulerPluginsError(AddonError):
    """scheduler-plugins could not be built, installed or started (the message says which and why)."""


BUILD = AddonBuild(name="scheduler-plugins", title="scheduler-plugins", binaries=BINARIES,
                   cold_build="several minutes", error=SchedulerPluginsError)
"""`build-binaries.sh scheduler-plugins` fills $TFJOB_SCHEDULER_PLUGINS_BIN_DIR, else the user cache."""
scheduler_plugins_dir = BUILD.folder
find_scheduler_plugins_dir = BUILD.find


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


class SchedulerPlugins(HostAddon[AddonState]):
    """The scheduler-plugins scheduler and controller for one running devcluster (see the module docstring).
    `ports` is {SCHEDULER: port, CONTROLLER: port}: where each serves /healthz and /readyz on 127.0.0.1
    (the scheduler over HTTPS with a self-signed certificate, the controller over HTTP)."""

    build = BUILD
    crd_names = CRD_NAMES
    readiness = "scheduler-plugins' /readyz"
    log_names = LOGS
    state_type = AddonState

    def __init__(self, cluster: Cluster, bin_dir: str | os.PathLike[str] | None = None,
                 permit_waiting_seconds: int = PERMIT_WAITING_SECONDS) -> None:
        """`permit_waiting_seconds` is Coscheduling's `permitWaitingTimeSeconds`: how long the pods
        of a group already placed wait for the rest (a PodGroup's `scheduleTimeoutSeconds` wins)."""
        super().__init__(cluster, bin_dir)
        self.permit_waiting_seconds = permit_waiting_seconds

    @property
    def config_file(self) -> Path:
        return self.dir / "scheduler-config.json"

    def ready(self) -> bool:
        """True when the scheduler's /readyz (its informers synced) and the controller's /readyz answer 200."""
        if self._state is None:
            return False
        ports = self._state.ports
        return probe_https(f"https://127.0.0.1:{ports[SCHEDULER]}/readyz") and http_ok(ports[CONTROLLER], "/readyz")

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

    def _prepare(self, state: AddonState) -> dict[str, list[str]]:
        self.config_file.write_text(json.dumps(self.configuration(), indent=2) + "\n")
        kubeconfig, ports = str(self.cluster.kubeconfig), state.ports
        return {
            SCHEDULER: [str(Path(state.bin_dir) / SCHEDULER), f"--config={self.config_file}",
                        f"--authentication-kubeconfig={kubeconfig}", f"--authorization-kubeconfig={kubeconfig}",
                        "--bind-address=127.0.0.1", f"--secure-port={ports[SCHEDULER]}", "--profiling=false",
                        f"--pod-max-in-unschedulable-pods-duration={UNSCHEDULABLE_FLUSH}"],
            CONTROLLER: [str(Path(state.bin_dir) / CONTROLLER), f"--kubeconfig={kubeconfig}", "--metricsAddr=0",
                         f"--probeAddr=127.0.0.1:{ports[CONTROLLER]}", "--qps=50", "--burst=100"],
        }
