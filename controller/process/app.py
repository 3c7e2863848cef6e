"""`tfjob-operator run`: assemble the controller from flags and run it until a signal.

Order matters: logging first; the API client (kubeconfig or in-cluster, chosen explicitly);
metrics and health endpoints (so /readyz can say "not ready" while caches fill); the informers;
then the workers once caches have synced and, with `--leader-elect`, once this process holds the
Lease. SIGTERM and SIGINT stop everything cleanly.

Leader election (controller/process/leader.py) shapes the rest:

* Every replica runs its informers, so a standby has warm caches, is ready (/readyz), and takes
  over by just starting its workers.
* A leader that loses the Lease exits at once with status 1 (client-go controllers do the same
  with a fatal log): its workers may be mid-reconcile and another replica may already lead, so
  the only clean state is a fresh process.
* On SIGTERM the leader stops its workers first and then releases the Lease, so no reconcile
  runs after a standby may have taken over, and the standby does not wait out the lease.
* `tfjob_leader` is 1 while this process may reconcile: once it holds the Lease, or from the start
  without `--leader-elect` (such a process is the leader); 0 while standing by and once stopped.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import FrameType

import structlog
from prometheus_client import start_http_server

from controller.controller import Controller
from controller.events import EventRecorder
from controller.job import validation
from controller.job.profile_file import ProfileError
from controller.job.profiles import Profile
from controller.metrics import ControllerMetrics
from controller.options import ControllerOptions
from controller.process import logs
from controller.process.health import HealthServer, parse_address
from controller.process.leader import LeaderElectionConfig, LeaderElector, default_identity, default_namespace
from controller.process.malloc import limit_malloc_arenas
from controller.process.profiles import load_profiles
from kube import ApiError, ConfigError, Kube, resource_path

log = structlog.get_logger(__name__)

LOST_LEASE_EXIT_CODE = 1
BAD_CONFIGURATION_EXIT_CODE = 2
API_UNREACHABLE_EXIT_CODE = 3


def election_config(args: argparse.Namespace) -> LeaderElectionConfig | None:
    """The Lease settings from the flags; None without --leader-elect. Raises ValueError if unusable."""
    if not args.leader_elect:
        return None
    namespace = default_namespace(args.leader_election_namespace, os.environ)
    if namespace is None:
        raise ValueError("not running in a cluster: pass --leader-election-namespace (or set POD_NAMESPACE)")
    return LeaderElectionConfig(namespace=namespace, name=args.leader_election_id, identity=default_identity(),
                                lease_duration=args.lease_duration, renew_deadline=args.renew_deadline,
                                retry_period=args.retry_period)


def _exit_lost_lease() -> None:
    """Leave now: no worker may reconcile once another replica can lead."""
    log.error("lost the leader lease; exiting so the process restarts clean")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(LOST_LEASE_EXIT_CODE)


@dataclass(frozen=True)
class _Assembled:
    """What `run` builds before it starts anything: the settings read from the flags and files, the
    API client and the controller on it."""

    election: LeaderElectionConfig | None
    profiles: Sequence[Profile]
    options: ControllerOptions
    kube: Kube
    recorder: EventRecorder
    controller: Controller


class _Leadership:
    """Whether this process may reconcile: `leading` once it holds the Lease (at once without an
    election), mirrored by the `tfjob_leader` gauge; losing the Lease short of a stop ends the process."""

    def __init__(self, metrics: ControllerMetrics, stop: threading.Event) -> None:
        self.metrics = metrics
        self.stop = stop
        self.leading = threading.Event()

    def started_leading(self) -> None:
        self.metrics.leader.set(1)
        self.leading.set()

    def lost_leadership(self) -> None:
        self.metrics.leader.set(0)
        if not self.stop.is_set():
            _exit_lost_lease()


def run(args: argparse.Namespace) -> int:
    """Run the controller until SIGTERM or SIGINT; the exit status (see the module's docstring)."""
    limit_malloc_arenas()  # before any thread starts: keeps resident memory flat after bursts
    logs.configure(args.log_format, args.log_level)
    metrics = ControllerMetrics()
    assembled = _assemble(args, metrics)
    if isinstance(assembled, int):
        return assembled
    return _serve(args, metrics, assembled)


def _assemble(args: argparse.Namespace, metrics: ControllerMetrics) -> _Assembled | int:
    """The controller and what it needs, or the exit status (logged) when the flags, the profiles
    file or the API server do not allow it; nothing is started yet."""
    try:
        election = election_config(args)
    except ValueError as error:
        log.error("bad leader election settings", error=str(error))
        return BAD_CONFIGURATION_EXIT_CODE
    try:
        profiles = load_profiles(args.profiles)
    except ProfileError as error:
        log.error("bad start-up profiles file", error=str(error))
        return BAD_CONFIGURATION_EXIT_CODE
    options = controller_options(args, profiles)
    try:
        # A connection per worker and per create thread, and a few for events and leader election.
        pool_size = options.workers + options.create_parallelism + 8
        kube = Kube.load(args.kubeconfig, context=args.context, pool_size=pool_size,
                         qps=args.qps, burst=args.burst, on_request=metrics.on_request)
    except ConfigError as error:
        log.error("no usable Kubernetes credentials", error=str(error))
        return BAD_CONFIGURATION_EXIT_CODE
    recorder = EventRecorder(lambda ns, body: kube.create(resource_path("", "v1", "events", ns), body))
    try:
        missing = missing_pod_group_api(kube, options)
        if missing:
            log.error(missing)
            kube.close()
            return BAD_CONFIGURATION_EXIT_CODE
        controller = Controller(kube, options, metrics=metrics, recorder=recorder)
    except ApiError as error:  # discovery (Kueue, TFJob) needs the API server: say so, no traceback
        log.error("cannot reach the API server to discover its APIs; exiting (a Deployment restarts it)",
                  server=kube.host, error=str(error))
        kube.close()
        return API_UNREACHABLE_EXIT_CODE
    return _Assembled(election, profiles, options, kube, recorder, controller)


def _serve(args: argparse.Namespace, metrics: ControllerMetrics, assembled: _Assembled) -> int:
    """Start the endpoints, the informers and the election; reconcile once synced and leading; on a
    signal stop the workers before releasing the Lease, then everything else."""
    kube, controller = assembled.kube, assembled.controller
    stop = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("signal received; stopping", signal=signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    leadership = _Leadership(metrics, stop)
    elector = _elector(kube, assembled.election, leadership)

    def ready() -> bool:
        return controller.caches_synced() and (elector is None or elector.healthy())

    health = _start_endpoints(args, metrics, ready)
    assembled.recorder.start()
    _log_starting(assembled)
    controller.start_informers()
    validation.prepare()  # while the caches fill
    election_thread = _start_election(elector, leadership) if elector is not None else None
    _reconcile_once_leading(controller, assembled.options.workers, leadership)

    controller.stop()
    if elector is not None and election_thread is not None:
        election_thread.join(timeout=args.renew_deadline + 5)
        if elector.is_leader():
            elector.release()
    metrics.leader.set(0)
    assembled.recorder.stop()
    if health is not None:
        health.stop()
    kube.close()
    log.info("stopped")
    return 0


def _elector(kube: Kube, election: LeaderElectionConfig | None, leadership: _Leadership) -> LeaderElector | None:
    """The Lease's elector, its writes fencing the client's; None without `--leader-elect`, when this
    process leads from the start."""
    if election is None:
        # Without an election this process is the leader: it reconciles, and tfjob_leader says so
        # (0 would fire TFJobOperatorNoLeader for as long as it runs).
        leadership.started_leading()
        return None
    elector = LeaderElector(kube, election, on_started_leading=leadership.started_leading,
                            on_lost_leadership=leadership.lost_leadership)
    # Fencing: no write unless the Lease was renewed within the renew deadline (the Lease's own
    # writes excepted). A leader frozen past it cannot finish a reconcile it had begun.
    kube.write_fence = lambda _method, path: "/leases" in path or elector.holds_lease_now()
    return elector


def _start_endpoints(args: argparse.Namespace, metrics: ControllerMetrics,
                     ready: Callable[[], bool]) -> HealthServer | None:
    """Serve /metrics and /healthz, /readyz unless their address is '0'; the health server to stop."""
    metrics_address = parse_address(args.metrics_addr)
    if metrics_address is not None:
        start_http_server(metrics_address[1], addr=metrics_address[0], registry=metrics.registry)
    health_address = parse_address(args.health_addr)
    health = HealthServer(health_address, ready) if health_address else None
    if health is not None:
        health.start()
    return health


def _log_starting(assembled: _Assembled) -> None:
    """One line with what this process serves and how, for whoever reads why it behaves as it does."""
    options, election = assembled.options, assembled.election
    log.info("starting", namespaces=list(options.namespaces) or "all", workers=options.workers,
             server=assembled.kube.host, kubeflow_tfjob=options.kubeflow_tfjob,
             serving_tfjobs=assembled.controller.caches.tfjobs is not None,
             network_policy=options.network_policy, profiles=[p.name for p in assembled.profiles],
             leader_election=f"{election.namespace}/{election.name}" if election else "off",
             identity=election.identity if election else None)


def _start_election(elector: LeaderElector, leadership: _Leadership) -> threading.Thread:
    """Run the election on its own thread until the stop; a crash in it counts as a lost Lease."""
    def elect() -> None:
        try:
            elector.run(leadership.stop)
        except Exception:  # a bug in the election must not leave a leader that no longer renews
            log.exception("leader election crashed")
            leadership.lost_leadership()

    election_thread = threading.Thread(target=elect, name="leader-election", daemon=True)
    election_thread.start()
    return election_thread


def _reconcile_once_leading(controller: Controller, workers: int, leadership: _Leadership) -> None:
    """Wait for the caches, then for the Lease, then run the workers until the stop."""
    stop, leading = leadership.stop, leadership.leading
    while not stop.is_set() and not controller.wait_for_sync(timeout=1.0):
        pass
    if not stop.is_set():
        log.info("caches synced" + ("; waiting for the leader lease" if not leading.is_set() else ""))
    while not stop.is_set() and not leading.wait(timeout=0.5):
        pass
    if not stop.is_set():
        log.info("starting workers", workers=workers)
        controller.start_workers()
        stop.wait()


def missing_pod_group_api(kube: Kube, options: ControllerOptions) -> str:
    """Why the operator cannot start with its `--gang-scheduler` ("" when it can): the gang
    scheduler's PodGroup API is not served, so the scheduler is not installed (as Kubeflow's
    operator does, it exits rather than run jobs whose pods would wait for a scheduler that is not there)."""
    gang = options.gang
    if gang is None or kube.has_api(gang.group, gang.version, gang.kind, crds=False):
        return ""
    return (f"--gang-scheduler={gang.name}: the API server does not serve {gang.api_version} {gang.kind}; "
            f"{gang.install_hint} first, or run with --gang-scheduler=none")


def controller_options(args: argparse.Namespace, profiles: Sequence[Profile]) -> ControllerOptions:
    """The controller's options from `run`'s flags (whose defaults are `controller.options.DEFAULTS`)
    and the start-up profiles read from `--profiles`."""
    return ControllerOptions(
        namespaces=tuple(args.namespace), workers=args.workers, cluster_domain=args.cluster_domain,
        resync=args.resync, kueue=args.kueue, kueue_tfjob=args.kueue_tfjob, kubeflow_tfjob=args.kubeflow_tfjob,
        kubeflow_tfjob_without_managed_by=args.kubeflow_tfjob_without_managed_by,
        network_policy=args.network_policy, profiles=tuple(profiles),
        gang_scheduler=args.gang_scheduler, gang_scheduler_name=args.gang_scheduler_name,
    )
