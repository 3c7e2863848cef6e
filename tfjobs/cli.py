"""`kubectl tfjob` (the `kubectl-tfjob` plugin): submit, watch, read and manage TensorFlowJobs.

    kubectl tfjob submit -f job.yaml [--set worker.replicas=8 ...] [--name N] [--wait] [--logs]
    kubectl tfjob get [JOB ...] [-o wide|yaml|json|name] [-A]
    kubectl tfjob describe JOB
    kubectl tfjob logs JOB [-f] [--role R] [--index I] [-c C | --all-containers] [--since 5m] [--tail N]
    kubectl tfjob wait JOB [--for Succeeded|Running|Failed|Suspended|...] [--timeout 10m]
    kubectl tfjob scale JOB --replicas N [--role worker]
    kubectl tfjob delete JOB ... [--wait]

kubectl finds the plugin on PATH (`kubectl plugin list`) and runs it for `kubectl tfjob ...`; its
flags come after the subcommand name: `--kubeconfig`, `--context`, `-n/--namespace` (default:
the context's namespace, else "default"). Output follows kubectl's habits: data on stdout,
errors on stderr as `error: ...` / `Error from server (Reason): ...`, each ending with a newline, exit
status 1 on an error; a kind the cluster does not serve is named with why, from its CRD (`tfjobs.served`).
`wait` exits 0 when the job reached the state, 1 when it ended otherwise (or was deleted), 2 on
timeout; on a terminal it shows one live progress line, otherwise a line per change. `logs`
prefixes every line with its slot (`[worker-1]`) and, with `-f`, follows pods as they come and go
until the job has finished. `submit` creates the ConfigMaps, Secrets and PersistentVolumeClaims of
the file before its jobs, replacing those that exist (a claim that exists is kept).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn, TextIO

import yaml

from tfjobs.client import STATES, AmbiguousJob, JobFailed, JobNotFound, TfJobClient, WaitTimeout
from tfjobs.describe import describe
from tfjobs.dispatch import dispatched, placement
from tfjobs.durations import parse_duration
from tfjobs.errors import ClusterApiError, CredentialsError, KindNotServed
from tfjobs.kinds import JobKind, kind_named, kind_of
from tfjobs.logs import LogLine, format_line
from tfjobs.manifests import InputError, load_manifest
from tfjobs.progress import Progress, render
from tfjobs.tables import job_rows, table

__all__ = ["EXIT_ERROR", "EXIT_OK", "EXIT_TIMEOUT", "Console", "build_parser", "main"]

EXIT_OK = 0
EXIT_ERROR = 1  # an error, or (wait) the job ended without reaching the state
EXIT_TIMEOUT = 2  # wait: timed out
EXIT_INTERRUPTED = 130


def resource(kind: JobKind) -> str:
    """How kubectl names a kind in its messages: `tensorflowjob.kubeflow.org`, `tfjob.kubeflow.org`."""
    return f"{kind.name.lower()}.{kind.group}"


@dataclass
class Console:
    """Where output goes, and whether stderr is a terminal (the live progress line)."""

    out: TextIO = field(default_factory=lambda: sys.stdout)
    err: TextIO = field(default_factory=lambda: sys.stderr)
    tty: bool | None = None

    def __post_init__(self) -> None:
        if self.tty is None:
            self.tty = bool(getattr(self.err, "isatty", lambda: False)())

    def print(self, text: str = "") -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def error(self, text: str) -> None:
        """One error (or warning) on stderr, ending with exactly one newline whatever the text ends with."""
        self.err.write(text.rstrip("\r\n") + "\n")
        self.err.flush()


class UsageError(Exception):
    """Bad command-line arguments (exit status 1, as kubectl)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message}\nSee '{self.prog} --help' for usage.")


# --- commands ----------------------------------------------------------------------------------------


def _dump(objects: list[dict[str, Any]], output: str, single: bool) -> str:
    body: Any = objects[0] if single else {"apiVersion": "v1", "kind": "List", "items": objects}
    if output == "json":
        return json.dumps(body, indent=4)
    return yaml.safe_dump(body, sort_keys=False).rstrip("\n")


def cmd_get(client: TfJobClient, args: argparse.Namespace, console: Console) -> int:
    status = EXIT_OK
    if args.names:
        jobs = []
        for name in args.names:
            try:
                jobs.append(client.get(name, kind=args.kind))
            except JobNotFound as error:
                console.error(f"Error from server (NotFound): {error}")
                status = EXIT_ERROR
    else:
        jobs = client.list(all_namespaces=args.all_namespaces, label_selector=args.selector, kind=args.kind)
        if not jobs:
            where = "any namespace" if args.all_namespaces else f"{client.namespace} namespace"
            console.error(f"No resources found in {where}.")
            return status
    if not jobs:
        return status
    if args.output in ("json", "yaml"):
        console.print(_dump(jobs, args.output, single=len(args.names) == 1))
    elif args.output == "name":
        for job in jobs:
            console.print(f"{resource(kind_of(job))}/{job['metadata']['name']}")
    else:
        headers, rows = job_rows([kind_of(job).view(job) for job in jobs], wide=args.output == "wide",
                                 all_namespaces=args.all_namespaces)
        console.print(table(headers, rows))
    return status


def cmd_describe(client: TfJobClient, args: argparse.Namespace, console: Console) -> int:
    job_kind, job = client.find(args.name, kind=args.kind)
    pods = client.pods(args.name)
    queued = ((job.get("metadata") or {}).get("labels") or {}).get("kueue.x-k8s.io/queue-name")
    workload = client.workload(job) if queued or dispatched(job) else None
    runs_on = placement([workload] if workload else []) if dispatched(job) else None
    console.out.write(describe(job_kind.view(job), pods, client.events(args.name, pods=pods, kind=job_kind),
                               runs_on=runs_on, workload=workload))
    console.out.flush()
    return EXIT_OK


def _print_lines(lines: Any, args: argparse.Namespace, console: Console) -> None:
    for line in lines:
        assert isinstance(line, LogLine)
        console.print(format_line(line, timestamps=args.timestamps, prefix=args.prefix))


def cmd_logs(client: TfJobClient, args: argparse.Namespace, console: Console) -> int:
    job_kind, job = client.find(args.name, kind=args.kind)
    if dispatched(job):  # no pods here: they are on the worker cluster MultiKueue chose
        where = client.placement(job)
        console.error(f"error: {job_kind.name} {args.name} was dispatched by MultiKueue "
                      f"{'to worker cluster ' + where if where else 'and has no worker cluster yet'}: its pods "
                      "and their logs are there; run this with that cluster's --kubeconfig or --context")
        return EXIT_ERROR
    lines = client.logs(args.name, follow=args.follow, role=args.role, index=args.index, container=args.container,
                        all_containers=args.all_containers, since=args.since, tail=args.tail, kind=args.kind,
                        on_error=lambda message: console.error(f"warning: {message}"))
    try:
        _print_lines(lines, args, console)
    finally:
        lines.close()
    return EXIT_OK


class ProgressView:
    """The `wait` progress: one line rewritten in place on a terminal, a line per change otherwise."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.last: Progress | None = None
        self.shown = False

    def __call__(self, current: Progress) -> None:
        if self.console.tty:
            width = shutil.get_terminal_size((100, 20)).columns
            self.console.err.write("\r\x1b[2K" + render(current, detail=True)[: max(width - 1, 20)])
            self.console.err.flush()
            self.shown = True
        elif not current.same_as(self.last):
            self.console.error(render(current, detail=True))
        self.last = current

    def end(self) -> None:
        if self.console.tty and self.shown:
            self.console.err.write("\n")
            self.console.err.flush()
            self.shown = False


def _wait(client: TfJobClient, name: str, state: str, timeout: float | None, console: Console,
          kind: JobKind | None = None) -> int:
    job_kind = client.find(name, kind=kind)[0]
    view = ProgressView(console)
    try:
        client.wait_for(name, state, timeout=timeout, on_progress=view, kind=job_kind)
    except WaitTimeout:
        view.end()
        console.error(f"error: timed out waiting for the condition on {job_kind.plural}/{name}")
        return EXIT_TIMEOUT
    except JobFailed as failed:
        view.end()
        console.error(f"error: {failed} without reaching {state}")
        return EXIT_ERROR
    finally:
        view.end()  # any other error is printed on a line of its own, not after the live progress line
    console.print(f"{resource(job_kind)}/{name} condition met")
    return EXIT_OK


def _state(text: str) -> str:
    value = text.split("=", 1)[1] if "=" in text else text  # also `condition=Succeeded`, as kubectl
    match = next((s for s in STATES if s.lower() == value.lower()), None)
    if match is None:
        raise argparse.ArgumentTypeError(f"unknown state {value!r}; choose from {', '.join(STATES)}")
    return match


def _kind(text: str) -> JobKind:
    try:
        return kind_named(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from error


def _duration(text: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from error


def cmd_wait(client: TfJobClient, args: argparse.Namespace, console: Console) -> int:
    return _wait(client, args.name, args.state, args.timeout, console, args.kind)


def cmd_submit(client: TfJobClient, args: argparse.Namespace, console: Console) -> int:
    manifest = load_manifest(args.filename)
    jobs = manifest.jobs
    if len(jobs) > 1 and (args.name or args.wait or args.logs):
        raise InputError(f"{args.filename} holds {len(jobs)} jobs; --name, --wait and --logs need one")
    options: dict[str, Any] = {"name": args.name, "overrides": args.set, "namespace": args.namespace}
    bodies = [client.job_body(job, **options) for job in jobs]  # every job checked before anything is created
    # The ConfigMaps, Secrets and claims of the file go first, where the (first) job goes unless they say.
    companions = [client.companion_body(companion, namespace=args.namespace,
                                        default_namespace=bodies[0]["metadata"]["namespace"])
                  for companion in manifest.companions]
    if args.dry_run:
        for body in [*companions, *bodies]:
            console.print("---\n" + yaml.safe_dump(body, sort_keys=False).rstrip("\n"))
        return EXIT_OK
    for companion in companions:
        _, outcome = client.apply_companion(companion)
        what = f"{companion['kind'].lower()}/{companion['metadata']['name']}"
        console.print(f"{what} kept (it exists; a claim's spec cannot change)" if outcome == "kept"
                      else f"{what} {outcome}")
    created = []
    for job in jobs:
        stored = client.create(job, **options)
        created.append(stored)
        console.print(f"{resource(kind_of(stored))}/{stored['metadata']['name']} created")
    if not created or not (args.wait or args.logs):
        return EXIT_OK
    job = created[0]
    name, namespace, job_kind = job["metadata"]["name"], job["metadata"]["namespace"], kind_of(job)
    client.namespace = namespace
    remaining = args.timeout
    if args.logs:
        started = time.monotonic()
        lines = client.logs(name, follow=True, timeout=args.timeout, kind=job_kind,
                            on_error=lambda message: console.error(f"warning: {message}"))
        try:
            _print_lines(lines, args, console)
        finally:
            lines.close()
        if args.timeout is not None:
            remaining = args.timeout - (time.monotonic() - started)
            if remaining <= 0:
                console.error(f"error: timed out after {args.timeout:g}s following the logs of "
                              f"{resource(job_kind)}/{name}")
                return EXIT_TIMEOUT
    return _wait(client, name, "Succeeded", remaining, console, job_kind)


def cmd_delete(client: TfJobClient, args: argparse.Namespace, console: Console) -> int:
    status = EXIT_OK
    for name in args.names:
        try:
            job_kind = client.find(name, kind=args.kind)[0]
            client.delete(name, wait=args.wait, timeout=args.timeout, kind=job_kind)
        except JobNotFound as error:
            if not args.ignore_not_found:
                console.error(f"Error from server (NotFound): {error}")
                status = EXIT_ERROR
            continue
        except WaitTimeout as error:
            console.error(f"error: {error}")
            status = EXIT_ERROR
            continue
        console.print(f'{resource(job_kind)} "{name}" deleted')
    return status


def cmd_scale(client: TfJobClient, args: argparse.Namespace, console: Console) -> int:
    stored = client.scale(args.name, args.replicas, role=args.role, kind=args.kind)
    console.print(f"{resource(kind_of(stored))}/{args.name} scaled")
    return EXIT_OK


# --- arguments ---------------------------------------------------------------------------------------


def _bool(text: str) -> bool:
    if text.lower() in ("true", "1", "yes"):
        return True
    if text.lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, not {text!r}")


def _common(parser: argparse.ArgumentParser, suppress: bool) -> None:
    """kubectl's connection flags; accepted before and after the subcommand."""
    default: Any = argparse.SUPPRESS if suppress else None
    parser.add_argument("--kubeconfig", default=default, help="path to the kubeconfig file")
    parser.add_argument("--context", default=default, help="the kubeconfig context to use")
    parser.add_argument("-n", "--namespace", default=default, help="the namespace (default: the context's)")


def _log_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--timestamps", action="store_true", help="show each line's timestamp")
    parser.add_argument("--prefix", type=_bool, nargs="?", const=True, default=True,
                        help="prefix each line with its slot, [worker-1] (default true)")


Handler = Callable[[TfJobClient, argparse.Namespace, Console], int]


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="kubectl tfjob", description=(__doc__ or "").splitlines()[0],
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    _common(parser, suppress=False)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    def command(name: str, handler: Handler, help_text: str) -> argparse.ArgumentParser:
        child = sub.add_parser(name, help=help_text, description=help_text)
        _common(child, suppress=True)
        if name != "submit":  # a file says its jobs' kinds
            child.add_argument("--kind", type=_kind, default=None,
                               help="TensorFlowJob or TFJob: which kind's job a name means, when both kinds "
                                    "have one by that name (default: either)")
        child.set_defaults(handler=handler)
        return child

    submit = command("submit", cmd_submit, "create a TensorFlowJob or TFJob from a file (after the ConfigMaps, Secrets "
                     "and PersistentVolumeClaims beside it); optionally follow it to the end")
    submit.add_argument("-f", "--filename", required=True, help="the job's YAML/JSON file (- for stdin)")
    submit.add_argument("--set", action="append", default=[], metavar="PATH=VALUE",
                        help="change a field, relative to spec (worker.replicas=8); repeatable")
    submit.add_argument("--name", help="the job's name (instead of the file's)")
    submit.add_argument("--wait", action="store_true",
                        help="wait until it succeeds (exit 0), fails (1) or times out (2)")
    submit.add_argument("--logs", action="store_true", help="follow the logs of all its pods until it ends")
    submit.add_argument("--timeout", type=_duration, default=None, help="with --wait/--logs: give up after this long")
    submit.add_argument("--dry-run", action="store_true",
                        help="print what would be created (the objects beside the job too), create nothing")
    _log_flags(submit)

    get = command("get", cmd_get, "list TensorFlowJobs and TFJobs, or show some")
    get.add_argument("names", nargs="*", metavar="JOB")
    get.add_argument("-o", "--output", choices=("wide", "yaml", "json", "name"), help="output format")
    get.add_argument("-A", "--all-namespaces", action="store_true", help="list the jobs of every namespace")
    get.add_argument("-l", "--selector", help="label selector")

    show = command("describe", cmd_describe, "a job's roles, pods, problems and events")
    show.add_argument("name", metavar="JOB")

    logs = command("logs", cmd_logs, "the logs of every pod of a job, prefixed with its slot")
    logs.add_argument("name", metavar="JOB")
    logs.add_argument("-f", "--follow", action="store_true", help="follow the pods until the job has finished")
    logs.add_argument("--role", choices=("chief", "ps", "worker", "evaluator"), help="only this role's pods")
    logs.add_argument("--index", type=int, help="only the pods of this index")
    logs.add_argument("-c", "--container", help="this container (default: the TensorFlow one)")
    logs.add_argument("--all-containers", action="store_true", help="every container of each pod")
    logs.add_argument("--since", type=_duration, help="only newer lines, e.g. 5m (pods there at the start)")
    logs.add_argument("--tail", type=int, help="the last N lines of each pod there at the start")
    _log_flags(logs)

    wait = command("wait", cmd_wait, "wait for a job's state; exit 0 reached, 1 ended otherwise, 2 timed out")
    wait.add_argument("name", metavar="JOB")
    wait.add_argument("--for", dest="state", type=_state, default="Succeeded",
                      help=f"the state to wait for: {', '.join(STATES)} (default Succeeded)")
    wait.add_argument("--timeout", type=_duration, default=None, help="give up after this long (default: never)")

    scale = command("scale", cmd_scale, "set the replicas of one role of a job")
    scale.add_argument("name", metavar="JOB")
    scale.add_argument("--replicas", type=int, required=True, help="the new number of replicas")
    scale.add_argument("--role", default="worker", choices=("chief", "ps", "worker", "evaluator"),
                       help="the role to scale (default worker)")

    delete = command("delete", cmd_delete, "delete jobs (their pods and Service go with them)")
    delete.add_argument("names", nargs="+", metavar="JOB")
    delete.add_argument("--wait", type=_bool, nargs="?", const=True, default=True,
                        help="wait until each job is gone (default true; --wait=false to return at once)")
    delete.add_argument("--timeout", type=_duration, default=60.0, help="with --wait: give up after this long")
    delete.add_argument("--ignore-not-found", action="store_true", help="a missing job is not an error")
    return parser


def _quiet_libraries() -> None:
    """Warnings of the libraries (a full connection pool, a retried connection) go to stderr, never
    into the data on stdout, and only when they matter."""
    logging.getLogger("urllib3").setLevel(logging.ERROR)


def main(argv: Sequence[str] | None = None, console: Console | None = None) -> int:
    """Run one command; the exit status."""
    console = console or Console()
    try:
        args = build_parser().parse_args(argv)
    except UsageError as error:
        console.error(f"error: {error}")
        return EXIT_ERROR
    if not getattr(args, "handler", None):
        console.error(build_parser().format_help().rstrip())
        return EXIT_ERROR
    _quiet_libraries()
    client: TfJobClient | None = None
    try:
        client = TfJobClient.connect(args.kubeconfig, args.context, args.namespace)
        return int(args.handler(client, args, console))
    except JobNotFound as error:
        console.error(f"Error from server (NotFound): {error}")
    except (AmbiguousJob, KindNotServed) as error:
        console.error(f"error: {error}")
    except ClusterApiError as error:
        if error.status:
            console.error(f"Error from server ({error.reason}): {error.message or error}")
        else:
            console.error(f"error: cannot reach the API server: {error}")
    except (CredentialsError, InputError, ValueError, TimeoutError) as error:
        console.error(f"error: {error}")
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # the reader went away (`| head`): stop quietly
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    finally:
        if client is not None:
            client.close()
    return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
