"""The `tfjob-operator` command: `run` the controller, `render` what it would create, `validate` jobs,
`convert` Kubeflow TFJobs to TensorFlowJobs.

`render` and `validate` are offline and share the controller's own planner and validation
(`controller.job.preview`), so their output is exactly what the running controller would do with the
same job -- with `render --profiles FILE --network-policy on --gang-scheduler ...`, also under the
operator's start-up profiles, network policy default and gang scheduler (docs/production.md).
`render` and `validate` take Kubeflow TFJobs too (by their kind), and `convert` prints a TFJob as the
equivalent TensorFlowJob with notes on what does not carry over (docs/kubeflow.md). The other
objects of a file (a ConfigMap with the training program, ...: `tfjob_api.documents.is_companion`)
are noted on stderr and not checked; `convert` copies them unchanged, in the file's order, so its
output can be applied (docs/operations.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, NamedTuple

import yaml

from controller.job.gang_schedulers import SCHEDULERS, gang_scheduler
from controller.job.kinds import kind_of_document
from controller.job.preview import Settings, preview
from controller.job.profile_file import ProfileError
from controller.options import DEFAULTS
from controller.process.profiles import load_profiles
from tfjob_api.documents import InputError, describe, is_companion, load_documents


class Checked(NamedTuple):
    """One document of a file: its label in messages, the document, and its problems (none for a
    companion, which is not checked)."""

    label: str
    doc: Any
    problems: list[Any]
    companion: bool


# What `validate` and `render` say of a document that is not a job (tfjob_api.documents.is_companion).
NOT_CHECKED = "not a job, not checked (kubectl apply creates it as written)"


def _check_file(filename: str, companion_note: str) -> list[Checked] | None:
    """Every document of a file with its label and problems; None (after one clear line) when the
    file cannot be read as documents at all or holds no job. Problems are printed as they are
    found; a companion (a ConfigMap, Secret, ... beside the jobs) is not checked, and
    `companion_note` is printed for it instead."""
    try:
        documents = load_documents(filename)
    except InputError as error:
        print(f"error: {error}", file=sys.stderr)
        return None
    checked = []
    for position, doc in enumerate(documents, start=1):
        label = describe(doc, position)
        if is_companion(doc):
            print(f"note: {label}: {companion_note}", file=sys.stderr)
            checked.append(Checked(label, doc, [], companion=True))
            continue
        problems = _validate_document(doc)
        for problem in problems:
            print(f"error: {label}: {problem}", file=sys.stderr)
        checked.append(Checked(label, doc, problems, companion=False))
    if all(item.companion for item in checked):
        print(f"error: {filename}: no job found (a TensorFlowJob, or a Kubeflow TFJob)", file=sys.stderr)
        return None
    return checked


def _validate_document(doc: Any) -> list[Any]:
    """A TensorFlowJob's problems, or a TFJob's (by its kind)."""
    return list(kind_of_document(doc).validate(doc))


def _render(args: argparse.Namespace) -> int:
    try:
        profiles = load_profiles(args.profiles)
    except ProfileError as error:
        print(f"error: profiles: {error}", file=sys.stderr)
        return 1
    checked = _check_file(args.filename, NOT_CHECKED)
    if checked is None or any(item.problems for item in checked):
        return 1
    settings = Settings(network_policy_default=args.network_policy == "on",
                        scheduler=gang_scheduler(args.gang_scheduler, args.gang_scheduler_name),
                        cluster_domain=args.cluster_domain, profiles=profiles)
    objects = _planned(checked, settings)
    if objects is None:
        return 1
    if args.output == "json":
        print(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}, indent=2))
    else:
        print(yaml.safe_dump_all(objects, sort_keys=False), end="")
    return 0


def _planned(checked: list[Checked], settings: Settings) -> list[dict[str, Any]] | None:
    """What the operator's planner creates for the (valid) jobs of a file under `settings`; None
    (after one line per job) when it would fail a job at once instead. A suspended job is shown as it
    is once resumed (noted on stderr)."""
    objects: list[dict[str, Any]] = []
    failed = False
    now = datetime.now(UTC)
    for item in checked:
        if item.companion:
            continue
        created = _preview(item, settings, now)
        if created is None:
            failed = True
            continue
        if kind_of_document(item.doc).model(item.doc)["spec"].get("suspend"):
            print(f"note: {item.label}: suspended; the operator creates these objects once it is resumed",
                  file=sys.stderr)
        objects.extend(created)
    return None if failed else objects


def _preview(item: Checked, settings: Settings, now: datetime) -> list[dict[str, Any]] | None:
    """The objects the operator creates for one valid job; None (after saying why) when its planner
    would fail the job at once."""
    result = preview(item.doc, kind_of_document(item.doc), settings, now)
    if result.failure is not None:
        print(f"error: {item.label}: the operator would fail it: {result.failure}", file=sys.stderr)
        return None
    return result.objects


def _validate(args: argparse.Namespace) -> int:
    """Each job's problems, and -- for a job without any -- whether the operator's planner, run as
    for `render`, would still fail it at once."""
    checked = _check_file(args.filename, NOT_CHECKED)
    if checked is None:
        return 1
    now = datetime.now(UTC)
    invalid = any(item.problems for item in checked)
    for item in checked:
        if item.companion or item.problems:
            continue
        if _preview(item, Settings(), now) is None:
            invalid = True
        else:
            print(f"{item.label}: valid")
    return 1 if invalid else 0


def _convert(args: argparse.Namespace) -> int:
    """Print each TFJob of the file as the equivalent TensorFlowJob, and every other object of the
    file (a ConfigMap, ...) unchanged, in the file's order; the notes go to stderr."""
    checked = _check_file(args.filename, "not a job, copied unchanged")
    if checked is None or any(item.problems for item in checked):
        return 1
    output = []
    for item in checked:
        if item.companion:
            output.append(item.doc)
            continue
        conversion = kind_of_document(item.doc).to_tensorflowjob(item.doc)
        if conversion is None:
            print(f"error: {item.label}: not a TFJob (kind {item.doc.get('kind')!r}); nothing to convert",
                  file=sys.stderr)
            return 1
        for note in conversion.notes:
            print(f"note: {item.label}: {note}", file=sys.stderr)
        output.append(conversion.job)
    if args.output == "json":
        print(json.dumps(output[0] if len(output) == 1 else {"apiVersion": "v1", "kind": "List", "items": output},
                         indent=2))
    else:
        print(yaml.safe_dump_all(output, sort_keys=False), end="")
    return 0


def _run(args: argparse.Namespace) -> int:
    from controller.process.app import run  # imported late: `render`/`validate` need no API client

    return run(args)


def _production_flags(command: argparse.ArgumentParser) -> None:
    """The flags `run` and `render` share, so a preview matches what the operator does."""
    command.add_argument("--network-policy", choices=["on", "off"], default=DEFAULTS.network_policy,
                         help="on: jobs get a NetworkPolicy unless spec.networkPolicy.enabled is false "
                         f"(default {DEFAULTS.network_policy})")
    command.add_argument("--gang-scheduler", choices=["none", *SCHEDULERS],
                         default=DEFAULTS.gang_scheduler,
                         help="a PodGroup per job, so all of its pods are placed together or none is: Volcano, "
                         "the scheduler-plugins coscheduler or Kubernetes' own (Workload API, 1.37+) "
                         f"(default {DEFAULTS.gang_scheduler})")
    command.add_argument("--gang-scheduler-name", default=DEFAULTS.gang_scheduler_name, metavar="NAME",
                         help="the schedulerName the pods ask for (default: volcano, scheduler-plugins-scheduler "
                         "or default-scheduler)")
    command.add_argument("--profiles", metavar="FILE", default=None,
                         help="start-up profiles: env vars and args by TensorFlow image (YAML; docs/production.md)")


def _run_flags(parser: argparse.ArgumentParser) -> None:
    """The flags of `run`, apart from `build_parser` so each stays readable: the API client, leader
    election, the endpoints, what the controller serves, the production flags `render` shares, logging."""
    parser.add_argument("--kubeconfig", help="kubeconfig file (out of cluster); default: in-cluster config")
    parser.add_argument("--context", help="kubeconfig context")
    parser.add_argument("--namespace", action="append", default=[], help="watch only this namespace (repeatable)")
    parser.add_argument("--workers", type=int, default=DEFAULTS.workers,
                        help=f"reconcile worker threads (default {DEFAULTS.workers})")
    parser.add_argument("--qps", type=float, default=500.0, help="client-side API QPS limit (default 500)")
    parser.add_argument("--burst", type=int, default=1000, help="client-side API burst (default 1000)")
    parser.add_argument("--leader-elect", action="store_true", help="use a Lease so only one replica reconciles")
    parser.add_argument("--leader-election-namespace", default="",
                        help="namespace of the Lease (default: $POD_NAMESPACE, else the pod's own namespace)")
    parser.add_argument("--leader-election-id", default="tfjob-operator",
                        help="name of the Lease (default tfjob-operator)")
    parser.add_argument("--lease-duration", type=float, default=15.0,
                        help="seconds a standby waits after the last renewal before taking over (default 15)")
    parser.add_argument("--renew-deadline", type=float, default=10.0,
                        help="seconds the leader keeps retrying a renewal before it gives up and exits (default 10)")
    parser.add_argument("--retry-period", type=float, default=2.0,
                        help="seconds between attempts to acquire or renew the Lease (default 2)")
    parser.add_argument("--metrics-addr", default=":8080", help="Prometheus /metrics address ('0' to disable)")
    parser.add_argument("--health-addr", default=":8081", help="/healthz and /readyz address ('0' to disable)")
    parser.add_argument("--cluster-domain", default=DEFAULTS.cluster_domain,
                        help="cluster DNS domain appended to TF_CONFIG addresses")
    parser.add_argument("--resync", type=float, default=DEFAULTS.resync,
                        help="informer resync period in seconds (0: off)")
    parser.add_argument("--kueue", choices=["auto", "on", "off"], default=DEFAULTS.kueue,
                        help="queue jobs labelled kueue.x-k8s.io/queue-name through Kueue "
                        "(auto: when its API is served)")
    parser.add_argument("--kueue-tfjob", choices=["auto", "operator", "kueue"], default=DEFAULTS.kueue_tfjob,
                        help="who makes the Workloads of queued Kubeflow TFJobs: this operator, or Kueue's own "
                        "kubeflow.org/tfjob integration (auto: by Kueue's Configuration in "
                        "kueue-system/kueue-manager-config; the operator when that integration is off)")
    parser.add_argument("--kubeflow-tfjob", choices=["auto", "on", "off"], default=DEFAULTS.kubeflow_tfjob,
                        help="serve Kubeflow's TFJob kind too (auto: when this project's TFJob CRD is served; "
                        "off: read and write no TFJob)")
    parser.add_argument("--kubeflow-tfjob-without-managed-by", choices=["serve", "leave"],
                        default=DEFAULTS.kubeflow_tfjob_without_managed_by,
                        help="TFJobs whose runPolicy.managedBy is unset: serve them (default), or leave them to "
                        "Kubeflow's training operator while it still runs")
    _production_flags(parser)
    parser.add_argument("--log-format", choices=["json", "console"], default=None, help="default: console on a tty")
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tfjob-operator", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="run the controller")
    _run_flags(run)
    run.set_defaults(func=_run)

    render_help = ("print what the controller creates for a job (NetworkPolicy, PodGroup, Service, Pods), planned "
                   "by its own planner; a suspended job as it is once resumed, and under --gang-scheduler volcano "
                   "the pods it creates once Volcano admits the job's PodGroup")
    render = commands.add_parser("render", help=render_help, description=render_help)
    render.add_argument("-f", "--filename", required=True, help="job file (YAML or JSON; '-' for stdin)")
    render.add_argument("-o", "--output", choices=["yaml", "json"], default="yaml")
    render.add_argument("--cluster-domain", default=DEFAULTS.cluster_domain)
    _production_flags(render)
    render.set_defaults(func=_render)

    validate = commands.add_parser("validate", help="check job files as admission would, and more")
    validate.add_argument("-f", "--filename", required=True, help="job file (YAML or JSON; '-' for stdin)")
    validate.set_defaults(func=_validate)

    convert_command = commands.add_parser(
        "convert", help="print Kubeflow TFJobs as the equivalent TensorFlowJobs (notes on what differs: stderr)")
    convert_command.add_argument("-f", "--filename", required=True, help="TFJob file (YAML or JSON; '-' for stdin)")
    convert_command.add_argument("-o", "--output", choices=["yaml", "json"], default="yaml")
    convert_command.set_defaults(func=_convert)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    command: Callable[[argparse.Namespace], int] = args.func  # what `set_defaults` gave the subcommand
    try:
        return command(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
