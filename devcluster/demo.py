"""`tfjob-devcluster demo` (`make run`): the first five minutes of a new user, in one command.

It starts the local control plane (or reuses a running one), installs the CRD the way the README
says (`kubectl apply --server-side`), runs the operator out of cluster with the cluster's admin
kubeconfig, submits `manifests/examples/allreduce.yaml` (whose simulated pods exit 0 after 10 s)
and shows the job progress to Succeeded in a `kubectl get tfjob -w`-style view. It then says how
to use kubectl against the cluster and how to stop it.

Shaped for two audiences: a person at a terminal (interactive: the operator keeps running after
the job succeeds, until Ctrl-C, so they can try kubectl) and CI or a test (non-interactive: one
time limit for everything, exit status 0 only if the job Succeeded, `--down` to stop the cluster
afterwards). The operator runs with leader election, so a demo operator still running elsewhere
cannot reconcile the same job at the same time. Only the standard library, kubectl and the
devcluster's own API client are used, like the rest of devcluster/.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import yaml

from .api import ApiError
from .cluster import Cluster, ClusterError
from .ports import free_ports
from .state import default_dir

ROOT = Path(__file__).resolve().parents[1]
CRD = ROOT / "manifests" / "crd.yaml"
EXAMPLE = ROOT / "manifests" / "examples" / "allreduce.yaml"
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/tensorflowjobs.kubeflow.org"
NAMESPACE = "tfjob-demo"
COLUMNS = ("NAME", "STATE", "WORKERS", "PS", "RESTARTS", "PROGRESS", "ETA", "AGE")
POLL_SECONDS = 0.5


class DemoError(RuntimeError):
    """A step of the demo failed; the message says which and what to look at."""


def human_age(seconds: float) -> str:
    """Ages as kubectl prints them: 42s, 3m5s, 12m, 2h5m."""
    total = max(0, int(seconds))
    if total < 120:
        return f"{total}s"
    minutes, secs = divmod(total, 60)
    if minutes < 10:
        return f"{minutes}m{secs}s" if secs else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes}m" if minutes else f"{hours}h"


def job_row(job: dict[str, Any], now: datetime) -> tuple[str, ...]:
    """The `kubectl get tfjob` columns of one job (the CRD's additionalPrinterColumns)."""
    status = job.get("status") or {}
    replicas = status.get("replicaStatuses") or {}
    created = datetime.fromisoformat(job["metadata"]["creationTimestamp"].replace("Z", "+00:00"))
    return (
        job["metadata"]["name"],
        status.get("state") or "",
        str((replicas.get("worker") or {}).get("active", "")),
        str((replicas.get("ps") or {}).get("active", "")),
        str(status.get("restartCount", "")),
        str((status.get("progress") or {}).get("summary", "")),
        str((status.get("progress") or {}).get("remaining", "")),
        human_age((now - created).total_seconds()),
    )


def format_row(cells: tuple[str, ...]) -> str:
    widths = (24, 12, 9, 4, 10, 10, 8, 6)
    return "".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True)).rstrip()


class Demo:
    def __init__(self, cluster: Cluster, *, timeout: float = 300.0, interactive: bool = False,
                 down: bool = False, out: TextIO = sys.stdout, example: Path = EXAMPLE,
                 namespace: str = NAMESPACE, nodes: int = 4) -> None:
        self.cluster = cluster
        self.timeout = timeout
        self.interactive = interactive
        self.down = down
        self.out = out
        self.example = example
        self.namespace = namespace
        self.nodes = nodes
        # The example holds its training program's ConfigMap before the job.
        job = next(d for d in yaml.safe_load_all(example.read_text()) if d and d.get("kind") == "TensorFlowJob")
        self.job_name = str(job["metadata"]["name"])
        self.operator_log = cluster.dir / "demo-operator.log"
        self.operator: subprocess.Popen[bytes] | None = None
        self.health_port = self.metrics_port = 0  # picked when the operator starts
        self._deadline = 0.0

    # ---- the steps -------------------------------------------------------------------------------

    def run(self) -> int:
        """The whole demo; 0 if the example job Succeeded within the time limit."""
        self._deadline = time.monotonic() + self.timeout
        try:
            self.start_cluster()
            self.install_crd()
            self.start_operator()
            self.submit_job()
            state = self.watch_job()
            if state != "Succeeded":
                self.say(f"\nThe job did not succeed ({state or 'no state'}). Operator log: {self.operator_log}")
                self.say(self.operator_tail())
                return 1
            self.explain()
            if self.interactive:
                self.keep_running()
            return 0
        except (DemoError, ClusterError, ApiError, subprocess.SubprocessError) as error:
            self.say(f"\ndemo failed: {error}")
            if self.operator is not None:
                self.say(f"operator log ({self.operator_log}):\n{self.operator_tail()}")
            return 1
        finally:
            self.stop_operator()
            if self.down:
                self.say("Stopping the local cluster (--down).")
                self.cluster.down()

    def start_cluster(self) -> bool:
        """Reuse a running cluster or start one; True if this call started it."""
        running = [c for c, s in self.cluster.status().items() if s["running"]]
        if len(running) == len(self.cluster.components):
            self.say(f"Reusing the local cluster in {self.cluster.dir} ({self.cluster.api_url}).")
            self.cluster.wait_ready(timeout=self.remaining())
            return False
        if running:
            raise DemoError(f"the cluster in {self.cluster.dir} is only partly running ({', '.join(running)}); "
                            f"run `tfjob-devcluster down` and try again")
        self.say(f"Starting a local control plane: etcd, kube-apiserver, kube-controller-manager, kube-scheduler "
                 f"and KWOK with {self.nodes} fake nodes ...")
        began = time.monotonic()
        self.cluster.up(nodes=self.nodes, timeout=self.remaining())
        self.say(f"  up in {time.monotonic() - began:.1f}s: {self.cluster.api_url}")
        return True

    def install_crd(self) -> None:
        self.say("Installing the TensorFlowJob CRD (kubectl apply --server-side -f manifests/crd.yaml) ...")
        self.cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(CRD))
        # Polled rather than `kubectl wait`, which fails if it looks before the CRD has any status.
        self.poll(self.crd_established, "the CRD to be Established")

    def crd_established(self) -> bool:
        crd = self.cluster.api.get(CRD_PATH)
        conditions = (crd.get("status") or {}).get("conditions") or []
        return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)

    def start_operator(self) -> None:
        self.say("Starting the operator out of cluster (tfjob-operator run --kubeconfig ...) ...")
        self.ensure_namespace()
        self.health_port, self.metrics_port = free_ports(["health", "metrics"]).values()
        command = [sys.executable, "-m", "controller.process.cli", "run", "--kubeconfig", str(self.cluster.kubeconfig),
                   "--metrics-addr", f"127.0.0.1:{self.metrics_port}",
                   "--health-addr", f"127.0.0.1:{self.health_port}",
                   "--log-format", "json", "--leader-elect", "--leader-election-namespace", self.namespace]
        env = {**os.environ, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
        with open(self.operator_log, "ab") as log:
            self.operator = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, env=env)
        self.poll(self.operator_ready, "the operator's /readyz")
        self.say(f"  ready; log {self.operator_log}, metrics http://127.0.0.1:{self.metrics_port}/metrics")

    def ensure_namespace(self) -> None:
        try:
            self.cluster.api.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                         "metadata": {"name": self.namespace}})
        except ApiError as error:
            if error.status != 409:
                raise
        # Pods need the namespace's default ServiceAccount, which the controller-manager adds.
        self.poll(lambda: self.exists(f"/api/v1/namespaces/{self.namespace}/serviceaccounts/default"),
                  f"the default ServiceAccount in {self.namespace}")

    def submit_job(self) -> None:
        path = self.job_path()
        if self.exists(path):  # a previous demo's job: start over, so there is something to watch
            self.cluster.api.delete(path)
            self.poll(lambda: not self.exists(path), f"the previous {self.job_name} to be deleted")
        self.say(f"Submitting {self.example.relative_to(ROOT)} "
                 f"(kubectl apply -n {self.namespace} -f ...; its pods exit 0 after 10 s):")
        applied = self.cluster.kubectl("apply", "-n", self.namespace, "-f", str(self.example))
        self.say("  " + applied.stdout.strip())

    def watch_job(self) -> str:
        """Print a row whenever the job's columns change, like `kubectl get tfjob -w`; the final state."""
        self.say(f"\nkubectl get tfjob -n {self.namespace} -w\n{format_row(COLUMNS)}")
        last: tuple[str, ...] = ()
        state = ""
        while True:
            try:
                job = self.cluster.api.get(self.job_path())
            except ApiError as error:
                if error.status != 404:
                    raise
                job = None
            if job is not None:
                row = job_row(job, datetime.now(UTC))
                state = row[1]
                if row[:5] != last[:5]:
                    self.say(format_row(row))
                    last = row
                if state in ("Succeeded", "Failed"):
                    return state
            if self.operator is not None and self.operator.poll() is not None:
                raise DemoError(f"the operator exited with status {self.operator.returncode}")
            if time.monotonic() >= self._deadline:
                self.say(f"(time limit of {self.timeout:g}s reached)")
                return state
            time.sleep(POLL_SECONDS)

    def explain(self) -> None:
        kubectl_dir = self.cluster.bin_dir
        operator = ("The operator keeps running until you press Ctrl-C." if self.interactive else
                    f"The demo's operator has stopped; run one again with:\n"
                    f"  tfjob-operator run --kubeconfig {self.cluster.kubeconfig}")
        still = ("With --down the cluster stops now; without it, it keeps running and you can"
                 if self.down else "The local cluster is still running;")
        self.say(f"""
{self.job_name} Succeeded. {still} use it with kubectl
(the PATH line adds the kubectl built with the cluster, if you have none):

  export KUBECONFIG={self.cluster.kubeconfig}
  export PATH={kubectl_dir}:$PATH
  kubectl get tfjob -n {self.namespace} -o wide
  kubectl describe tfjob {self.job_name} -n {self.namespace}
  kubectl get pods -n {self.namespace} -l tensorflowjob.kubeflow.org/job-name={self.job_name}
  kubectl apply -f {EXAMPLE.parent.relative_to(ROOT)}/storage/mnist-data-local-pv.yaml
  kubectl apply -n {self.namespace} -f {EXAMPLE.parent.relative_to(ROOT)}/storage/mnist-data-pvc.yaml
  kubectl apply -n {self.namespace} -f {EXAMPLE.parent.relative_to(ROOT)}/parameter-server.yaml

{operator}
Stop the cluster:
  tfjob-devcluster down{self._dir_flag()}""")

    def keep_running(self) -> None:
        self.say(f"Metrics: http://127.0.0.1:{self.metrics_port}/metrics   Operator log: {self.operator_log}")
        assert self.operator is not None
        with contextlib.suppress(KeyboardInterrupt):
            self.operator.wait()
        self.say("\nOperator stopped; the cluster is still running (tfjob-devcluster down stops it).")

    # ---- helpers ---------------------------------------------------------------------------------

    def stop_operator(self) -> None:
        process = self.operator
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)

    def operator_ready(self) -> bool:
        if self.operator is not None and self.operator.poll() is not None:
            raise DemoError(f"the operator exited with status {self.operator.returncode}:\n{self.operator_tail()}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.health_port}/readyz", timeout=2) as answer:
                return bool(answer.status == 200)
        except OSError:
            return False

    def operator_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.operator_log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def job_path(self) -> str:
        return f"/apis/kubeflow.org/v1/namespaces/{self.namespace}/tensorflowjobs/{self.job_name}"

    def exists(self, path: str) -> bool:
        try:
            self.cluster.api.get(path)
        except ApiError as error:
            if error.status == 404:
                return False
            raise
        return True

    def poll(self, predicate: Callable[[], bool], what: str) -> None:
        while not predicate():
            if time.monotonic() >= self._deadline:
                raise DemoError(f"time limit of {self.timeout:g}s reached waiting for {what}")
            time.sleep(POLL_SECONDS)

    def remaining(self) -> float:
        return max(1.0, self._deadline - time.monotonic())

    def _dir_flag(self) -> str:
        default = default_dir().expanduser().resolve()
        return "" if self.cluster.dir == default else f" --dir {self.cluster.dir}"

    def say(self, text: str) -> None:
        print(text, file=self.out, flush=True)
