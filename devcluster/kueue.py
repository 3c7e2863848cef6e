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
  TensorFlowJob as an external framework (a "known owner"; harmless). The Configuration is also
  published where Kueue's kustomize and Helm installs keep it, the ConfigMap
  `kueue-system/kueue-manager-config` (key `controller_manager_config.yaml`), since the operator's
  `--kueue-tfjob=auto` reads it there to learn whether Kueue's own TFJob integration is on.
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

The manager is a `HostAddon` (devcluster/addon.py): its pid and ports are recorded in
`<cluster>/kueue/state.json` and its log goes to the cluster's logs folder (`logs/kueue.log`), so
`stop()` works from another process too; it is stopped by its recorded pid only.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

import yaml

from .addon import AddonBuild, AddonError, AddonState, HostAddon, http_ok
from .api import ApiError
from .cluster import Cluster
from .state import JsonState

BINARY = "kueue"
"""The manager's file name in the Kueue folder (what `build-binaries.sh kueue` installs)."""

CRD_NAMES = tuple(f"{plural}.kueue.x-k8s.io" for plural in (
    "admissionchecks", "clusterqueues", "cohorts", "localqueues", "multikueueclusters", "multikueueconfigs",
    "provisioningrequestconfigs", "resourceflavors", "topologies", "workloadpriorityclasses", "workloads"))
"""All 11 CRDs: Kueue's controllers watch the core kinds, Topology (TAS is on by default) and the
MultiKueue kinds (beta, on), so a missing one stops the manager's caches from syncing."""

NAMESPACE = "kueue-system"
CONFIG_MAP = "kueue-manager-config"
CONFIG_KEY = "controller_manager_config.yaml"
"""Where Kueue's installs keep the Configuration (published here too, see the module docstring)."""
DEFAULT_FRAMEWORKS = ("batch/job",)
"""Kueue's built-in integrations enabled unless a caller names others (`Kueue(..., frameworks=...)`)."""
METRICS_CERT_DIR = Path("/etc/kueue/metrics/certs")
"""Hard-coded in Kueue's cmd/kueue/main.go (see the module docstring)."""

OPENSSL_CONFIG = "[req]\ndistinguished_name = dn\nprompt = no\n[dn]\nCN = unused\n"


class KueueError(AddonError):
    """Kueue could not be built, installed or started (the message says which and why)."""


BUILD = AddonBuild(name="kueue", title="Kueue", binaries=(BINARY,), cold_build="~10 min", error=KueueError)
"""`build-binaries.sh kueue` fills $TFJOB_KUEUE_BIN_DIR, else the user cache (about 10 minutes cold)."""
find_kueue_dir = BUILD.find


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
class _StateFile(JsonState):
    """The shape of <cluster>/kueue/state.json: one manager, so one `pid`. Kept as it always was, so
    that a manager started by earlier code is still found and stopped."""

    bin_dir: str
    pid: int
    ports: dict[str, int]


class KueueState(AddonState):
    """The manager's AddonState, saved in _StateFile's shape."""

    def save(self, path: Path) -> None:
        _StateFile(bin_dir=self.bin_dir, pid=self.pids[BINARY], ports=self.ports).save(path)

    @classmethod
    def load(cls, path: Path) -> Self | None:
        saved = _StateFile.load(path)
        return None if saved is None else cls(bin_dir=saved.bin_dir, pids={BINARY: saved.pid}, ports=saved.ports)


class Kueue(HostAddon[KueueState]):
    """Kueue's manager for one running devcluster (see the module docstring for what it sets up)."""

    build = BUILD
    crd_names = CRD_NAMES
    readiness = "kueue's /readyz"
    state_type = KueueState

    def __init__(self, cluster: Cluster, bin_dir: str | os.PathLike[str] | None = None,
                 frameworks: tuple[str, ...] = DEFAULT_FRAMEWORKS) -> None:
        """`frameworks` are Kueue's built-in integrations to enable (`integrations.frameworks`), e.g.
        ("batch/job", "kubeflow.org/tfjob"). Kueue sets up a framework's controller once the API of its
        kind is served (polling with a backoff of up to two minutes), so start the manager after the
        framework's CRD is installed."""
        super().__init__(cluster, bin_dir)
        self.frameworks = tuple(frameworks)

    # ------------------------------------------------------------------ facts

    @property
    def config_file(self) -> Path:
        return self.dir / "config.yaml"

    @property
    def cert_dir(self) -> Path:
        """The webhook server's certDir (tls.crt, tls.key)."""
        return self.dir / "certs"

    @property
    def port_names(self) -> tuple[str, ...]:
        """`ports` is {"webhook": port, "health": port} (both on 127.0.0.1)."""
        return ("webhook", "health")

    @property
    def pid(self) -> int | None:
        return self.pids.get(BINARY)

    def ready(self) -> bool:
        """True when the manager's /readyz answers 200 (its webhook server listens)."""
        return self._state is not None and http_ok(self._state.ports["health"], "/readyz")

    # ------------------------------------------------------------------ set-up

    def _install(self) -> None:
        """The CRDs, the namespace, the webhook server's certificate and the metrics certificate."""
        self.install_crds()
        self._ensure_namespace()
        self_signed_pair(self.cert_dir, "kueue-webhook")
        self._metrics_certs()

    def _ensure_namespace(self) -> None:
        try:
            self.cluster.api.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                          "metadata": {"name": NAMESPACE}})
        except ApiError as error:
            if error.status != 409:
                raise

    def _publish_configuration(self, text: str) -> None:
        """Create or update the ConfigMap holding the Configuration (as Kueue's installs have it)."""
        path = f"/api/v1/namespaces/{NAMESPACE}/configmaps"
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": CONFIG_MAP, "namespace": NAMESPACE},
                "data": {CONFIG_KEY: text}}
        try:
            self.cluster.api.post(path, body)
        except ApiError as error:
            if error.status != 409:
                raise
            self.cluster.api.merge_patch(f"{path}/{CONFIG_MAP}", {"data": {CONFIG_KEY: text}})

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

    def _prepare(self, state: KueueState) -> dict[str, list[str]]:
        text = yaml.safe_dump(self.configuration(state.ports), sort_keys=False)
        self.config_file.write_text(text)
        self._publish_configuration(text)
        return {BINARY: [str(Path(state.bin_dir) / BINARY), f"--config={self.config_file}"]}
