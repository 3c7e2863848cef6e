"""One training program on two TensorFlow versions through one start-up profiles file, on a real node.

The operator runs with `--profiles manifests/examples/profiles/tensorflow-versions.yaml`. The same Keras program
(tests/real/programs/keras_train.py) trains to Succeeded as a job of a chief and a worker on the
TensorFlow 2.15.1 image (Keras 2) and on the 2.21.0 image (Keras 3), both built by
devcluster/images.py; every pod's spec holds exactly the variables the file gives its version, and
every pod's program prints them back from its environment. A job whose image matches no profile
(the pause image) gets none.

The 2.15 image is built from PyPI the first time (about 3 minutes beside the cached base), which is
why this is a `tools` test: `make test-tools` runs it, `make test` does not.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from devcluster.cluster import Cluster
from devcluster.image_spec import PAUSE_NAME, TENSORFLOW_215_NAME, TENSORFLOW_NAME
from devcluster.images import build_images
from tests.real.costs import record
from tests.real.follow import PLUGIN
from tests.real.kubectl import Kubectl, wait_for
from tests.support.operator import Operator

pytestmark = pytest.mark.tools  # the second TensorFlow image is built from PyPI on first use

ROOT = Path(__file__).resolve().parents[2]
PROFILES = ROOT / "manifests" / "examples" / "profiles" / "tensorflow-versions.yaml"
PROGRAM = Path(__file__).resolve().parent / "programs" / "keras_train.py"
TRAINING_TIMEOUT = 900.0  # seconds: four TensorFlow pods start and train at once on two busy cores
PROFILE_PREFIXES = ("TF_NUM_", "TF_CPP_", "KERAS_")  # what the file sets (TF_CONFIG is the operator's own)

EXPECTED = {  # what manifests/examples/profiles/tensorflow-versions.yaml gives each image, in file order
    TENSORFLOW_215_NAME: {"TF_NUM_INTRAOP_THREADS": "2", "TF_NUM_INTEROP_THREADS": "1", "TF_CPP_MIN_LOG_LEVEL": "1"},
    TENSORFLOW_NAME: {"TF_NUM_INTRAOP_THREADS": "2", "TF_NUM_INTEROP_THREADS": "1", "KERAS_BACKEND": "tensorflow"},
}
VERSIONS = {TENSORFLOW_215_NAME: ("2.15.1", "2.15.0"), TENSORFLOW_NAME: ("2.21.0", "3.")}  # tensorflow, keras


@pytest.fixture
def profiled_operator(real_cluster: Cluster, operator: Operator) -> Iterator[Operator]:
    """The operator with the example's profiles in place of the session's; the session's afterwards."""
    started = time.monotonic()
    real_cluster.load_images(build_images(which=("tensorflow-2.15", "pause")).values())
    record("TensorFlow 2.15 image built or reused, and imported", time.monotonic() - started)
    operator.stop()
    profiled = Operator(str(real_cluster.kubeconfig), "operator-profiles", ["--profiles", str(PROFILES)]).start()
    try:
        yield profiled
    finally:
        profiled.stop()
        operator.start()


def job(name: str, image: str, command: list[str]) -> dict[str, Any]:
    """A chief and a worker running `command` in `image`, the program mounted at /code; pods kept."""
    def role() -> dict[str, Any]:
        return {"replicas": 1, "restartPolicy": "Never", "template": {"spec": {
            "containers": [{"name": "tensorflow", "image": image, "command": command,
                            "env": [{"name": "PYTHONUNBUFFERED", "value": "1"}],
                            "volumeMounts": [{"name": "code", "mountPath": "/code"}]}],
            "volumes": [{"name": "code", "configMap": {"name": "keras-train"}}]}}}
    return {"apiVersion": "kubeflow.org/v1", "kind": "TensorFlowJob", "metadata": {"name": name},
            "spec": {"cleanPodPolicy": "None", "chief": role(), "worker": role()}}


def profile_env(pod: dict[str, Any]) -> dict[str, str]:
    container = next(c for c in pod["spec"]["containers"] if c["name"] == "tensorflow")
    return {e["name"]: e["value"] for e in container.get("env") or [] if e["name"].startswith(PROFILE_PREFIXES)}


def finished(kubectl: Kubectl, names: list[str]) -> dict[str, str] | None:
    states = {name: kubectl.state(name) for name in names}
    return states if all(s in ("Succeeded", "Failed") for s in states.values()) else None


def logs(cluster: Cluster, namespace: str, name: str) -> str:
    done = subprocess.run([str(PLUGIN), "logs", name, "-n", namespace, f"--kubeconfig={cluster.kubeconfig}"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def why(kubectl: Kubectl, name: str) -> str:
    """The job's conditions and its containers' states, for a failure's message."""
    conditions = [(c["type"], c.get("reason"), c.get("message")) for c in kubectl.job(name)["status"]["conditions"]]
    containers = {pod["metadata"]["name"]: [(c.get("state"), c.get("lastState"))
                                            for c in (pod.get("status") or {}).get("containerStatuses") or []]
                  for pod in kubectl.pods(name)}
    return f"conditions: {conditions}\ncontainers: {containers}"


def printed_env(text: str, slot: str) -> dict[str, str]:
    line = next(line for line in text.splitlines() if line.startswith(f"[{slot}] ENV "))
    return {k: v for k, v in json.loads(line.split(" ENV ", 1)[1]).items() if k.startswith(PROFILE_PREFIXES)}


def test_one_program_trains_on_tensorflow_2_15_and_2_21_each_with_its_versions_profile(
        profiled_operator: Operator, kubectl: Kubectl, real_cluster: Cluster) -> None:
    kubectl("create", "configmap", "keras-train", f"--from-file=train.py={PROGRAM}")
    names = {TENSORFLOW_215_NAME: "keras-tf215", TENSORFLOW_NAME: "keras-tf221"}
    for image, name in names.items():
        kubectl("apply", "-f", "-", input=yaml.safe_dump(job(name, image, ["python", "/code/train.py"])))

    started = time.monotonic()
    states = wait_for(lambda: finished(kubectl, list(names.values())), TRAINING_TIMEOUT, "both jobs to finish")
    record("the Keras program on TensorFlow 2.15 and 2.21 at once, applied to finished", time.monotonic() - started)

    for image, name in names.items():
        text = logs(real_cluster, kubectl.namespace, name)
        assert states[name] == "Succeeded", f"{name} ended {states[name]}:\n{text[-4000:]}\n{why(kubectl, name)}"
        tensorflow, keras = VERSIONS[image]
        pods = kubectl.pods(name)
        assert len(pods) == 2
        for pod in pods:
            assert profile_env(pod) == EXPECTED[image], pod["metadata"]["name"]
        for slot in ("chief-0", "worker-0"):
            assert printed_env(text, slot) == EXPECTED[image], text[-3000:]
            role, index = slot.split("-")
            assert any(line.startswith(f"[{slot}] TASK {role}/{index} tensorflow {tensorflow} keras {keras}")
                       for line in text.splitlines()), text[-3000:]
        assert "[chief-0] TRAINING DONE loss=" in text, text[-3000:]


def test_a_job_whose_image_matches_no_profile_gets_none(profiled_operator: Operator, kubectl: Kubectl) -> None:
    # Only the pods' specs matter here: without the program's ConfigMap, no container starts.
    kubectl("apply", "-f", "-", input=yaml.safe_dump(job("unprofiled", PAUSE_NAME, ["/pause"])))
    kubectl("apply", "-f", "-", input=yaml.safe_dump(job("profiled", TENSORFLOW_NAME, ["python", "/code/train.py"])))

    unprofiled = wait_for(lambda: len(found := kubectl.pods("unprofiled")) == 2 and found, 120, "the pods of unprofiled")
    profiled = wait_for(lambda: len(found := kubectl.pods("profiled")) == 2 and found, 120, "the pods of profiled")

    assert [profile_env(pod) for pod in unprofiled] == [{}, {}]
    assert [profile_env(pod) for pod in profiled] == [EXPECTED[TENSORFLOW_NAME]] * 2
