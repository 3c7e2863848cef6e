"""`tfjob-devcluster`: the command line of the local control plane (up, down, status, ...).

Each subcommand is a plain function taking the parsed arguments, registered in COMMANDS with a
function that adds its own arguments; adding a subcommand (e.g. `demo`) means adding one entry
there. Every command works on a cluster folder (--dir, default
~/.cache/tfjob-operator/clusters/default), so `up` and `down` may run in different processes.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

from .argo import CONTROLLER as ARGO_CONTROLLER
from .argo import ArgoError, ArgoWorkflows
from .binaries import MissingBinariesError
from .cluster import Cluster, ClusterError
from .components import COMPONENTS, canonical
from .hostnet import HostNetworkError
from .realnodes import RealNodeError
from .schedulerplugins import BINARIES as GANG_BINARIES
from .schedulerplugins import SCHEDULER_NAME, SchedulerPlugins, SchedulerPluginsError, find_scheduler_plugins_dir
from .volcano import BINARIES as VOLCANO_BINARIES
from .volcano import SCHEDULER_NAME as VOLCANO_SCHEDULER_NAME
from .volcano import Volcano, VolcanoError, find_volcano_dir


def cmd_up(args: argparse.Namespace) -> int:
    cluster = Cluster(args.dir)
    started = time.monotonic()
    gang_bin_dir = volcano_bin_dir = None
    if args.gang_scheduler == "scheduler-plugins":
        gang_bin_dir = find_scheduler_plugins_dir()  # built before the cluster starts: minutes when cold
    elif args.gang_scheduler == "volcano":
        volcano_bin_dir = find_volcano_dir()  # likewise
    cluster.up(nodes=args.nodes, cpus=args.cpus, memory=args.memory, pods=args.pods, gpus=args.gpus,
               timeout=args.timeout, pod_logs=not args.no_pod_logs, real_nodes=args.real_nodes)
    gang_scheduler = SchedulerPlugins(cluster, gang_bin_dir)
    gang_scheduler.stop()  # leftovers of a crashed run in this folder, bound to the old cluster
    volcano = Volcano(cluster, volcano_bin_dir)
    volcano.stop()
    gang = ""
    if gang_bin_dir is not None or volcano_bin_dir is not None:
        try:
            if gang_bin_dir is not None:
                gang_scheduler.start()
            else:
                volcano.start()
        except BaseException:
            cluster.down()
            raise
        name = SCHEDULER_NAME if gang_bin_dir is not None else VOLCANO_SCHEDULER_NAME
        gang = f", gang scheduler schedulerName {name}"
    real = f" and {len(cluster.real_nodes)} real" if cluster.real_nodes else ""
    print(f"devcluster up in {time.monotonic() - started:.1f}s: {cluster.api_url}, "
          f"{len(cluster.nodes)} fake{real} nodes{gang}, folder {cluster.dir}", file=sys.stderr)
    print(f"export KUBECONFIG={cluster.kubeconfig}")
    return 0


def cmd_argo(args: argparse.Namespace) -> int:
    from .images import build_images  # the executor image; needs root only for the Debian images

    cluster = Cluster(args.dir)
    if not cluster.real_nodes:
        raise ClusterError(f"the cluster in {cluster.dir} has no real node to run workflow pods; "
                           "start one with `up --real-nodes 1 --nodes 0`")
    cluster.load_images(build_images(which=("argoexec",)).values())
    argo = ArgoWorkflows(cluster)
    argo.start()
    print(f"Argo's workflow controller runs (log {argo.log_file()}); its CLI: {argo.cli}", file=sys.stderr)
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    cluster = Cluster(args.dir)
    ArgoWorkflows(cluster).stop()  # a no-op unless `argo` (or a test) started it
    SchedulerPlugins(cluster).stop()  # a no-op unless `up --gang-scheduler` (or a test) started it
    Volcano(cluster).stop()  # likewise
    cluster.down()
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    cluster = Cluster(args.dir)
    status = cluster.status()
    running = [c for c, s in status.items() if s["running"]]
    if not running:
        print(f"not running ({cluster.dir})")
        return 1
    print(f"folder     {cluster.dir}\napi        {cluster.api_url}\nkubeconfig {cluster.kubeconfig}")
    # The gang scheduler's processes when `up --gang-scheduler ...` (or a test) started them.
    for component, s in {**status, **SchedulerPlugins(cluster).status(), **Volcano(cluster).status(),
                         **ArgoWorkflows(cluster).status()}.items():
        state = "running" if s["running"] else "STOPPED"
        port = f"127.0.0.1:{s['port']}" if s["port"] else "-"
        print(f"{component:<28} {state:<8} pid {s['pid'] or '-':<8} {port:<16} {s['log']}")
    if len(running) == len(cluster.components):
        print(cluster.kubectl("get", "nodes", check=False).stdout, end="")
        return 0
    return 1


def cmd_kubeconfig(args: argparse.Namespace) -> int:
    print(Cluster(args.dir).kubeconfig)
    return 0


def cmd_logs(args: argparse.Namespace) -> int:
    cluster = Cluster(args.dir)
    if args.component in GANG_BINARIES:
        print(SchedulerPlugins(cluster).logs(args.component, tail=args.tail), end="")
    elif args.component in VOLCANO_BINARIES:
        print(Volcano(cluster).logs(args.component, tail=args.tail), end="")
    elif args.component == ARGO_CONTROLLER:
        print(ArgoWorkflows(cluster).logs(args.component, tail=args.tail), end="")
    else:
        print(cluster.logs(canonical(args.component), tail=args.tail), end="")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from .demo import Demo  # the demo needs PyYAML and the repository's manifests; the rest does not

    interactive = not args.non_interactive and sys.stdin.isatty() and sys.stdout.isatty()
    return Demo(Cluster(args.dir), timeout=args.timeout, interactive=interactive, down=args.down).run()


def _demo_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds for everything (cluster, operator, job to Succeeded); default 300")
    parser.add_argument("--non-interactive", action="store_true",
                        help="exit when the job finishes (automatic without a terminal); status 0 only if it Succeeded")
    parser.add_argument("--down", action="store_true", help="stop the cluster at the end")


def cmd_multikueue_up(args: argparse.Namespace) -> int:
    from . import multikueue  # needs PyYAML (Kueue's configuration) and the repository's manifests

    base = Path(args.dir) if args.dir else multikueue.default_base()
    started = time.monotonic()
    clusters = multikueue.up(base, args.workers, args.nodes, args.quota_cpu, args.quota_memory)
    print(f"MultiKueue up in {time.monotonic() - started:.1f}s under {base}: manager and "
          f"{', '.join(multikueue.worker_names(args.workers))}, a Kueue on each; submit to LocalQueue "
          f"{multikueue.LOCAL_QUEUE} in namespace {multikueue.QUEUE_NAMESPACE} on the manager with "
          f"managedBy {multikueue.CONTROLLER_NAME}, and run `tfjob-operator run --kubeconfig ...` for each",
          file=sys.stderr)
    for name, cluster in clusters.items():
        print(f"# {name}\nexport KUBECONFIG_{name.upper().replace('-', '_')}={cluster.kubeconfig}")
    return 0


def cmd_multikueue_down(args: argparse.Namespace) -> int:
    from . import multikueue

    stopped = multikueue.down(Path(args.dir) if args.dir else multikueue.default_base())
    print(f"stopped: {', '.join(stopped) or 'nothing'}", file=sys.stderr)
    return 0


def _multikueue_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workers", type=int, default=1, help="number of worker clusters (default 1)")
    parser.add_argument("--nodes", type=int, default=2, help="fake nodes per cluster (default 2)")
    parser.add_argument("--quota-cpu", default="8", help="CPU quota of ClusterQueue cq on each worker (default 8)")
    parser.add_argument("--quota-memory", default="32Gi", help="its memory quota (default 32Gi)")


def _up_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--nodes", type=int, default=4, help="number of fake (KWOK) nodes (default 4)")
    parser.add_argument("--cpus", default="32", help="CPU capacity per node (default 32)")
    parser.add_argument("--memory", default="256Gi", help="memory capacity per node (default 256Gi)")
    parser.add_argument("--pods", default="110", help="pod capacity per node (default 110)")
    parser.add_argument("--gpus", type=int, default=8, help="nvidia.com/gpu per node (default 8; 0: none)")
    parser.add_argument("--real-nodes", type=int, default=0,
                        help="real nodes (kubelet + containerd, real containers) beside the fake ones; needs "
                             "root and `make real-node-deps`; tainted when there are fake nodes too (default 0)")
    parser.add_argument("--gang-scheduler", choices=("none", "scheduler-plugins", "volcano"), default="none",
                        help="also run a gang scheduler beside kube-scheduler: `scheduler-plugins` is the "
                             "kubernetes-sigs Coscheduling scheduler (schedulerName scheduler-plugins-scheduler) "
                             "with its PodGroup controller, `volcano` the Volcano scheduler (schedulerName "
                             "volcano, Queue `default`); built on first use (default none)")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds to wait for readiness")
    parser.add_argument("--no-pod-logs", action="store_true",
                        help="do not run the agent that writes the simulated containers' logs (kubectl logs)")


def _logs_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("component", help="one of " + ", ".join(COMPONENTS) + " (or apiserver, kcm, scheduler); "
                        "with real nodes also containerd-N, kubelet-N, coredns, kube-proxy, kube-router; with "
                        "--gang-scheduler also " + ", ".join(GANG_BINARIES + VOLCANO_BINARIES) + "; after `argo`, "
                        + ARGO_CONTROLLER)
    parser.add_argument("--tail", type=int, default=None, help="only the last N lines")


def _no_arguments(parser: argparse.ArgumentParser) -> None:
    pass


# name -> (function, help, adds the subcommand's own arguments)
COMMANDS: dict[str, tuple[Callable[[argparse.Namespace], int], str, Callable[[argparse.ArgumentParser], None]]] = {
    "up": (cmd_up, "start a local control plane with fake nodes", _up_arguments),
    "down": (cmd_down, "stop it and delete its etcd data", _no_arguments),
    "status": (cmd_status, "show its components, ports and nodes", _no_arguments),
    "kubeconfig": (cmd_kubeconfig, "print the path of the admin kubeconfig", _no_arguments),
    "logs": (cmd_logs, "print a component's log", _logs_arguments),
    "multikueue-up": (cmd_multikueue_up, "start a MultiKueue manager and workers side by side (--dir: their "
                      "parent folder, default ~/.cache/tfjob-operator/clusters/multikueue), a Kueue on each",
                      _multikueue_arguments),
    "multikueue-down": (cmd_multikueue_down, "stop the clusters multikueue-up started", _no_arguments),
    "argo": (cmd_argo, "start Argo's workflow controller on the running cluster (real nodes needed), its "
             "executor image imported; built on first use", _no_arguments),
    "demo": (cmd_demo, "start the cluster and the operator, run an example job to Succeeded", _demo_arguments),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tfjob-devcluster", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (_, help_text, add_arguments) in COMMANDS.items():
        command_parser = sub.add_parser(name, help=help_text)
        command_parser.add_argument("--dir", default=None,
                                    help="cluster folder (default ~/.cache/tfjob-operator/clusters/default)")
        add_arguments(command_parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    function = COMMANDS[args.command][0]
    try:
        return function(args)
    except (ClusterError, MissingBinariesError, RealNodeError, HostNetworkError, SchedulerPluginsError, VolcanoError,
            ArgoError, ValueError) as error:
        print(f"tfjob-devcluster {args.command}: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
