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

The scheduler is a `HostAddon` (devcluster/addon.py): its pid and port are recorded in
`<cluster>/volcano/state.json` and its log goes to the cluster's logs folder
(`logs/volcano-scheduler.log`), so `stop()` works from another process too (`tfjob-devcluster down`);
it is stopped by its recorded pid only.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

from .addon import AddonBuild, AddonError, AddonState, HostAddon, http_ok
from .api import ApiError

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


class VolcanoError(AddonError):
    """Volcano could not be built, installed or started (the message says which and why)."""


BUILD = AddonBuild(name="volcano", title="Volcano", binaries=BINARIES, cold_build="several minutes",
                   error=VolcanoError)
"""`build-binaries.sh volcano` fills $TFJOB_VOLCANO_BIN_DIR, else the user cache."""
find_volcano_dir = BUILD.find


@dataclass
class VolcanoState(AddonState):
    """AddonState and where the scheduler's log stood when it was started."""

    log_offset: int = 0  # the size of the log before this start: READY_LINE is looked for after it


class Volcano(HostAddon[VolcanoState]):
    """The Volcano scheduler for one running devcluster (see the module docstring). `ports` is
    {SCHEDULER: port}: where it serves /healthz on 127.0.0.1 (plain HTTP)."""

    build = BUILD
    crd_names = CRD_NAMES
    readiness = f"{SCHEDULER} to be ready"
    log_names = LOGS
    state_type = VolcanoState

    @property
    def config_file(self) -> Path:
        return self.dir / "scheduler.conf"

    def ready(self) -> bool:
        """True when /healthz answers 200 and the log of this start says the informers synced."""
        state = self._state
        if state is None or not http_ok(state.ports[SCHEDULER], "/healthz"):
            return False
        try:
            with open(self.log_file(), "rb") as log:
                log.seek(state.log_offset)
                return READY_LINE.encode() in log.read()
        except FileNotFoundError:
            return False

    def _install(self) -> None:
        self.install_crds()
        self.ensure_default_queue()

    def ensure_default_queue(self) -> None:
        """Create the Queue `default` (open, weight 1, reclaimable) unless it exists."""
        queue = {"apiVersion": API_VERSION, "kind": "Queue", "metadata": {"name": DEFAULT_QUEUE},
                 "spec": {"weight": 1, "reclaimable": True}}
        with contextlib.suppress(ApiError):  # 409: it exists (made by an earlier start or the scheduler)
            self.cluster.api.request("POST", f"/apis/{API_VERSION}/queues", queue)

    def _environment(self) -> dict[str, str]:
        # DEBUG_SOCKET_DIR: where it serves its klog-level socket (default /tmp/klog-socks, shared by
        # every Volcano scheduler of the host, each removing the others' socket at start).
        return {**super()._environment(), "DEBUG_SOCKET_DIR": str(self.dir / "klog-socks")}

    def _prepare(self, state: VolcanoState) -> dict[str, list[str]]:
        self.config_file.write_text(SCHEDULER_CONF)
        log = self.log_file()
        state.log_offset = log.stat().st_size if log.exists() else 0
        return {SCHEDULER: [
            str(Path(state.bin_dir) / SCHEDULER), f"--kubeconfig={self.cluster.kubeconfig}",
            f"--scheduler-conf={self.config_file}", f"--scheduler-name={SCHEDULER_NAME}",
            f"--default-queue={DEFAULT_QUEUE}", "--leader-elect=false", "--enable-healthz=true",
            f"--healthz-address=127.0.0.1:{state.ports[SCHEDULER]}", "--enable-metrics=false",
            "--cache-dumper=false", "--schedule-period=1s", "--kube-api-qps=50", "--kube-api-burst=100", "--v=2"]}
