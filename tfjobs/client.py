"""`TfJobClient`: submit, watch, read and manage TensorFlowJobs from Python (a notebook, a pipeline step).

    from tfjobs import TfJobClient

    client = TfJobClient.connect()                      # kubeconfig (or in-cluster), its namespace
    job = client.create_from_file("mnist.yaml", overrides={"worker.replicas": 4})
    client.wait_for(job["metadata"]["name"], "Running", timeout=600)
    for line in client.logs("mnist", follow=True):      # every pod, as it writes, until the end
        print(f"[{line.prefix}] {line.text}")
    client.wait_for("mnist")                            # Succeeded, else JobFailed / WaitTimeout

`create_from_file` and `create_from_yaml` create the ConfigMaps, Secrets and PersistentVolumeClaims
of the file before its job (`apply_companion`), as `kubectl apply` would (InputError for another
kind). Everything goes through the official `kubernetes` client's public API (`tfjobs.connection`),
on raw JSON dicts: what `get` returns is exactly what `kubectl get -o json` shows. Waiting and
following use watches (`tfjobs.watching`), never a polling loop. Errors: `JobNotFound` (also when a job is deleted
while waited on), `JobFailed` (it ended without reaching what was waited for, or a failure
condition matched), `WaitTimeout` (a `TimeoutError`); `KindNotServed` (a `ClusterApiError`) when the cluster does
not serve the kind asked for, saying why from its CRD (not installed, NamesAccepted=False, ...: `tfjobs.served`);
anything else the API refuses is a `tfjobs.ClusterApiError`. `kubectl tfjob` is built on this class.
"""

from __future__ import annotations

import builtins
import copy
import functools
import math
import os
import re
import threading
import time
from collections.abc import Callable, Generator, Iterable, Mapping
from typing import Any, NoReturn

from tfconfig import ROLES
from tfjob_api import conditions
from tfjob_api.documents import describe
from tfjobs import dispatch
from tfjobs.connection import Connection, api_path
from tfjobs.durations import parse_duration, parse_time
from tfjobs.errors import ClusterApiError, KindNotServed
from tfjobs.jobview import FINISHED_STATES, job_state, roles, state_detail
from tfjobs.kinds import KINDS, JobKind, kind_named, kind_of
from tfjobs.kubeconfig import default_namespace, kubeconfig_paths
from tfjobs.logs import ErrorSink, LogFollower, LogLine, pod_selector, read_logs
from tfjobs.manifests import (
    Manifest,
    apply_overrides,
    companion_plural,
    jobs_from_documents,
    load_manifest,
    manifest_from_yaml,
)
from tfjobs.progress import Progress, progress
from tfjobs.selectors import Conditions
from tfjobs.served import not_served
from tfjobs.training import Training, training
from tfjobs.watching import JobWatch

__all__ = ["STATES", "AmbiguousJob", "JobFailed", "JobNotFound", "KindNotServed", "TfJobClient", "TfJobError",
           "WaitTimeout"]

STATES = tuple(reversed(conditions.STATE_PRECEDENCE))
"""The states a job can be in (`status.state`: Created, ..., Running, ..., Failed), which
`wait_for` can wait for: the operator's own list."""


class TfJobError(Exception):
    """Base class of this module's errors."""


class JobNotFound(TfJobError, LookupError):
    """No job of that name in the namespace (or it was deleted while waited on)."""


class AmbiguousJob(TfJobError, LookupError):
    """A TensorFlowJob and a TFJob have that name: say which (`kind=`)."""


class JobFailed(TfJobError):
    """The job ended without reaching what was waited for, or a failure condition matched.
    `job` is the job as last seen, `state` its state, `reason` why the wait failed."""

    def __init__(self, message: str, job: Mapping[str, Any], reason: str = "") -> None:
        super().__init__(message)
        self.job = job
        self.state = job_state(job)
        self.reason = reason


class WaitTimeout(TfJobError, TimeoutError):
    """The wait timed out; `job` is the job as last seen."""

    def __init__(self, message: str, job: Mapping[str, Any] | None) -> None:
        super().__init__(message)
        self.job = job


def _seconds(value: float | str | None) -> float | None:
    return parse_duration(value) if isinstance(value, str) else value


KindName = str | JobKind | None
"""Which kind a method works on: `TensorFlowJob`, `TFJob` (any spelling kubectl accepts), or None:
whichever kind has a job of that name (AmbiguousJob when both do)."""


class TfJobClient:
    """TensorFlowJobs and TFJobs in one default namespace (every method takes `namespace=` to use
    another, and `kind=` where a name could be either kind's)."""

    def __init__(self, connection: Connection, namespace: str = "default") -> None:
        self.connection = connection
        self.namespace = namespace

    @classmethod
    def connect(cls, kubeconfig: str | None = None, context: str | None = None,
                namespace: str | None = None) -> TfJobClient:
        """A client as kubectl would be configured: the kubeconfig (`kubeconfig`, else $KUBECONFIG,
        else ~/.kube/config) and its context's namespace; in a pod without one, the pod's
        ServiceAccount and namespace."""
        paths = kubeconfig_paths(kubeconfig)
        if kubeconfig or paths:  # the files as of now ($KUBECONFIG may have changed since start)
            connection = Connection.from_kubeconfig(os.pathsep.join(map(str, paths)) or kubeconfig, context)
        else:
            connection = Connection.in_cluster()
        return cls(connection, namespace or default_namespace(kubeconfig, context))

    def close(self) -> None:
        self.connection.close()

    def __enter__(self) -> TfJobClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- paths ----------------------------------------------------------------------------------

    def _ns(self, namespace: str | None) -> str:
        return namespace or self.namespace

    def path(self, name: str | None = None, *, namespace: str | None = None, all_namespaces: bool = False,
             kind: JobKind) -> str:
        """The REST path of the job collection (or of one job) of a kind."""
        return kind.path(None if all_namespaces else self._ns(namespace), name)

    def _raise(self, error: ClusterApiError, kind: JobKind) -> NoReturn:
        """Raise `error` — or, when it is the `404 page not found` of a kind the cluster does not
        serve, the `KindNotServed` that says why (the kind's CRD read now)."""
        if error.no_such_path:
            raise not_served(self.connection, kind) from error
        raise error

    # --- create ---------------------------------------------------------------------------------

    def job_body(self, job: Mapping[str, Any], *, namespace: str | None = None, name: str | None = None,
                 overrides: Iterable[str] | Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The job (TensorFlowJob or TFJob) exactly as `create` sends it (`submit --dry-run` prints it);
        nothing is sent."""
        body = apply_overrides(jobs_from_documents([job], "job")[0], overrides or ())
        metadata = body.setdefault("metadata", {})
        if name:
            metadata["name"] = name
            metadata.pop("generateName", None)
        if not metadata.get("name") and not metadata.get("generateName"):
            raise ValueError("the job needs metadata.name (or metadata.generateName, or name=)")
        metadata["namespace"] = namespace or metadata.get("namespace") or self.namespace
        return body

    def create(self, job: Mapping[str, Any], *, namespace: str | None = None, name: str | None = None,
               overrides: Iterable[str] | Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Create a job (a TensorFlowJob or a TFJob) from a dict; return it as the server stored it.

        `overrides` are `--set`-style changes (`{"worker.replicas": 8}` or `["worker.replicas=8"]`,
        paths relative to `spec`). `name` replaces the manifest's name (a manifest may also use
        `metadata.generateName`). The namespace is `namespace`, else the manifest's, else the client's.
        """
        body = self.job_body(job, namespace=namespace, name=name, overrides=overrides)
        job_kind = kind_of(body)
        try:
            return self.connection.create(job_kind.path(body["metadata"]["namespace"]), body)
        except ClusterApiError as error:
            self._raise(error, job_kind)

    def companion_body(self, document: Mapping[str, Any], *, namespace: str | None = None,
                       default_namespace: str | None = None) -> dict[str, Any]:
        """A companion (a ConfigMap, Secret or PersistentVolumeClaim that travels with a job) as
        `apply_companion` sends it. Its namespace is `namespace`, else its manifest's, else
        `default_namespace` (the one its job goes to), else the client's."""
        body = copy.deepcopy(dict(document))
        metadata = body.setdefault("metadata", {})
        companion_plural(body, describe(body, 1))
        if not metadata.get("name"):
            raise ValueError(f"a {body.get('kind')} beside a job needs metadata.name")
        metadata["namespace"] = namespace or metadata.get("namespace") or default_namespace or self.namespace
        return body

    def apply_companion(self, document: Mapping[str, Any], *, namespace: str | None = None,
                        default_namespace: str | None = None) -> tuple[dict[str, Any], str]:
        """Create a ConfigMap, Secret or PersistentVolumeClaim that travels with a job (namespace as
        `companion_body`), as `kubectl apply` would; return it as stored and what was done:
        `created`; `replaced` when it existed (it is replaced by this version, so a resubmitted,
        edited training program is the one the pods mount); `kept` for an existing
        PersistentVolumeClaim, left as it is (its spec cannot change)."""
        body = self.companion_body(document, namespace=namespace, default_namespace=default_namespace)
        metadata = body["metadata"]
        plural = companion_plural(body, describe(body, 1))
        try:
            return self.connection.create(api_path("", "v1", plural, metadata["namespace"]), body), "created"
        except ClusterApiError as error:
            if not error.already_exists:
                raise
        path = api_path("", "v1", plural, metadata["namespace"], metadata["name"])
        current = self.connection.get(path)
        if body["kind"] == "PersistentVolumeClaim":
            return current, "kept"
        metadata["resourceVersion"] = current["metadata"]["resourceVersion"]
        return self.connection.replace(path, body), "replaced"

    def create_from_yaml(self, text: str, **options: Any) -> dict[str, Any]:
        """`create` from YAML (or JSON) text holding exactly one TensorFlowJob, after the
        ConfigMaps, Secrets and PersistentVolumeClaims beside it (`apply_companion`)."""
        return self._create_manifest(manifest_from_yaml(text), "the YAML", **options)

    def create_from_file(self, path: str, **options: Any) -> dict[str, Any]:
        """`create` from a YAML/JSON file (`-`: standard input) holding exactly one TensorFlowJob,
        after the ConfigMaps, Secrets and PersistentVolumeClaims beside it (`apply_companion`)."""
        return self._create_manifest(load_manifest(str(path)), str(path), **options)

    def _create_manifest(self, manifest: Manifest, source: str, **options: Any) -> dict[str, Any]:
        job = self._single(manifest.jobs, source)
        target = self.job_body(job, **options)["metadata"]["namespace"]  # checked before anything is created
        companions = [self.companion_body(companion, namespace=options.get("namespace"), default_namespace=target)
                      for companion in manifest.companions]
        for companion in companions:
            self.apply_companion(companion)
        return self.create(job, **options)

    @staticmethod
    def _single(jobs: list[dict[str, Any]], source: str) -> dict[str, Any]:
        if len(jobs) != 1:
            raise ValueError(f"{source} holds {len(jobs)} jobs; create them one by one")
        return jobs[0]

    # --- read -----------------------------------------------------------------------------------

    def find(self, name: str, *, namespace: str | None = None, kind: KindName = None) -> tuple[JobKind, dict[str, Any]]:
        """The job named `name` and its kind. Without `kind`, each kind is looked up: JobNotFound when
        none has it, AmbiguousJob when both do. A kind the cluster does not serve (or this user may
        not read) has no job then; when no kind can be read, or `kind` is one that cannot, its error
        is raised (KindNotServed for a kind not served)."""
        ns = self._ns(namespace)
        wanted = _kind(kind)
        found: list[tuple[JobKind, dict[str, Any]]] = []
        refused: list[ClusterApiError] = []
        unserved: list[tuple[JobKind, ClusterApiError]] = []
        candidates = (wanted,) if wanted is not None else KINDS
        for candidate in candidates:
            try:
                found.append((candidate, self.connection.get(candidate.path(ns, name))))
            except ClusterApiError as error:
                if error.no_such_path:
                    unserved.append((candidate, error))
                elif not error.not_found:
                    refused.append(error)
        if len(found) > 1:
            raise AmbiguousJob(f'a TensorFlowJob and a TFJob are both named "{name}" in namespace {ns}; '
                               f"say which (kind=, --kind)")
        if found:
            return found[0]
        if len(refused) + len(unserved) == len(candidates):  # no kind could be read
            if refused:
                raise refused[0]
            self._raise(unserved[0][1], unserved[0][0])
        what = wanted.resource if wanted is not None else " or ".join(k.resource for k in KINDS)
        raise JobNotFound(f'{what} "{name}" not found in namespace {ns}')

    def get(self, name: str, *, namespace: str | None = None, kind: KindName = None) -> dict[str, Any]:
        """The job, as stored; JobNotFound when there is none."""
        return self.find(name, namespace=namespace, kind=kind)[1]

    def list(self, *, namespace: str | None = None, all_namespaces: bool = False,
             label_selector: str | None = None, kind: KindName = None) -> list[dict[str, Any]]:
        """The jobs of the namespace (or of every namespace), by namespace, name and kind: both kinds
        unless `kind` says one (a kind the cluster does not serve, or this user may not list, is left
        out; when no kind can be listed, its error is raised: KindNotServed for a kind not served)."""
        wanted = _kind(kind)
        items: list[dict[str, Any]] = []
        refused: list[tuple[JobKind, ClusterApiError]] = []
        for candidate in (wanted,) if wanted is not None else KINDS:
            try:
                answer = self.connection.list(self.path(namespace=namespace, all_namespaces=all_namespaces,
                                                        kind=candidate), label_selector=label_selector)
            except ClusterApiError as error:
                if wanted is not None or not (error.not_found or error.status == 403):
                    self._raise(error, candidate)
                refused.append((candidate, error))
                continue
            for item in answer.get("items") or []:  # a List's items carry no kind
                item.setdefault("apiVersion", candidate.api_version)
                item.setdefault("kind", candidate.name)
                items.append(item)
        if len(refused) == len(KINDS):  # a refusal first, else why the first kind is not served
            refused_kind, refusal = next(((k, e) for k, e in refused if not e.no_such_path), refused[0])
            self._raise(refusal, refused_kind)
        return sorted(items, key=lambda j: (j["metadata"].get("namespace", ""), j["metadata"]["name"], j["kind"]))

    def training(self, name: str, *, namespace: str | None = None, kind: KindName = None) -> Training | None:
        """The job's training progress (`status.progress`, with `spec.progress`): percent, step, epoch,
        metrics and the time left now; None while it has reported none."""
        return training(self.get(name, namespace=namespace, kind=kind))

    def state(self, name: str, *, namespace: str | None = None, kind: KindName = None) -> str:
        """The job's state: Created, Running, Restarting, Succeeded, Failed, Suspended ('' if unseen)."""
        found, job = self.find(name, namespace=namespace, kind=kind)
        return job_state(found.view(job))

    def pods(self, name: str, *, namespace: str | None = None, role: str | None = None,
             index: int | None = None) -> builtins.list[dict[str, Any]]:
        """The job's pods (optionally of one role / index), by name."""
        answer = self.connection.list(api_path("", "v1", "pods", self._ns(namespace)),
                                label_selector=pod_selector(name, role, index))
        return sorted(answer.get("items") or [], key=lambda p: p["metadata"]["name"])

    def workload(self, job: Mapping[str, Any]) -> dict[str, Any] | None:
        """The job's Kueue Workload (by Kueue's `job-uid` label), or None: not queued, or Kueue's API
        not served or not readable with these credentials."""
        meta = job.get("metadata") or {}
        path = api_path(*dispatch.WORKLOADS, meta.get("namespace"))
        try:
            found = self.connection.list(path, label_selector=dispatch.workload_selector(job))
        except ClusterApiError as error:
            if error.status in (403, 404):
                return None
            raise
        items = found.get("items") or []
        return dict(items[0]) if items else None

    def placement(self, job: Mapping[str, Any]) -> str:
        """The worker cluster a job MultiKueue dispatched runs on, as its Workload says ('' while it
        is not placed, or when Kueue's API is not served here)."""
        workload = self.workload(job)
        return dispatch.placement([workload] if workload is not None else [])

    def events(self, name: str, *, namespace: str | None = None, pods: Iterable[Mapping[str, Any]] | None = None,
               kind: KindName = None) -> builtins.list[dict[str, Any]]:
        """Events of the job and of its pods (`pods`, else the current ones), oldest first."""
        ns = self._ns(namespace)
        job_kind = _kind(kind) or self.find(name, namespace=ns)[0]
        path = api_path("", "v1", "events", ns)
        found = self.connection.list(path, field_selector=f"involvedObject.kind={job_kind.name},"
                                                          f"involvedObject.name={name}")
        events = list(found.get("items") or [])
        names = {p["metadata"]["name"] for p in (pods if pods is not None else self.pods(name, namespace=ns))}
        slot = re.compile(rf"^{re.escape(name)}-({'|'.join(ROLES)})-\d+$")  # pods gone by now too
        pod_events = self.connection.list(path, field_selector="involvedObject.kind=Pod").get("items") or []
        events += [e for e in pod_events if (e.get("involvedObject") or {}).get("name") in names
                   or slot.match((e.get("involvedObject") or {}).get("name") or "")]
        return sorted(events, key=event_time)

    # --- wait -----------------------------------------------------------------------------------

    def wait_for(self, name: str, state: str | Iterable[str] = conditions.SUCCEEDED, *,
                 success: str | None = None, failure: str | None = None, timeout: float | str | None = None,
                 on_progress: Callable[[Progress], None] | None = None, progress_interval: float = 1.0,
                 namespace: str | None = None, kind: KindName = None) -> dict[str, Any]:
        """Wait until the job is in `state` (one or several of STATES); return the job then.

        With `success` (an Argo-style condition such as `status.state == Succeeded`, see
        `tfjobs.selectors`) that condition is the goal instead; `failure` ends the wait with
        JobFailed as soon as it matches. In any case a job that finished (Succeeded or Failed)
        without reaching the goal raises JobFailed, a deleted job JobNotFound, and after `timeout`
        (seconds, or a duration like "10m") WaitTimeout. `on_progress` is called with a `Progress`
        whenever the job or its pods change, and at least every `progress_interval` seconds.
        """
        wanted = (state,) if isinstance(state, str) else tuple(state)
        unknown = [s for s in wanted if s not in STATES]
        if unknown or not wanted:
            raise ValueError(f"unknown state {', '.join(unknown) or '(none)'}; choose from {', '.join(STATES)}")
        checks = Conditions.parse(success, failure)
        limit = _seconds(timeout)
        ns = self._ns(namespace)
        job_kind, job = self.find(name, namespace=ns, kind=kind)  # fails fast: not found, forbidden, no CRD
        what = f'{job_kind.name.lower()} "{name}"'
        if on_progress is not None:
            self.pods(name, namespace=ns)  # and when the pods cannot be read
        started = time.monotonic()
        last: Progress | None = None
        last_shown = 0.0
        with JobWatch(self.connection, ns, name, pods=on_progress is not None, kind=job_kind).start() as watch:
            while True:
                seen = watch.job()
                if seen is None:
                    raise JobNotFound(f'{job_kind.resource} "{name}" was deleted while waiting for it')
                job = seen
                model = job_kind.view(job)
                waited = time.monotonic() - started
                if on_progress is not None:
                    current = progress(model, watch.pods(), waited)
                    if not current.same_as(last) or waited - last_shown >= progress_interval:
                        on_progress(current)
                        last, last_shown = current, waited
                verdict = _verdict(job, model, wanted, checks, success is not None)
                if verdict == "reached":
                    return job
                if verdict is not None:
                    raise JobFailed(f"{what} {verdict}", model, verdict)
                if limit is not None and waited >= limit:
                    goal = success or " or ".join(wanted)
                    raise WaitTimeout(f"timed out after {limit:g}s waiting for {what} to be "
                                      f'{goal} (it is {job_state(model) or "not started"})', job)
                version = watch.version
                pause = None if limit is None else max(limit - waited, 0.0)
                if on_progress is not None:
                    pause = progress_interval if pause is None else min(pause, progress_interval)
                watch.wait(functools.partial(_changed_since, watch, version), pause)

    # --- logs -----------------------------------------------------------------------------------

    def logs(self, name: str, *, follow: bool = False, role: str | None = None, index: int | None = None,
             container: str | None = None, all_containers: bool = False, since: float | str | None = None,
             tail: int | None = None, on_error: ErrorSink | None = None, timeout: float | str | None = None,
             namespace: str | None = None, kind: KindName = None) -> Generator[LogLine, None, None]:
        """The lines of the job's pods (the TensorFlow container unless `container` / `all_containers`),
        each with its slot as `prefix` (`worker-1`).

        Without `follow`: what is there now, merged in time order. With `follow`: lines as they are
        written, pods followed as they come and go (a recreated pod continues under its slot's
        prefix), until the job has finished and every pod's log is read; closing the iterator stops
        early; with `timeout` (seconds, or "10m") following stops after that long. `since` (seconds
        or "5m") and `tail` (lines) apply to the pods there at the start.
        `on_error` receives a message for a log that cannot be read (e.g. a container not started).
        """
        ns = self._ns(namespace)
        job_kind = self.find(name, namespace=ns, kind=kind)[0]
        pods = self.pods(name, namespace=ns, role=role, index=index)  # fails fast when pods cannot be read
        since_seconds = None if since is None else max(1, math.ceil(_seconds(since) or 0))
        if not follow:
            yield from read_logs(self.connection, ns, pods, container=container, all_containers=all_containers,
                                 since_seconds=since_seconds, tail_lines=tail, on_error=on_error)
            return
        with LogFollower(self.connection, ns, name, role=role, index=index, container=container,
                         all_containers=all_containers, since_seconds=since_seconds, tail_lines=tail,
                         on_error=on_error, kind=job_kind) as follower:
            # With `timeout`, following stops then, whatever the job does (the iteration just ends).
            limit = None if timeout is None else _seconds(timeout)
            timer = threading.Timer(limit, follower.close) if limit is not None else None
            if timer is not None:
                timer.daemon = True
                timer.start()
            try:
                yield from follower
            finally:
                if timer is not None:
                    timer.cancel()

    # --- change ---------------------------------------------------------------------------------

    def scale(self, name: str, replicas: int, *, role: str = "worker", namespace: str | None = None,
              kind: KindName = None) -> dict[str, Any]:
        """Set the replicas of one role (default: worker); return the job as stored."""
        if replicas < 0:
            raise ValueError("replicas must be 0 or more")
        job_kind, job = self.find(name, namespace=namespace, kind=kind)
        have = roles(job_kind.view(job))
        if role not in have:
            raise ValueError(f'{job_kind.name.lower()} "{name}" has no {role} role to scale '
                             f'(it has: {", ".join(have) or "none"})')
        return self.connection.patch(self.path(name, namespace=namespace, kind=job_kind),
                                     job_kind.scale_patch(job, role, replicas))

    def delete(self, name: str, *, namespace: str | None = None, wait: bool = False,
               timeout: float | str | None = 60.0, kind: KindName = None) -> None:
        """Delete the job (its pods and Service go by garbage collection); with `wait`, return once
        it is gone (WaitTimeout after `timeout`)."""
        ns = self._ns(namespace)
        job_kind = _kind(kind) or self.find(name, namespace=ns)[0]
        try:
            self.connection.delete(job_kind.path(ns, name), propagation="Background")
        except ClusterApiError as error:
            if error.no_such_path:
                self._raise(error, job_kind)
            if error.not_found:
                raise JobNotFound(f'{job_kind.resource} "{name}" not found in namespace {ns}') from error
            raise
        if wait:
            limit = _seconds(timeout)
            with JobWatch(self.connection, ns, name, pods=False, kind=job_kind).start() as watch:
                if watch.wait(lambda: watch.job() is None, limit) is None:
                    raise WaitTimeout(f'timed out after {limit:g}s waiting for {job_kind.name.lower()} "{name}" '
                                      "to be deleted", watch.job())


def _changed_since(watch: JobWatch, version: int) -> bool:
    """Whether the watched job changed since `version` (`JobWatch.version`)."""
    return watch.version != version


def _kind(kind: KindName) -> JobKind | None:
    return kind_named(kind) if isinstance(kind, str) else kind


def _verdict(job: Mapping[str, Any], model: Mapping[str, Any], wanted: tuple[str, ...], checks: Conditions,
             by_condition: bool) -> str | None:
    """'reached', a reason the wait failed, or None to keep waiting. Argo-style conditions read the
    job as stored; states read it as the job model (a TFJob's state from Kubeflow's conditions)."""
    failed = checks.failed(job)
    if failed is not None:
        return f"matched the failure condition {failed}"
    if (checks.succeeded(job) if by_condition else job_state(model) in wanted):
        return "reached"
    current = job_state(model)
    if current in FINISHED_STATES:
        detail = state_detail(model)
        return f"ended {current}" + (f" ({detail})" if detail else "")
    return None


def event_time(event: Mapping[str, Any]) -> str:
    """When an event last happened (core/v1 or events.k8s.io fields), for sorting; '' if unknown."""
    series = event.get("series") or {}
    for value in (series.get("lastObservedTime"), event.get("lastTimestamp"), event.get("eventTime"),
                  event.get("firstTimestamp"), (event.get("metadata") or {}).get("creationTimestamp")):
        moment = parse_time(value)
        if moment is not None:
            return moment.isoformat()
    return ""
