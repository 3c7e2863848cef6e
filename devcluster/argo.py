"""`ArgoWorkflows`: run Argo Workflows' real workflow controller against a devcluster.

The pipeline example (manifests/examples/pipelines/argo-workflow.yaml) is an Argo Workflow whose
`train` step creates a TensorFlowJob and waits for its outcome. To run it as a user would, the
devcluster runs Argo's own workflow controller, built with its executor and CLI from the Go module
by hack/build-argo.sh (v4.0.5, the version pinned there) into ~/.cache/tfjob-operator/argo-4.0.5/:

* **the workflow controller** runs as a host process with the admin kubeconfig, like Kueue here
  (devcluster/kueue.py): cluster-wide, in namespace `argo` (where it reads its ConfigMap), leader
  election off (`LEADER_ELECTION_DISABLE=true`). Its ConfigMap `workflow-controller-configmap`
  moves its metrics server to a free port of 127.0.0.1's choosing over plain HTTP (the default is
  9090 over TLS, which another program may hold), and `ready` waits for `/metrics` to answer there.
  It still serves `/healthz` on :6060, which Argo does not let one move: a second controller on the
  machine logs that the port is taken and runs on without it.
* **the executor** runs inside the workflow's pods, so it must be an image on the real node:
  `quay.io/argoproj/argoexec:v4.0.5`, built by devcluster/images.py from the same argoexec binary
  (`--only argoexec`) and imported by the caller (`Cluster.load_images`). The controller is told to
  use it with `IfNotPresent`, so no registry is ever asked.
* **the CRDs** are the module's minimal ones (manifests/base/crds/minimal), which the build script
  copies beside the binaries into `crd/`; they are applied server-side and waited for.

The workflow pods run as the Workflow's ServiceAccount: the RBAC they need is the example's
(manifests/examples/pipelines/rbac.yaml), applied by whoever submits the workflow, not here.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import yaml

from .addon import AddonBuild, AddonError, AddonState, HostAddon, http_ok
from .cluster import Cluster
from .image_spec import ARGOEXEC_NAME

REPO_DIR = Path(__file__).resolve().parent.parent
BUILD_ARGO = REPO_DIR / "hack" / "build-argo.sh"
CONTROLLER = "workflow-controller"
NAMESPACE = "argo"
CONFIGMAP = "workflow-controller-configmap"
CRD_NAMES = tuple(f"{plural}.argoproj.io" for plural in (
    "clusterworkflowtemplates", "cronworkflows", "workflowartifactgctasks", "workfloweventbindings",
    "workflows", "workflowtaskresults", "workflowtasksets", "workflowtemplates"))


class ArgoError(AddonError):
    """Argo's controller could not be built, installed or started (the message says which and why)."""


@dataclass(frozen=True)
class ArgoBuild(AddonBuild):
    """Argo's binaries come from hack/build-argo.sh, which pins the version and names the folder."""

    marker = "crd"  # the module's CRDs, copied beside the binaries last

    def folder(self) -> Path:
        done = subprocess.run(["bash", str(BUILD_ARGO), "dir"], capture_output=True, text=True, check=True)
        return Path(done.stdout.strip().splitlines()[-1])

    def build_command(self) -> list[str]:
        return ["bash", str(BUILD_ARGO)]


BUILD = ArgoBuild(name="argo", title="Argo Workflows", binaries=(CONTROLLER, "argoexec", "argo"),
                  cold_build="about 30 minutes on two busy cores", error=ArgoError)


def controller_configuration(metrics_port: int) -> dict[str, str]:
    """The data of the controller's ConfigMap: metrics on `metrics_port` over plain HTTP."""
    return {"metricsConfig": yaml.safe_dump({"enabled": True, "port": metrics_port, "secure": False})}


class ArgoWorkflows(HostAddon[AddonState]):
    """Argo's workflow controller for one running devcluster (see the module docstring). `ports` is
    {workflow-controller: port}: where its metrics answer on plain HTTP."""

    build = BUILD
    crd_names = CRD_NAMES
    readiness = "the workflow controller's /metrics"
    state_type = AddonState

    def __init__(self, cluster: Cluster, bin_dir: str | os.PathLike[str] | None = None,
                 executor_image: str = ARGOEXEC_NAME) -> None:
        super().__init__(cluster, bin_dir)
        self.executor_image = executor_image

    @property
    def port_names(self) -> tuple[str, ...]:
        return (CONTROLLER,)

    @property
    def cli(self) -> Path:
        """The `argo` CLI of the same build (it talks to the API server through the kubeconfig)."""
        return self.bin_dir / "argo"

    def ready(self) -> bool:
        return self._state is not None and http_ok(self._state.ports[CONTROLLER], "/metrics")

    def is_running(self) -> bool:
        """True when the controller runs (the executor and the CLI are not processes of the add-on)."""
        return self._state is not None and self._runs(CONTROLLER)

    def _install(self) -> None:
        self.install_crds()
        self.cluster.kubectl("create", "namespace", NAMESPACE, check=False)

    def _prepare(self, state: AddonState) -> dict[str, list[str]]:
        configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": CONFIGMAP, "namespace": NAMESPACE},
                     "data": controller_configuration(state.ports[CONTROLLER])}
        self.cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(configmap))
        return {CONTROLLER: [str(Path(state.bin_dir) / CONTROLLER), f"--kubeconfig={self.cluster.kubeconfig}",
                             f"--namespace={NAMESPACE}", f"--executor-image={self.executor_image}",
                             "--executor-image-pull-policy=IfNotPresent", "--qps=50", "--burst=100"]}

    def _environment(self) -> dict[str, str]:
        return {**super()._environment(), "LEADER_ELECTION_DISABLE": "true"}
