"""`tfjob-operator render` prints exactly what the operator creates, checked against the operator itself.

Every example of manifests/examples/ (TensorFlowJobs) and a Kubeflow TFJob with a Master replica are
`kubectl apply`-ed into a namespace watched by an operator run with network policy on or off and
`--gang-scheduler` none, scheduler-plugins or kubernetes (Kubernetes' own Workload and PodGroup,
served by the local cluster's API server), and `render` with the same flags is run on the same
files. The objects must be the same ones (kind and name, none missing, none extra), and every field
render sets must hold the same value on the cluster. What only the API server can know or adds is
not compared: uid, resourceVersion, creationTimestamp, managedFields, status, the owner reference
(render has no uid to own by; the test checks the job's instead), defaults, and what admission
appends to a pod (the ServiceAccount token volume and its mounts, the not-ready/unreachable
tolerations). The other way round, labels and annotations are compared whole, and no field the
operator wrote (its `managedFields`, down to the first list) may be missing from the preview unless
it is one the API server defaults (`DEFAULTED`: written on the creator's behalf).

It lives beside the gang tests for their fixtures: scheduler-plugins' PodGroup CRD served without its
scheduler (`pod_group_api`, as in `make test`), and for Volcano -- whose pods are created only once
its scheduler admits the group, which `render` shows -- the real scheduler (`tools`).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from devcluster.cluster import Cluster
from kube import ApiError, Kube, resource_path
from tests.support.jobs import SIM_EXIT_AFTER, SIM_EXIT_CODE
from tests.support.operator import Operator
from tests.support.polling import until_empty
from tfjob_api.names import JOB_NAME_LABEL
from tfjob_api.quantity import QuantityError, parse_quantity

from ..conftest import ROOT, CrdScheme

EXAMPLES = sorted((ROOT / "manifests" / "examples").glob("*.yaml"))
MASTER_TFJOB = """
apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: with-master
  annotations: {team: vision}
spec:
  runPolicy:
    schedulingPolicy: {minAvailable: 2}
  tfReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
          - name: tensorflow
            image: tensorflow/tensorflow:2.21.0
            resources: {requests: {cpu: 500m, memory: 1Gi}}
    Worker:
      replicas: 2
      restartPolicy: OnFailure
      template:
        spec:
          containers:
          - name: tensorflow
            image: tensorflow/tensorflow:2.21.0
            resources: {limits: {cpu: "1", memory: 2Gi}}
"""
# Where admission appends to a list the operator sent (a prefix of the stored list is render's).
APPENDED = {"volumes", "volumeMounts", "tolerations"}
# Fields the API server defaults when a create leaves them out; managedFields counts them as the creator's.
DEFAULTED = {
    "Pod": {".spec.dnsPolicy", ".spec.enableServiceLinks", ".spec.schedulerName", ".spec.securityContext",
            ".spec.terminationGracePeriodSeconds"},
    "Service": {".spec.internalTrafficPolicy", ".spec.sessionAffinity", ".spec.type"},
    "PodGroup": {".spec.disruptionMode", ".spec.disruptionMode.single"},  # scheduling.k8s.io/v1beta1's default
}
JOB_KINDS = {"TensorFlowJob": "tensorflowjobs", "TFJob": "tfjobs"}
POD_GROUP_APIS = {"scheduler-plugins": ("scheduling.x-k8s.io", "v1alpha1"),
                  "volcano": ("scheduling.volcano.sh", "v1beta1"),
                  "kubernetes": ("scheduling.k8s.io", "v1beta1")}

FLAGS = [pytest.param((policy, gang), id=f"network-policy-{policy}-{gang}")
         for gang in ("none", "scheduler-plugins", "kubernetes") for policy in ("on", "off")]
FLAGS += [pytest.param((policy, "volcano"), id=f"network-policy-{policy}-volcano", marks=pytest.mark.tools)
          for policy in ("on", "off")]


@pytest.fixture
def both_kinds_served(crd_scheme: CrdScheme) -> None:
    """TFJobs served beside TensorFlowJobs (the TensorFlowJob CRD differs only in its short name)."""
    crd_scheme.use("kubeflow")


@pytest.fixture
def flags(request: pytest.FixtureRequest, both_kinds_served: None) -> list[str]:
    """The flags of this case, with the gang scheduler's API (or the scheduler) it needs."""
    policy, gang = request.param
    if gang == "scheduler-plugins":
        request.getfixturevalue("pod_group_api")
    elif gang == "volcano":
        request.getfixturevalue("volcano")
    return ["--network-policy", policy, "--gang-scheduler", gang]


@pytest.fixture
def drift_operator(flags: list[str], no_session_operator: None,
                   start_operator: Callable[..., Operator]) -> Iterator[Operator]:
    """The operator with this case's flags, in place of the session's."""
    yield start_operator(flags)


def in_namespace(path: Path, namespace: str, folder: Path) -> Path:
    """A copy of a manifest file with every document in `namespace`, as `kubectl apply -n` puts it, and
    without the local cluster's simulated exits: a chief that "exits 0 after 15 s" would finish its job,
    and the clean-up take its pods away, before a busy machine has compared them all."""
    documents = [without_simulated_exits(doc) for doc in yaml.safe_load_all(path.read_text()) if doc]
    for doc in documents:
        doc["metadata"]["namespace"] = namespace
    copy = folder / path.name
    copy.write_text(yaml.safe_dump_all(documents, sort_keys=False))
    return copy


def without_simulated_exits(value: Any) -> Any:
    """`value` with every annotation the KWOK stages read to end a pod (SIM_EXIT_CODE, SIM_EXIT_AFTER)
    left out, at any depth."""
    if isinstance(value, dict):
        return {key: without_simulated_exits(item) for key, item in value.items()
                if key not in (SIM_EXIT_CODE, SIM_EXIT_AFTER)}
    if isinstance(value, list):
        return [without_simulated_exits(item) for item in value]
    return value


def render(path: Path, flags: list[str]) -> list[dict[str, Any]]:
    result = subprocess.run([sys.executable, "-m", "controller.process.cli", "render", "-f", str(path), "-o", "json",
                             *flags], capture_output=True, text=True, timeout=60, cwd=ROOT, check=True)
    return json.loads(result.stdout)["items"]  # type: ignore[no-any-return]


def object_path(obj: dict[str, Any], name: str | None = None) -> str:
    group, _, version = obj["apiVersion"].rpartition("/")
    plural = {"Pod": "pods", "Service": "services", "NetworkPolicy": "networkpolicies",
              "PodGroup": "podgroups", "Workload": "workloads"}[obj["kind"]]
    return resource_path(group, version, plural, obj["metadata"]["namespace"], name)


def get(api: Kube, obj: dict[str, Any]) -> dict[str, Any] | None:
    try:
        return api.get(object_path(obj, obj["metadata"]["name"]))
    except ApiError as error:
        if error.not_found:
            return None
        raise


def same_quantity(path: str, rendered: Any, stored: Any) -> bool:
    """Resource quantities the API server wrote in other units (`1000m` as `1`)."""
    if ".resources." not in path or not isinstance(rendered, str | int) or not isinstance(stored, str | int):
        return False
    try:
        return parse_quantity(rendered) == parse_quantity(stored)
    except QuantityError:
        return False


def differences(rendered: Any, stored: Any, path: str = "") -> list[str]:
    """Where the stored object does not hold what render set (its other fields are not looked at)."""
    if isinstance(rendered, dict):
        if not isinstance(stored, dict):
            return [f"{path}: the cluster has {stored!r}, render a map"]
        return [found for key, value in rendered.items()
                for found in (differences(value, stored[key], f"{path}.{key}") if key in stored
                              else [f"{path}.{key}: missing on the cluster (render: {value!r})"])]
    if isinstance(rendered, list):
        field = path.rsplit(".", 1)[-1].split("[")[0]
        if not isinstance(stored, list) or len(stored) < len(rendered) or (
                len(stored) > len(rendered) and field not in APPENDED):
            return [f"{path}: the cluster has {stored!r}, render {rendered!r}"]
        return [found for index, (one, other) in enumerate(zip(rendered, stored, strict=False))
                for found in differences(one, other, f"{path}[{index}]")]
    if rendered != stored and not same_quantity(path, rendered, stored):
        return [f"{path}: the cluster has {stored!r}, render {rendered!r}"]
    return []


def map_paths(obj: Any, prefix: str = "") -> set[str]:
    """The dotted paths of an object's map fields, down to the first list."""
    if not isinstance(obj, dict):
        return set()
    return {path for key, value in obj.items() for path in ({f"{prefix}.{key}"} | map_paths(value, f"{prefix}.{key}"))}


def managed_paths(fields: dict[str, Any], prefix: str = "") -> set[str]:
    """The same paths of a managedFields entry's fieldsV1 (`f:` keys; list items are not followed)."""
    return {path for key, value in fields.items() if key.startswith("f:")
            for path in ({f"{prefix}.{key[2:]}"} | managed_paths(value, f"{prefix}.{key[2:]}"))}


def written_by_operator(stored: dict[str, Any]) -> set[str]:
    """What the operator's create wrote: the managedFields entries of writes to the object itself (the
    operator's; a scheduler or the kubelet writes the status subresource), but the status."""
    return {path for entry in stored["metadata"].get("managedFields") or [] if not entry.get("subresource")
            for path in managed_paths(entry["fieldsV1"])
            if not path.startswith(".status") and path != ".metadata.ownerReferences"}


def drift(rendered: dict[str, Any], stored: dict[str, Any], owner: dict[str, Any]) -> list[str]:
    """How the operator's object differs from render's: the fields render sets, labels and annotations
    whole, the fields the operator wrote, and an owner reference to the job."""
    label = f"{rendered['kind']} {rendered['metadata']['name']}"
    found = differences({**rendered, "metadata": {k: v for k, v in rendered["metadata"].items()
                                                  if k not in ("labels", "annotations")}}, stored)
    unseen = written_by_operator(stored) - map_paths(rendered) - DEFAULTED.get(rendered["kind"], set())
    found += [f"{path}: written by the operator, not shown by render" for path in sorted(unseen)]
    for field in ("labels", "annotations"):
        if (rendered["metadata"].get(field) or {}) != (stored["metadata"].get(field) or {}):
            found.append(f".metadata.{field}: the cluster has {stored['metadata'].get(field)}, "
                         f"render {rendered['metadata'].get(field)}")
    references = stored["metadata"].get("ownerReferences") or []
    if [(r["kind"], r["name"], r["uid"], r.get("controller")) for r in references] != [
            (owner["kind"], owner["metadata"]["name"], owner["metadata"]["uid"], True)]:
        found.append(f".metadata.ownerReferences: {references}, not the job's")
    return [f"{label}{where}" for where in found]


def jobs_of(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc and doc.get("kind") in JOB_KINDS]


def stored_job(api: Kube, job: dict[str, Any]) -> dict[str, Any]:
    meta = job["metadata"]
    return api.get(resource_path("kubeflow.org", "v1", JOB_KINDS[job["kind"]], meta["namespace"], meta["name"]))


def names_on_cluster(api: Kube, namespace: str, gang: str) -> set[tuple[str, str]]:
    """Every object of the kinds render prints in the namespace, as (kind, name)."""
    kinds = [("Pod", "", "v1", "pods"), ("Service", "", "v1", "services"),
             ("NetworkPolicy", "networking.k8s.io", "v1", "networkpolicies")]
    if gang in POD_GROUP_APIS:
        kinds.append(("PodGroup", *POD_GROUP_APIS[gang], "podgroups"))
    if gang == "kubernetes":  # the PodGroup is made from the job's scheduling Workload
        kinds.append(("Workload", *POD_GROUP_APIS[gang], "workloads"))
    return {(kind, item["metadata"]["name"]) for kind, group, version, plural in kinds
            for item in api.list(resource_path(group, version, plural, namespace))["items"]}


@pytest.mark.parametrize("flags", FLAGS, indirect=True)
def test_render_shows_exactly_what_the_operator_creates_for_every_example_and_a_master(
        flags: list[str], drift_operator: Operator, cluster: Cluster, api: Kube, namespace: str,
        tmp_path: Path) -> None:
    master = tmp_path / "with-master.source.yaml"
    master.write_text(MASTER_TFJOB)
    files = [in_namespace(path, namespace, tmp_path) for path in [*EXAMPLES, master]]
    rendered = [obj for path in files for obj in render(path, flags)]
    for path in files:
        cluster.kubectl("apply", "-f", str(path))

    until_empty(lambda: [f"{o['kind']} {o['metadata']['name']}" for o in rendered if get(api, o) is None], 90,
                "the operator to create every object render printed")
    owners = {job["metadata"]["name"]: stored_job(api, job) for path in files for job in jobs_of(path)}
    found = []
    for obj in rendered:
        stored = get(api, obj)
        assert stored is not None
        job_name = stored["metadata"]["labels"][JOB_NAME_LABEL]
        found += drift(obj, stored, owners[job_name])
    assert found == []
    gang = flags[-1]
    assert names_on_cluster(api, namespace, gang) == {(o["kind"], o["metadata"]["name"]) for o in rendered}
    assert len(owners) == len(EXAMPLES) + 1
