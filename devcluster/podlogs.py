"""Container logs for the devcluster's simulated pods: KWOK serves them, this agent writes them.

A KWOK node has no containers, so `kubectl logs` has nothing to read unless something writes the
logs. KWOK 0.8.0 serves `/containerLogs/<namespace>/<pod>/<container>` from its kubelet-like server
(`--server-address`, HTTPS with `--tls-cert-file`), reading a file in CRI log format (`<RFC 3339
time> stdout F <line>`) named by a `Logs` object (`kwok.x-k8s.io/v1alpha1`, one per pod, same name
and namespace; `--enable-crds=Logs` makes KWOK watch them). Its `ClusterLogs` kind names one file
for many pods, so per-pod content needs a `Logs` object per pod, and a writer. That is this agent:
a small process of its own (`python -m devcluster.podlogs --dir CLUSTER_DIR`, a devcluster
component named `pod-logs`) that watches the bound pods and, for each container,

* writes a few lines when it starts: its node and image, the TF_CONFIG task (type and index) and
  the cluster sizes, and the task's own server address;
* appends the lines of the annotation `sim.tensorflowjob.kubeflow.org/log` ("line 1\\nline 2"),
  and, when the annotation is changed later, the lines it gained (so `kubectl logs -f` sees a
  growing log);
* appends an exit line when the container terminates (the exit-code stage);
* starts a new log on an in-place restart (the old one becomes the `--previous` log), and a fresh
  one for a new pod of the same name;

into `<cluster dir>/pod-logs/<namespace>/<pod>/<container>.log`, and creates the pod's `Logs`
object. Files go when the pod goes; the `Logs` objects go with their namespace.

What is written is decided by the pure `plan_pod` (unit-tested); `Agent` does the I/O. It
imports only the standard library and the devcluster's own JSON client, and starts in a fraction
of a second. KWOK's log reader treats every container as running (it has no runtime to ask), so
a follow stream never ends by itself: clients stop following when the pod ends.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import json
import shutil
import sys
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .api import ApiClient, ApiError, admin_client
from .state import ClusterState, Layout

LOG_ANNOTATION = "sim.tensorflowjob.kubeflow.org/log"
"""Pod annotation: the lines every container of the pod prints after its start lines."""

LOGS_API = "/apis/kwok.x-k8s.io/v1alpha1"
LOGS_CRD_NAME = "logs.kwok.x-k8s.io"
WATCH_SECONDS = 300
BACKOFF_SECONDS = (0.2, 0.5, 1.0, 2.0, 5.0)

# KWOK's Logs CRD (kwok.x-k8s.io_logs.yaml of v0.8.0), reduced to the fields this agent writes.
LOGS_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": LOGS_CRD_NAME},
    "spec": {
        "group": "kwok.x-k8s.io",
        "names": {"kind": "Logs", "listKind": "LogsList", "plural": "logs", "singular": "logs"},
        "scope": "Namespaced",
        "versions": [{
            "name": "v1alpha1", "served": True, "storage": True,
            "subresources": {"status": {}},
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "required": ["logs"], "properties": {"logs": {"type": "array", "items": {
                    "type": "object", "properties": {
                        "containers": {"type": "array", "items": {"type": "string"}},
                        "logsFile": {"type": "string"},
                        "previousLogsFile": {"type": "string"},
                        "follow": {"type": "boolean"},
                    }}}}},
                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            }}},
        }],
    },
}


# ----------------------------------------------------------------------------- what to write (pure)


@dataclass
class ContainerLog:
    """What has been written to the current log of one container."""

    restart_count: int = 0
    started: bool = False
    annotation: list[str] = field(default_factory=list)
    exited: bool = False
    last_time: str = ""


@dataclass
class PodLog:
    """What has been written for one pod (one UID)."""

    uid: str
    containers: dict[str, ContainerLog] = field(default_factory=dict)


@dataclass(frozen=True)
class Write:
    """Lines (time, text) to append to a container's log; `new_file` starts its log afresh, and
    `rotate` keeps the current log as the previous one first (an in-place restart)."""

    container: str
    lines: tuple[tuple[str, str], ...]
    new_file: bool = False
    rotate: bool = False


def annotation_lines(pod: dict[str, Any]) -> list[str]:
    """The lines of the pod's log annotation (a trailing newline does not make an empty line)."""
    text = ((pod.get("metadata") or {}).get("annotations") or {}).get(LOG_ANNOTATION) or ""
    return text.splitlines()


def _env(container: dict[str, Any], name: str) -> str | None:
    for variable in container.get("env") or []:
        if variable.get("name") == name:
            value = variable.get("value")
            return None if value is None else str(value)
    return None


def start_lines(pod: dict[str, Any], container: dict[str, Any]) -> list[str]:
    """What a container prints when it starts: where it runs, and its TF_CONFIG task."""
    metadata = pod.get("metadata") or {}
    node = (pod.get("spec") or {}).get("nodeName") or "?"
    lines = [f"simulated container {container.get('name')!r} of pod {metadata.get('name')} started on {node} "
             f"(image {container.get('image')})"]
    raw = _env(container, "TF_CONFIG")
    if not raw:
        return [*lines, "no TF_CONFIG in the environment"]
    try:
        config = json.loads(raw)
        task = config.get("task") or {}
        cluster = config.get("cluster") or {}
        role, index = task.get("type"), task.get("index")
    except (ValueError, AttributeError):
        return [*lines, f"TF_CONFIG is not valid JSON: {raw[:80]}"]
    sizes = ", ".join(f"{name} x{len(addresses)}" for name, addresses in sorted(cluster.items()))
    lines.append(f"TF_CONFIG task: {role} {index} (cluster: {sizes or 'empty'})")
    addresses = cluster.get(role) if isinstance(cluster, dict) else None
    if isinstance(addresses, list) and isinstance(index, int) and 0 <= index < len(addresses):
        lines.append(f"started TensorFlow server at {addresses[index]}")
    else:
        lines.append(f"{role} {index} runs outside the training cluster (no server)")
    return lines


def _later(moment: str | None, floor: str) -> str:
    """`moment` (RFC 3339, e.g. startedAt) but never before `floor`, so a log's times never go back."""
    moment = moment or floor
    return max(moment, floor) if floor else moment


def plan_pod(pod: dict[str, Any], record: PodLog | None, now: str) -> tuple[PodLog, list[Write]]:
    """What to append to each container's log for this version of the pod, and the new record.

    `now` is the current time (RFC 3339, UTC); start lines carry the container's startedAt, the exit
    line its finishedAt. A pod with another UID than the record's starts every log afresh.
    """
    metadata = pod.get("metadata") or {}
    uid = metadata.get("uid") or ""
    fresh = record is None or record.uid != uid
    record = PodLog(uid) if fresh or record is None else record
    statuses = {s.get("name"): s for s in (pod.get("status") or {}).get("containerStatuses") or []}
    wanted = annotation_lines(pod)
    writes: list[Write] = []
    for container in (pod.get("spec") or {}).get("containers") or []:
        name = container.get("name") or ""
        status = statuses.get(name) or {}
        state = status.get("state") or {}
        running, terminated = state.get("running"), state.get("terminated")
        restarts = int(status.get("restartCount") or 0)
        log = record.containers.get(name)
        new_file = fresh or log is None
        rotate = False
        if log is not None and restarts > log.restart_count:
            last = (status.get("lastState") or {}).get("terminated")
            if log.started and not log.exited and last:  # the old log ends with its exit line
                writes.append(Write(name, (_exit_line(name, last, now, log),)))
            log, rotate = None, True
        if log is None:
            log = ContainerLog(restart_count=restarts)
            record.containers[name] = log
        if not (running or terminated):
            if new_file or rotate:
                writes.append(Write(name, (), new_file=new_file, rotate=rotate))
            continue
        lines: list[tuple[str, str]] = []
        if not log.started:
            started = (running or terminated or {}).get("startedAt")
            log.last_time = _later(started, log.last_time)
            lines += [(log.last_time, text) for text in start_lines(pod, container)]
            log.started = True
        if not log.exited:
            extended = wanted[:len(log.annotation)] == log.annotation
            gained = wanted[len(log.annotation):] if extended else wanted  # edited: print it in full
            if gained:
                log.last_time = _later(now, log.last_time)
                lines += [(log.last_time, text) for text in gained]
            log.annotation = wanted
        if terminated and not log.exited:
            lines.append(_exit_line(name, terminated, now, log))
        if lines or new_file or rotate:
            writes.append(Write(name, tuple(lines), new_file=new_file, rotate=rotate))
    return record, writes


def _exit_line(name: str, terminated: dict[str, Any], now: str, log: ContainerLog) -> tuple[str, str]:
    log.last_time = _later(terminated.get("finishedAt") or now, log.last_time)
    log.exited = True
    code, reason = terminated.get("exitCode"), terminated.get("reason") or ""
    return log.last_time, f"simulated container {name!r} exited with code {code}" + (f" ({reason})" if reason else "")


def cri_line(when: str, text: str) -> str:
    """One line of a container log in the CRI format KWOK (like the kubelet) reads."""
    return f"{when} stdout F {text}\n"


def logs_object(namespace: str, name: str, folder: Path, containers: list[str]) -> dict[str, Any]:
    """The `Logs` object that points KWOK at one pod's log files."""
    return {
        "apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "Logs",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"logs": [{"containers": [c], "logsFile": str(folder / f"{c}.log"),
                           "previousLogsFile": str(folder / f"{c}.previous.log"), "follow": True}
                          for c in containers]},
    }


def _rfc3339_now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# ----------------------------------------------------------------------------- the agent (I/O)


def install_crd(api: ApiClient) -> None:
    """Create KWOK's Logs CRD unless it exists (KWOK's informer retries until it is served)."""
    try:
        api.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", LOGS_CRD)
    except ApiError as error:
        if error.status != 409:
            raise


class Agent:
    """Watches bound pods and keeps their log files and `Logs` objects current."""

    def __init__(self, api: ApiClient, root: Path) -> None:
        self.api = api
        self.root = root
        self.pods: dict[tuple[str, str], PodLog] = {}
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}  # the Logs spec written per pod

    def folder(self, namespace: str, name: str) -> Path:
        return self.root / namespace / name

    def run(self) -> None:
        """List, then watch from the list's resourceVersion; relist after any error, with back-off
        (a broken watch, an apiserver restart, etcd compaction, a file that could not be written)."""
        failures = 0
        while True:
            try:
                version = self.relist()
                failures = 0
                while version:
                    version = self.watch(version)
            except Exception as error:  # whatever broke (API, connection, a file): start over
                delay = BACKOFF_SECONDS[min(failures, len(BACKOFF_SECONDS) - 1)]
                failures += 1
                print(f"pod-logs: {error}; relisting in {delay}s", file=sys.stderr, flush=True)
                time.sleep(delay)

    def relist(self) -> str:
        pods: list[dict[str, Any]] = []
        token = ""
        while True:
            query = {"fieldSelector": "spec.nodeName!=", "limit": "500", **({"continue": token} if token else {})}
            page = self.api.get(f"/api/v1/pods?{urllib.parse.urlencode(query)}", timeout=60.0)
            pods += page.get("items") or []
            token = (page.get("metadata") or {}).get("continue") or ""
            if not token:
                break
        seen = set()
        for pod in pods:
            seen.add(_key(pod))
            self.handle("ADDED", pod)
        for key in set(self.pods) - seen:
            self.forget(*key)
        return str(page["metadata"]["resourceVersion"])

    def watch(self, version: str) -> str:
        """Apply events until the watch ends; the resourceVersion to resume from ('' to relist)."""
        query = {"watch": "true", "allowWatchBookmarks": "true", "resourceVersion": version,
                 "timeoutSeconds": str(WATCH_SECONDS), "fieldSelector": "spec.nodeName!="}
        for event in self.api.stream(f"/api/v1/pods?{urllib.parse.urlencode(query)}", timeout=WATCH_SECONDS + 30):
            kind, obj = event.get("type"), event.get("object") or {}
            if kind == "ERROR":
                return ""  # 410 Gone or the like: relist
            version = (obj.get("metadata") or {}).get("resourceVersion") or version
            if kind in ("ADDED", "MODIFIED", "DELETED"):
                self.handle(kind, obj)
        return version

    def handle(self, kind: str, pod: dict[str, Any]) -> None:
        namespace, name = _key(pod)
        if kind == "DELETED":
            if self.pods.get((namespace, name), PodLog("")).uid == (pod.get("metadata") or {}).get("uid"):
                self.forget(namespace, name)
            return
        record, writes = plan_pod(pod, self.pods.get((namespace, name)), _rfc3339_now())
        self.pods[(namespace, name)] = record
        folder = self.folder(namespace, name)
        for write in writes:
            self.apply(folder, write)
        if record.containers:  # the files exist: point KWOK at them (once per pod; retried when refused)
            self.ensure_object(namespace, name, folder, list(record.containers))

    def apply(self, folder: Path, write: Write) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        current = folder / f"{write.container}.log"
        previous = folder / f"{write.container}.previous.log"
        text = "".join(cri_line(when, line) for when, line in write.lines)
        if write.rotate and current.exists():
            current.replace(previous)
        if write.new_file:
            previous.unlink(missing_ok=True)
        if write.new_file or write.rotate:
            # A new file (not a truncated one): a reader still following the old log keeps its file.
            staged = folder / f".{write.container}.log.new"
            staged.write_text(text)
            staged.replace(current)
        elif text:
            with current.open("a") as out:
                out.write(text)

    def ensure_object(self, namespace: str, name: str, folder: Path, containers: list[str]) -> None:
        wanted = logs_object(namespace, name, folder, containers)
        if self.objects.get((namespace, name)) == wanted["spec"]:
            return
        path = f"{LOGS_API}/namespaces/{namespace}/logs"
        try:
            self.api.post(path, wanted)
        except ApiError as error:
            if error.status == 403 or error.status == 404:  # the namespace is going away
                return
            if error.status != 409:
                raise
            existing = self.api.get(f"{path}/{name}")
            if existing.get("spec") != wanted["spec"]:
                wanted["metadata"]["resourceVersion"] = existing["metadata"]["resourceVersion"]
                self.api.request("PUT", f"{path}/{name}", wanted)
        self.objects[(namespace, name)] = wanted["spec"]

    def forget(self, namespace: str, name: str) -> None:
        self.pods.pop((namespace, name), None)
        self.objects.pop((namespace, name), None)  # a later pod of that name checks the object again
        shutil.rmtree(self.folder(namespace, name), ignore_errors=True)
        with contextlib.suppress(OSError):
            self.folder(namespace, name).parent.rmdir()  # only when it is empty


def _key(pod: dict[str, Any]) -> tuple[str, str]:
    metadata = pod.get("metadata") or {}
    return metadata.get("namespace") or "", metadata.get("name") or ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devcluster.podlogs", description=__doc__.splitlines()[0])
    parser.add_argument("--dir", required=True, help="the cluster folder")
    args = parser.parse_args(argv)
    layout = Layout(Path(args.dir))
    state = ClusterState.load(layout.state_file)
    if state is None:
        parser.error(f"no cluster in {args.dir}")
    root = layout.pod_logs
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    print(f"pod-logs: writing container logs under {root}", file=sys.stderr, flush=True)
    try:
        Agent(dataclasses.replace(admin_client(layout, state), keep_alive=True), root).run()
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
