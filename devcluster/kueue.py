"""`Kueue`: run a real Kueue manager (sigs.k8s.io/kueue, version in versions.env) against a devcluster.

tfjob-operator speaks Kueue's Workload protocol itself (controller/kueue/), so its tests need the
real thing: Kueue's scheduler admitting, queueing and preempting Workloads. Kueue is normally
installed in-cluster by kustomize (Deployment, webhooks, cert rotation); a devcluster has no
kubelet, so here the manager runs as a plain host process with the admin kubeconfig, like the
control-plane components, and this module does the set-up that the kustomize install would do:

* **CRDs**: the 11 CRDs of `config/components/crd/bases` (copied next to the binary by
  `build-binaries.sh kueue`), applied server-side (workloads.yaml is ~1.4 MB, too large for the
  client-side apply annotation) and waited for until Established. The bases carry no conversion
  webhook, so only v1beta2 (the storage version) should be read and written.
* **Configuration** (`<cluster>/kueue/config.yaml`, shaped by running Kueue outside a cluster):
  no leader election (no in-cluster namespace to hold a Lease); internal
  cert management off (its rotator waits for certificates *mounted* by a Secret and injects CAs into
  webhook configurations that do not exist here); the `VisibilityOnDemand` gate off (its API server
  delegates authentication to the apiserver and needs /visibility certs); metrics disabled
  (`bindAddress: "0"`); webhook and health servers on free ports of 127.0.0.1; only the batch/job
  integration (or the built-in frameworks a caller names, e.g. also `kubeflow.org/tfjob`) plus
  TensorFlowJob as an external framework (a "known owner"; harmless).
  No Mutating/ValidatingWebhookConfigurations are installed: Workloads need none (the CRDs' CEL
  rules still apply), so the webhook server only has to start, which /readyz waits for.
* **Certificates** (openssl CLI, self-signed, ECDSA P-256, 10 years):
  - the webhook server's `tls.crt`/`tls.key` in `<cluster>/kueue/certs` (`webhook.certDir`);
  - **`/etc/kueue/metrics/certs/tls.{crt,key}`**: with internal cert management off, Kueue's
    main.go loads this hard-coded path even when metrics are disabled and exits if the files are
    missing. There is no flag or config field to move it, so a self-signed pair is written there
    when absent (existing files are left alone). This is the one file Kueue needs outside the
    cluster folder; it needs write access to /etc (true in this root dev container), and the error
    says so otherwise.

The manager's pid and ports are recorded in `<cluster>/kueue/state.json` and its log goes to the
cluster's logs folder (`logs/kueue.log`), so `stop()` works from another process too; like the
control-plane components it is stopped by its recorded pid only (devcluster.processes).
"""

from __future__ import annotations

import http.client
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from . import processes
from .api import ApiError
from .binaries import BUILD_SCRIPT, read_versions
from .cluster import Cluster
from .crds import install_crds
from .ports import free_ports
from .state import JsonState

BINARY = "kueue"
"""The manager's file name in the Kueue folder (what `build-binaries.sh kueue` installs)."""

CRD_NAMES = tuple(f"{plural}.kueue.x-k8s.io" for plural in (
    "admissionchecks", "clusterqueues", "cohorts", "localqueues", "multikueueclusters", "multikueueconfigs",
    "provisioningrequestconfigs", "resourceflavors", "topologies", "workloadpriorityclasses", "workloads"))
"""All 11 CRDs: Kueue's controllers watch the core kinds, Topology (TAS is on by default) and the
MultiKueue kinds (beta, on), so a missing one stops the manager's caches from syncing."""

NAMESPACE = "kueue-system"
DEFAULT_FRAMEWORKS = ("batch/job",)
"""Kueue's built-in integrations enabled unless a caller names others (`Kueue(..., frameworks=...)`)."""
METRICS_CERT_DIR = Path("/etc/kueue/metrics/certs")
"""Hard-coded in Kueue's cmd/kueue/main.go (see the module docstring)."""

OPENSSL_CONFIG = "[req]\ndistinguished_name = dn\nprompt = no\n[dn]\nCN = unused\n"


class KueueError(RuntimeError):
    """Kueue could not be built, installed or started (the message says which and why)."""


def kueue_dir() -> Path:
    """The folder `build-binaries.sh kueue` fills: $TFJOB_KUEUE_BIN_DIR, else the user cache."""
    if os.environ.get("TFJOB_KUEUE_BIN_DIR"):
        return Path(os.environ["TFJOB_KUEUE_BIN_DIR"]).expanduser()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "tfjob-operator" / f"kueue-{read_versions()['KUEUE_VERSION']}"


def _complete(folder: Path) -> bool:
    return os.access(folder / BINARY, os.X_OK) and (folder / ".complete").is_file()


def find_kueue_dir(build: bool = True) -> Path:
    """The Kueue folder (binary `kueue`, CRDs in `crd/`), running `build-binaries.sh kueue` when it is
    incomplete and `build` allows (about 10 minutes cold; a no-op when complete)."""
    folder = kueue_dir()
    if _complete(folder):
        return folder
    if build:
        print(f"devcluster: building Kueue into {folder} (first run: ~10 min)", file=sys.stderr)
        result = subprocess.run(["bash", str(BUILD_SCRIPT), "kueue"], stdout=sys.stderr, check=False)
        if result.returncode == 0 and _complete(folder):
            return folder
        raise KueueError(f"`bash {BUILD_SCRIPT} kueue` exited {result.returncode} and {folder} is incomplete "
                         "(needs Go and the Go module proxy)")
    raise KueueError(f"{folder} lacks {BINARY} or .complete; run `bash {BUILD_SCRIPT} kueue`")


def _openssl(args: list[str], workdir: Path) -> None:
    config = workdir / "openssl.cnf"
    config.write_text(OPENSSL_CONFIG)
    result = subprocess.run(["openssl", *args], capture_output=True, text=True, check=False,
                            env={**os.environ, "OPENSSL_CONF": str(config)})
    config.unlink(missing_ok=True)
    if result.returncode != 0:
        raise KueueError(f"openssl {' '.join(args)} failed: {result.stderr.strip()}")


def self_signed_pair(folder: Path, common_name: str) -> tuple[Path, Path]:
    """Write folder/tls.crt and folder/tls.key (self-signed for 127.0.0.1/localhost) unless both exist."""
    crt, key = folder / "tls.crt", folder / "tls.key"
    if crt.is_file() and key.is_file():
        return crt, key
    folder.mkdir(parents=True, exist_ok=True)
    _openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
              "-keyout", str(key), "-out", str(crt), "-days", "3650", "-sha256", "-subj", f"/CN={common_name}",
              "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
              "-addext", "keyUsage=critical,digitalSignature", "-addext", "extendedKeyUsage=serverAuth"], folder)
    key.chmod(0o600)
    return crt, key


@dataclass
class KueueState(JsonState):
    """What start() decided and started; saved as <cluster>/kueue/state.json."""

    bin_dir: str
    pid: int
    ports: dict[str, int]


class Kueue:
    """Kueue's manager for one running devcluster (see the module docstring for what it sets up)."""

    def __init__(self, cluster: Cluster, bin_dir: str | os.PathLike[str] | None = None,
                 frameworks: tuple[str, ...] = DEFAULT_FRAMEWORKS) -> None:
        """`frameworks` are Kueue's built-in integrations to enable (`integrations.frameworks`), e.g.
        ("batch/job", "kubeflow.org/tfjob"). Kueue sets up a framework's controller once the API of its
        kind is served (polling with a backoff of up to two minutes), so start the manager after the
        framework's CRD is installed."""
        self.cluster = cluster
        self.frameworks = tuple(frameworks)
        self.dir = cluster.dir / "kueue"
        self._bin_dir = Path(bin_dir) if bin_dir else None
        self._state = KueueState.load(self.state_file)

    # ------------------------------------------------------------------ facts

    @property
    def state_file(self) -> Path:
        return self.dir / "state.json"

    @property
    def config_file(self) -> Path:
        return self.dir / "config.yaml"

    @property
    def cert_dir(self) -> Path:
        """The webhook server's certDir (tls.crt, tls.key)."""
        return self.dir / "certs"

    @property
    def log_file(self) -> Path:
        return self.cluster.layout.log("kueue")

    @property
    def bin_dir(self) -> Path:
        if self._state is not None:
            return Path(self._state.bin_dir)
        return self._bin_dir or find_kueue_dir(build=False)

    @property
    def ports(self) -> dict[str, int]:
        """{"webhook": port, "health": port} of the running manager (both on 127.0.0.1)."""
        return dict(self._state.ports) if self._state else {}

    @property
    def pid(self) -> int | None:
        return self._state.pid if self._state else None

    def is_running(self) -> bool:
        return self._state is not None and processes.is_running(self._state.pid, self.bin_dir / BINARY)

    def ready(self) -> bool:
        """True when the manager's /readyz answers 200 (its webhook server listens)."""
        if self._state is None:
            return False
        connection = http.client.HTTPConnection("127.0.0.1", self._state.ports["health"], timeout=5.0)
        try:
            connection.request("GET", "/readyz")
            return connection.getresponse().status == 200
        except (OSError, http.client.HTTPException):
            return False
        finally:
            connection.close()

    def logs(self, tail: int | None = None) -> str:
        """The manager's log (its last `tail` lines when given); '' if there is none yet."""
        try:
            text = self.log_file.read_text(errors="replace")
        except FileNotFoundError:
            return ""
        return "\n".join(text.splitlines()[-tail:]) if tail else text

    # ------------------------------------------------------------------ set-up

    def install_crds(self, timeout: float = 60.0) -> None:
        """Server-side apply Kueue's 11 CRDs and wait until each is Established."""
        problem = install_crds(self.cluster, self.bin_dir / "crd", CRD_NAMES, timeout)
        if problem:
            raise KueueError(f"{problem}; rerun `bash {BUILD_SCRIPT} kueue`")

    def _ensure_namespace(self) -> None:
        try:
            self.cluster.api.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                          "metadata": {"name": NAMESPACE}})
        except ApiError as error:
            if error.status != 409:
                raise

    def _metrics_certs(self) -> None:
        try:
            self_signed_pair(METRICS_CERT_DIR, "kueue-metrics")
        except OSError as error:
            raise KueueError(
                f"Kueue loads its metrics certificate from the hard-coded {METRICS_CERT_DIR}/tls.{{crt,key}} "
                f"(cmd/kueue/main.go, when internalCertManagement is off) and exits without it; creating a "
                f"self-signed pair there failed: {error}. Create the two files (any self-signed pair) "
                "or run as a user that may write there.") from error

    def configuration(self, ports: dict[str, int]) -> dict[str, Any]:
        """The Kueue Configuration (config.kueue.x-k8s.io/v1beta2) for a manager outside the cluster."""
        return {
            "apiVersion": "config.kueue.x-k8s.io/v1beta2",
            "kind": "Configuration",
            "namespace": NAMESPACE,
            "manageJobsWithoutQueueName": False,
            "leaderElection": {"leaderElect": False},
            "internalCertManagement": {"enable": False},
            "webhook": {"host": "127.0.0.1", "port": ports["webhook"], "certDir": str(self.cert_dir)},
            "metrics": {"bindAddress": "0"},
            "health": {"healthProbeBindAddress": f"127.0.0.1:{ports['health']}"},
            "featureGates": {"VisibilityOnDemand": False},
            "integrations": {"frameworks": list(self.frameworks),
                             "externalFrameworks": ["TensorFlowJob.v1.kubeflow.org"]},
            # No waitForPodsReady block: the feature is off, so the job controller need not keep
            # the Workload's PodsReady condition.
        }

    # ------------------------------------------------------------------ lifecycle

    def start(self, timeout: float = 120.0) -> None:
        """Install the CRDs, write certificates and the Configuration, start the manager and wait
        for its /readyz. A no-op when it already runs. On failure the manager is stopped again."""
        if self.is_running():
            return
        bin_dir = self._bin_dir or find_kueue_dir()
        self.dir.mkdir(parents=True, exist_ok=True)
        self.install_crds()
        self._ensure_namespace()
        self_signed_pair(self.cert_dir, "kueue-webhook")
        self._metrics_certs()
        ports = free_ports(["kueue-webhook", "kueue-health"])
        ports = {"webhook": ports["kueue-webhook"], "health": ports["kueue-health"]}
        self.config_file.write_text(yaml.safe_dump(self.configuration(ports), sort_keys=False))

        env = {**os.environ, "KUBECONFIG": str(self.cluster.kubeconfig),
               "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
        pid = processes.spawn([str(bin_dir / BINARY), f"--config={self.config_file}"], self.log_file, env)
        self._state = KueueState(bin_dir=str(bin_dir), pid=pid, ports=ports)
        self._state.save(self.state_file)
        try:
            self._wait_ready(timeout)
        except BaseException:
            self.stop(grace=0)
            raise

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not self.ready():
            if not self.is_running():
                raise KueueError(f"kueue exited; last lines of {self.log_file}:\n{self.logs(tail=30)}")
            if time.monotonic() >= deadline:
                raise KueueError(f"timed out after {timeout:g}s waiting for kueue's /readyz; last lines of "
                                 f"{self.log_file}:\n{self.logs(tail=30)}")
            time.sleep(0.2)

    def stop(self, grace: float = 5.0) -> None:
        """Stop the manager by its recorded pid (SIGTERM, SIGKILL after `grace` s). CRDs and the
        objects of Kueue's API stay, as after uninstalling a Deployment."""
        if self._state is None:
            return
        processes.stop(self._state.pid, Path(self._state.bin_dir) / BINARY, timeout=grace)
        self.state_file.unlink(missing_ok=True)
        self._state = None
