"""Shared pieces of the operator benchmarks (bench_operator.py): clusters, processes, watches, results.

Pure helpers live in bench/_measure.py (unit-tested in tests/unit/test_bench_harness.py):

* `percentile`, `fit_line`: the statistics every scenario reports;
* `parse_prometheus`, `apiserver_requests`, `operator_requests`, `writes`: counting API calls from
  the API server's `/metrics` (`apiserver_request_total`) and the operator's (`tfjob_api_requests_total`);
* `verdict`, `markdown_table`: pass/fail against a target and the printed tables.

Live pieces:

* `fresh_cluster()`: a devcluster in a temporary folder with the CRD installed (Established), torn
  down afterwards; one per measurement, so every scenario starts from an empty etcd;
* `OperatorProcess`: `python -m controller.process.cli run ...` as a subprocess, with its RSS and CPU from
  /proc, its /readyz and /metrics; optionally under the sampling profiler (bench/_sampler.py);
* `Recorder`: lists and watches one collection in a thread of the benchmark process and records the
  monotonic time every object was first seen, became Running, was deleted, so all latencies come
  from one clock in one process (never from `creationTimestamp`, which has 1-second resolution);
* `CpuMeter`: CPU seconds of every control-plane component and the operator over a phase, to show
  where the two cores went.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from bench._measure import RequestKey, apiserver_requests, metric_value, operator_requests
from devcluster.cluster import Cluster, ClusterError
from devcluster.ports import free_ports, release
from kube import ApiError, Kube, resource_path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results"
CRD = ROOT / "manifests" / "crd.yaml"
CLK_TCK = os.sysconf("SC_CLK_TCK")
R = TypeVar("R", bound="Recorder")

JOB_NAME_LABEL = "tensorflowjob.kubeflow.org/job-name"
TEMPLATE: dict[str, Any] = {"spec": {"containers": [{"name": "tensorflow", "image": "tensorflow/tensorflow:2.21.0"}]}}


# --- results and logs ---------------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    try:
        mem_kib = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                       if line.startswith("MemTotal:"))
    except (OSError, StopIteration, ValueError):
        mem_kib = 0
    try:  # the operator's code changes under concurrent work: say which commit was measured
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, timeout=10, check=False).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    return {"cpus": os.cpu_count(), "memory_gib": round(mem_kib / 2**20, 1), "python": platform.python_version(),
            "date": datetime.now(UTC).strftime("%Y-%m-%d"), "loadavg": [round(x, 2) for x in os.getloadavg()],
            "commit": commit, "operator_root": os.environ.get("TFJOB_BENCH_OPERATOR_ROOT", "")}


def write_result(name: str, result: Mapping[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps({"benchmark": name, "machine": machine(), **result}, indent=2, default=str) + "\n")
    return path


def log(message: str) -> None:
    print(f"  [{time.strftime('%H:%M:%S')}] {message}", flush=True)


# --- /proc --------------------------------------------------------------------------------------------


def proc_cpu_seconds(pid: int) -> float:
    """utime + stime of a process (0 when it is gone)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = text[text.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def proc_status_bytes(pid: int, key: str) -> int:
    """A `Vm*` line of /proc/<pid>/status (VmRSS, VmHWM) in bytes (0 when it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class CpuMeter:
    """CPU seconds per component (pids by name) between `start()` and `stop()`."""

    def __init__(self, pids: Mapping[str, int]) -> None:
        self.pids = {**pids, "bench": os.getpid()}
        self._start: dict[str, float] = {}
        self._wall = 0.0

    def start(self) -> CpuMeter:
        self._start = {name: proc_cpu_seconds(pid) for name, pid in self.pids.items()}
        self._wall = time.monotonic()
        return self

    def stop(self) -> dict[str, float]:
        wall = time.monotonic() - self._wall
        used = {name: round(proc_cpu_seconds(pid) - self._start.get(name, 0.0), 2) for name, pid in self.pids.items()}
        used["total"] = round(sum(used.values()), 2)
        used["wall"] = round(wall, 2)
        return used


# --- the cluster --------------------------------------------------------------------------------------


def wait_until(predicate: Callable[[], Any], timeout: float, interval: float = 0.2) -> bool:
    """Poll until predicate() is truthy (True) or timeout seconds passed (False); errors count as no."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if predicate():
                return True
        except (ApiError, OSError):
            pass
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)


@dataclass
class BenchCluster:
    cluster: Cluster
    kube: Kube
    recorders: list[Recorder] = field(default_factory=list)

    def watch(self, recorder: R) -> R:
        """Start a recorder; it is stopped before the cluster goes down."""
        self.recorders.append(recorder)
        recorder.start()
        return recorder

    def apiserver_metrics(self) -> str:
        return str(self.cluster.api.get("/metrics", timeout=60.0))

    def apiserver_requests(self) -> dict[RequestKey, float]:
        return apiserver_requests(self.apiserver_metrics())

    def create_namespace(self, name: str) -> str:
        self.kube.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        if not wait_until(lambda: self.kube.get(f"/api/v1/namespaces/{name}/serviceaccounts/default"), 60):
            raise RuntimeError(f"ServiceAccount default in {name} did not appear")
        return name

    def cpu_meter(self, operator: OperatorProcess | None = None) -> CpuMeter:
        pids = dict(self.cluster.pids)
        if operator is not None and operator.pid:
            pids["operator"] = operator.pid
        return CpuMeter(pids)


CLUSTER_SHAPE: dict[str, Any] = {"nodes": 20, "cpus": "1000", "memory": "4Ti", "pods": "600", "gpus": 0}
"""20 KWOK nodes x 600 pods: room for 12 000 pods; pods request nothing, so only the count matters."""


@contextlib.contextmanager
def fresh_cluster(pool_size: int = 96, shape: Mapping[str, Any] | None = None) -> Iterator[BenchCluster]:
    """A new devcluster (empty etcd) with the TensorFlowJob CRD Established; always torn down.
    `shape` overrides CLUSTER_SHAPE (e.g. more nodes for tens of thousands of pods). No simulated
    pod logs: their writer would add its CPU and API calls to every measurement."""
    shape = {**CLUSTER_SHAPE, **(shape or {})}
    folder = Path(tempfile.mkdtemp(prefix="tfjob-bench-"))
    cluster = Cluster(folder)
    kube: Kube | None = None
    try:
        try:
            cluster.up(**shape, timeout=240.0, pod_logs=False)
        except ClusterError as error:  # this box is shared: a slow start under load deserves one retry
            log(f"cluster start failed ({str(error).splitlines()[0]}); retrying once")
            cluster.up(**shape, timeout=300.0, pod_logs=False)
        cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(CRD))
        kube = Kube.from_kubeconfig(str(cluster.kubeconfig), pool_size=pool_size)
        crd_path = resource_path("apiextensions.k8s.io", "v1", "customresourcedefinitions", None,
                                 "tensorflowjobs.kubeflow.org")

        def established() -> bool:
            conditions = ((kube.get(crd_path).get("status") or {}).get("conditions")) or []
            return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)

        if not wait_until(established, 60):
            raise RuntimeError("the TensorFlowJob CRD did not become Established")
        # Discovery of the new group can lag behind Established; a create answers 404 until then.
        if not wait_until(lambda: kube.list(resource_path("kubeflow.org", "v1", "tensorflowjobs")), 60):
            raise RuntimeError("tensorflowjobs are not served")
        bench = BenchCluster(cluster, kube)
        try:
            yield bench
        finally:
            for recorder in bench.recorders:
                recorder.stop()
    finally:
        if kube is not None:
            kube.close()
        cluster.down()
        shutil.rmtree(folder, ignore_errors=True)


# --- jobs ---------------------------------------------------------------------------------------------


def tfjob(name: str, namespace: str, *, workers: int, ps: int = 1, chief: bool = False,
          chief_annotations: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A TensorFlowJob body: an optional chief, `ps` parameter servers and `workers` workers, with the
    integration tests' pod template (`chief_annotations` go on the chief's template only)."""
    def role(replicas: int, annotations: Mapping[str, str] | None = None) -> dict[str, Any]:
        template = json.loads(json.dumps(TEMPLATE))
        if annotations:
            template["metadata"] = {"annotations": dict(annotations)}
        return {"replicas": replicas, "restartPolicy": "OnFailure", "template": template}

    spec: dict[str, Any] = {"worker": role(workers)}
    if chief:
        spec["chief"] = role(1, chief_annotations)
    if ps:
        spec["ps"] = role(ps)
    return {"apiVersion": "kubeflow.org/v1", "kind": "TensorFlowJob",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def jobs_path(namespace: str | None, name: str | None = None) -> str:
    return resource_path("kubeflow.org", "v1", "tensorflowjobs", namespace, name)


def submit_jobs(kube: Kube, bodies: Sequence[dict[str, Any]],
                threads: int = 16) -> tuple[dict[str, float], list[dict[str, Any]]]:
    """Create the jobs with `threads` concurrent requests; (name → monotonic submit time, created objects)."""
    from concurrent.futures import ThreadPoolExecutor

    submitted: dict[str, float] = {}

    def create(body: dict[str, Any]) -> dict[str, Any]:
        submitted[body["metadata"]["name"]] = time.monotonic()
        return kube.create(jobs_path(body["metadata"]["namespace"]), body)

    with ThreadPoolExecutor(max_workers=threads) as pool:
        created = list(pool.map(create, bodies))
    return submitted, created


# --- the operator -------------------------------------------------------------------------------------


class OperatorProcess:
    """`python -m controller.process.cli run` against a kubeconfig; the pattern of the integration fixture.

    With `profile_dir`, the operator runs under bench/_sampler.py, which writes its stack samples
    (folded, for flame graphs) and a summary there when the process exits.
    """

    def __init__(self, kubeconfig: str | os.PathLike[str], log_path: Path, args: Sequence[str],
                 profile_dir: Path | None = None, profile_name: str = "operator") -> None:
        self.metrics_port = self.health_port = 0  # picked when it starts (devcluster/ports.py)
        self.log_path = log_path
        entry = ["-m", "controller.process.cli"]
        if profile_dir is not None:
            profile_dir.mkdir(parents=True, exist_ok=True)
            entry = ["-m", "bench._sampler", str(profile_dir / profile_name), "--", *entry]
        self.head = [sys.executable, *entry, "run", "--kubeconfig", str(kubeconfig)]
        self.tail_args = ["--log-format", "json", *args]
        self.process: subprocess.Popen[bytes] | None = None
        self.started_at = 0.0

    @property
    def argv(self) -> list[str]:
        return [*self.head, "--metrics-addr", f"127.0.0.1:{self.metrics_port}",
                "--health-addr", f"127.0.0.1:{self.health_port}", *self.tail_args]

    @property
    def pid(self) -> int:
        return self.process.pid if self.process is not None else 0

    def start(self) -> OperatorProcess:
        release([p for p in (self.metrics_port, self.health_port) if p])
        self.metrics_port, self.health_port = free_ports(["metrics", "health"]).values()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log_file:
            self.started_at = time.monotonic()
            env = {**os.environ, "PYTHONUNBUFFERED": "1"}  # complete logs even if it has to be killed
            root = ROOT
            if os.environ.get("TFJOB_BENCH_OPERATOR_ROOT"):  # an experimental copy of the operator's code
                root = Path(os.environ["TFJOB_BENCH_OPERATOR_ROOT"]).resolve()
                env["PYTHONPATH"] = os.pathsep.join([str(root), str(ROOT)])
            self.process = subprocess.Popen(self.argv, stdout=log_file, stderr=subprocess.STDOUT, cwd=root, env=env)
        return self

    def wait_ready(self, timeout: float = 120.0, interval: float = 0.05) -> float:
        """Seconds from start() until /readyz answered 200 (caches synced)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.ready():
                return time.monotonic() - self.started_at
            time.sleep(interval)
        raise RuntimeError(f"operator not ready after {timeout}s:\n{self.tail()}")

    def ready(self) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            raise RuntimeError(f"operator exited with {self.process.returncode}:\n{self.tail()}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.health_port}/readyz", timeout=2) as answer:
                return bool(answer.status == 200)
        except OSError:
            return False

    def metrics(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=60) as answer:
            return str(answer.read().decode())

    def requests(self) -> dict[RequestKey, float]:
        return operator_requests(self.metrics())

    def rss(self) -> int:
        return proc_status_bytes(self.pid, "VmRSS")

    def hwm(self) -> int:
        return proc_status_bytes(self.pid, "VmHWM")

    def cpu_seconds(self) -> float:
        return proc_cpu_seconds(self.pid)

    def open_sockets(self) -> int:
        """Sockets the process holds open now (connections and listeners), from /proc/<pid>/fd.
        Connections are kept alive and never closed while the pool has room, so after a burst this
        bounds how many connections (and TLS handshakes) the burst made."""
        count = 0
        for fd in Path(f"/proc/{self.pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                count += os.readlink(fd).startswith("socket:")
        return count

    def queue_idle(self) -> bool:
        """The work queue is empty and no worker is busy (from workqueue_* metrics)."""
        text = self.metrics()
        depth = metric_value(text, "workqueue_depth", {"name": "tensorflowjobs"})
        busy = metric_value(text, "workqueue_unfinished_work_seconds", {"name": "tensorflowjobs"})
        return depth == 0 and busy == 0

    def stop(self, timeout: float = 40.0) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


@contextlib.contextmanager
def running_operator(bench: BenchCluster, args: Sequence[str], log_path: Path,
                     profile_dir: Path | None = None, profile_name: str = "operator") -> Iterator[OperatorProcess]:
    operator = OperatorProcess(bench.cluster.kubeconfig, log_path, args, profile_dir, profile_name).start()
    try:
        operator.wait_ready()
        yield operator
    finally:
        operator.stop()


# --- watching -----------------------------------------------------------------------------------------


def _is_running(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running"


def _condition_true(job: Mapping[str, Any], kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True"
               for c in (job.get("status") or {}).get("conditions") or [])


@dataclass
class PodTimes:
    """What the benchmark's pod watch saw, in time.monotonic() seconds."""

    first_seen: dict[str, float] = field(default_factory=dict)  # pod name → first ADDED of that name
    added: dict[str, tuple[str, float]] = field(default_factory=dict)  # uid → (name, ADDED time)
    running: dict[str, float] = field(default_factory=dict)  # uid → first seen Running
    deleted: dict[str, float] = field(default_factory=dict)  # uid → DELETED time
    phase: dict[str, str] = field(default_factory=dict)  # uid → last phase
    job_of: dict[str, str] = field(default_factory=dict)  # pod name → job label
    live: dict[str, str] = field(default_factory=dict)  # name → uid of the pod holding it now


@dataclass
class JobTimes:
    running: dict[str, float] = field(default_factory=dict)  # job name → first Running=True
    succeeded: dict[str, float] = field(default_factory=dict)


class Recorder:
    """Lists, then watches one collection in a daemon thread; calls `on_event(t, type, obj)` for every
    ADDED/MODIFIED/DELETED with the monotonic time it arrived. `wait(pred, timeout)` waits on it."""

    def __init__(self, kube: Kube, path: str, on_event: Callable[[float, str, dict[str, Any]], None],
                 label_selector: str | None = None) -> None:
        self.kube = kube
        self.path = path
        self.on_event = on_event
        self.query = {"labelSelector": label_selector} if label_selector else {}
        self.cond = threading.Condition()
        self._stop = threading.Event()
        self._stream: Any = None
        self._thread = threading.Thread(target=self._run, name=f"recorder {path}", daemon=True)
        self._synced = threading.Event()
        self.events = 0

    def start(self) -> Recorder:
        self._thread.start()
        if not self._synced.wait(60):
            raise RuntimeError(f"watch on {self.path} did not start")
        return self

    def stop(self) -> None:
        self._stop.set()
        stream = self._stream
        if stream is not None:
            stream.close()
        self._thread.join(10)

    def wait(self, predicate: Callable[[], bool], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self.cond:
            while not predicate():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self.cond.wait(min(remaining, 1.0))
        return True

    def _deliver(self, event_type: str, obj: dict[str, Any]) -> None:
        now = time.monotonic()
        with self.cond:
            self.events += 1
            self.on_event(now, event_type, obj)
            self.cond.notify_all()

    def _run(self) -> None:
        resource_version = ""
        while not self._stop.is_set():
            try:
                if not resource_version:
                    listing = self.kube.list(self.path, **self.query)
                    for item in listing.get("items") or []:
                        self._deliver("ADDED", item)
                    resource_version = str(listing["metadata"]["resourceVersion"])
                    self._synced.set()
                self._stream = self.kube.watch(self.path, resource_version=resource_version, timeout_seconds=1800,
                                               read_timeout=120.0, **self.query)
                for event in self._stream:
                    obj = event.get("object") or {}
                    if event.get("type") == "ERROR":
                        resource_version = ""  # expired: list again
                        break
                    rv = (obj.get("metadata") or {}).get("resourceVersion")
                    if rv:
                        resource_version = str(rv)
                    if event.get("type") in ("ADDED", "MODIFIED", "DELETED"):
                        self._deliver(str(event["type"]), obj)
            except ApiError as error:
                if self._stop.is_set():
                    return
                log(f"watch {self.path}: {error}; retrying")
                if error.gone:
                    resource_version = ""
                time.sleep(0.5)
            finally:
                self._stream = None


class PodRecorder(Recorder):
    def __init__(self, kube: Kube, namespace: str | None) -> None:
        """Pods of `namespace` (None: of every namespace)."""
        self.times = PodTimes()
        super().__init__(kube, resource_path("", "v1", "pods", namespace), self._record)

    def _record(self, now: float, event_type: str, pod: dict[str, Any]) -> None:
        t = self.times
        meta = pod["metadata"]
        name, uid = meta["name"], meta["uid"]
        if event_type == "DELETED":
            t.deleted.setdefault(uid, now)
            if t.live.get(name) == uid:
                del t.live[name]
            return
        if uid not in t.added:
            t.added[uid] = (name, now)
            t.first_seen.setdefault(name, now)
            t.job_of[name] = (meta.get("labels") or {}).get(JOB_NAME_LABEL, "")
            t.live[name] = uid
        t.phase[uid] = (pod.get("status") or {}).get("phase") or "Pending"
        if _is_running(pod):
            t.running.setdefault(uid, now)
        if meta.get("deletionTimestamp") and t.live.get(name) == uid:
            del t.live[name]


class JobRecorder(Recorder):
    def __init__(self, kube: Kube, namespace: str | None) -> None:
        """TensorFlowJobs of `namespace` (None: of every namespace)."""
        self.times = JobTimes()
        super().__init__(kube, jobs_path(namespace), self._record)

    def _record(self, now: float, event_type: str, job: dict[str, Any]) -> None:
        name = job["metadata"]["name"]
        if event_type != "DELETED" and _condition_true(job, "Running"):
            self.times.running.setdefault(name, now)
        if event_type != "DELETED" and _condition_true(job, "Succeeded"):
            self.times.succeeded.setdefault(name, now)


class CountRecorder(Recorder):
    """Counts distinct objects ever added (Services)."""

    def __init__(self, kube: Kube, path: str) -> None:
        self.first_seen: dict[str, float] = {}
        super().__init__(kube, path, self._record)

    def _record(self, now: float, event_type: str, obj: dict[str, Any]) -> None:
        if event_type != "DELETED":
            self.first_seen.setdefault(obj["metadata"]["name"], now)
