"""How the controller is configured: one frozen `ControllerOptions`, whose defaults are production's.

`tfjob-operator run` takes its flags' defaults from `DEFAULTS` and `controller.process.app` builds
the options once from the parsed flags, so there is one source for every default: a `Controller`
built with `ControllerOptions()` (as the unit tests do, unless they say otherwise) runs the
configuration production runs. Fields that are flags keep the flag's words (`kueue="auto"`); the
properties say what they mean to the code (`use_kueue` is None for "when its API is served").

Only configuration lives here; the collaborators a controller is built with (the API client, the
metrics, the Event recorder, the clock) are passed beside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from controller.job.gang_schedulers import GangScheduler, gang_scheduler
from controller.job.profiles import Profile

Switch = Literal["auto", "on", "off"]
_SWITCH: dict[str, bool | None] = {"auto": None, "on": True, "off": False}


def create_parallelism(workers: int) -> int:
    """Threads (and connections) for pod creates and deletes, shared by all workers: a wide job's
    slow-start batches reach 64 in flight, the API server's best concurrency in benchmark B0."""
    return max(16, workers * 2)


@dataclass(frozen=True)
class ControllerOptions:
    namespaces: tuple[str, ...] = ()  # --namespace (repeatable); empty: every namespace, and nodes watched
    workers: int = 32  # --workers: reconcile threads
    cluster_domain: str = ""  # --cluster-domain: appended to TF_CONFIG addresses
    resync: float = 300.0  # --resync: informer resync period in seconds (a safety net only; 0: off)
    kueue: Switch = "auto"  # --kueue (auto: when Kueue's API is served)
    # --kueue-tfjob: who queues TFJobs, the operator or Kueue's own TFJob integration (auto: by Kueue's
    # Configuration, controller.kueue.tfjobs)
    kueue_tfjob: Literal["auto", "operator", "kueue"] = "auto"
    kubeflow_tfjob: Switch = "auto"  # --kubeflow-tfjob (auto: while this project's TFJob CRD is served)
    kubeflow_tfjob_without_managed_by: Literal["serve", "leave"] = "serve"  # --kubeflow-tfjob-without-managed-by
    # --network-policy: the default of spec.networkPolicy.enabled; with off, NetworkPolicies are
    # watched only once a job asks for one (controller.caches)
    network_policy: Literal["on", "off"] = "off"
    profiles: tuple[Profile, ...] = ()  # read from the --profiles file
    # --gang-scheduler: a PodGroup per job for Volcano, the scheduler-plugins coscheduler or Kubernetes'
    # own gang scheduling (with a Workload too; none: no PodGroup or Workload call is ever made);
    # --gang-scheduler-name: the scheduler the pods ask for, when the gang scheduler was deployed
    # under another name than its usual one
    gang_scheduler: Literal["none", "volcano", "scheduler-plugins", "kubernetes"] = "none"
    gang_scheduler_name: str = ""
    # Not a flag: how often `--kubeflow-tfjob=auto` re-reads TFJob's discovery listing, so installing
    # (or removing) this project's TFJob CRD starts (or stops) serving TFJobs without a restart.
    discovery_period: float = 10.0
    # Not a flag: how long pod additions and routine pod updates wait, so one reconcile sees a job's
    # pods together (client-go's Job controller waits 1 s; half of that keeps "all Running" prompt).
    pod_batch_period: float = 0.5
    # Not a flag: how long after a pass that only created pods its deferred status may wait for them
    # to start (the batch of their last start brings it sooner): when they start by then, "Created"
    # and "Running" go out in one status write; if not, "Created" with the pods' first state.
    first_status_wait: float = 2.0

    @property
    def watch_nodes(self) -> bool:
        """Nodes are cluster-scoped: watched (to repair pods on lost nodes) only without --namespace."""
        return not self.namespaces

    @property
    def use_kueue(self) -> bool | None:
        return _SWITCH[self.kueue]

    @property
    def serve_tfjobs(self) -> bool | None:
        return _SWITCH[self.kubeflow_tfjob]

    @property
    def serve_unmanaged_tfjobs(self) -> bool:
        """Run the TFJobs that name no controller in `runPolicy.managedBy` (not while Kubeflow's
        operator still runs them)."""
        return self.kubeflow_tfjob_without_managed_by == "serve"

    @property
    def network_policy_default(self) -> bool:
        return self.network_policy == "on"

    @property
    def gang(self) -> GangScheduler | None:
        return gang_scheduler(self.gang_scheduler, self.gang_scheduler_name)

    @property
    def create_parallelism(self) -> int:
        return create_parallelism(self.workers)


DEFAULTS = ControllerOptions()
