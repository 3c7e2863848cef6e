"""Builders of the TensorFlowJob, role and pod dicts that tests feed to the operator's code or to a cluster.

Plain dicts, built fresh on every call, so callers may change them (only what a caller passes in,
such as `tfjob`'s spec, is used as it is). The pieces compose: `tfjob(name, {"worker": role(2)},
namespace="ns")` is a whole job; `container` and `role` give its parts; `devcluster_role` is a role
for jobs run on the devcluster (the real image, restartPolicy OnFailure, KWOK's simulated exit);
`make_job` is the defaulted job `ns/j` the planner tests use and `pods_for` its pods as the cache
would show them; `pod_manifest` is a bare Pod.

`tfjob`, `container`, `role` and `pod_manifest` add nothing a caller did not ask for: a role has a
`restartPolicy` only when given one, a job's metadata holds exactly the keywords passed.
"""

from __future__ import annotations

import copy
from typing import Any

from controller.job.builders import build_pods
from controller.job.kinds import TENSORFLOWJOB
from tfjob_api.defaults import apply_defaults

API_VERSION = "kubeflow.org/v1"
KIND = "TensorFlowJob"
ROLES = ("chief", "ps", "worker", "evaluator")

# Unit tests never run an image, so any name does.
PLACEHOLDER_IMAGE = "tf"
# What the devcluster's pods "run" (KWOK never pulls it), as in the manifests' examples.
DEVCLUSTER_IMAGE = "tensorflow/tensorflow:2.21.0"

# Pod template annotations the devcluster's KWOK stages act on: exit with this code, this long after the start.
SIM_EXIT_CODE = "sim.tensorflowjob.kubeflow.org/exit-code"
SIM_EXIT_AFTER = "sim.tensorflowjob.kubeflow.org/exit-after"


def tfjob(name: str, spec: dict[str, Any], **metadata: Any) -> dict[str, Any]:
    """A TensorFlowJob named `name` with this spec; `metadata` keywords (namespace, uid, labels,
    generation, resourceVersion, ...) go into its metadata as given, in order."""
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": name, **metadata}, "spec": spec}


def container(image: str = PLACEHOLDER_IMAGE, *, name: str = "tensorflow", port: int | None = None,
              requests: dict[str, str] | None = None, **fields: Any) -> dict[str, Any]:
    """A container (the TensorFlow one unless named otherwise); `port` becomes its `tfjob-port`,
    `requests` its resource requests; other keywords are container fields."""
    built: dict[str, Any] = {"name": name, "image": image}
    if port is not None:
        built["ports"] = [{"name": "tfjob-port", "containerPort": port}]
    if requests is not None:
        built["resources"] = {"requests": dict(requests)}
    built.update(copy.deepcopy(fields))
    return built


def role(replicas: int = 1, *, policy: str | None = None, image: str = PLACEHOLDER_IMAGE,
         containers: list[dict[str, Any]] | None = None, labels: dict[str, str] | None = None,
         annotations: dict[str, str] | None = None, exit_code: int | None = None, exit_after: str | None = None,
         **pod_spec: Any) -> dict[str, Any]:
    """A replica spec: `replicas` pods of one TensorFlow container with `image` (or of `containers`).

    `policy` is the restartPolicy (left out when None); `labels` and `annotations` go on the pod
    template, and `exit_code` / `exit_after` add the annotations KWOK simulates an exit from; other
    keywords are pod spec fields (volumes, nodeSelector, ...)."""
    notes = dict(annotations or {})
    if exit_code is not None:
        notes[SIM_EXIT_CODE] = str(exit_code)
    if exit_after is not None:
        notes[SIM_EXIT_AFTER] = exit_after
    template: dict[str, Any] = {}
    if labels or notes:
        template["metadata"] = {}
    if labels:
        template["metadata"]["labels"] = dict(labels)
    if notes:
        template["metadata"]["annotations"] = notes
    template["spec"] = {"containers": copy.deepcopy(containers) if containers is not None else [container(image)],
                        **copy.deepcopy(pod_spec)}
    spec: dict[str, Any] = {"replicas": replicas}
    if policy is not None:
        spec["restartPolicy"] = policy
    spec["template"] = template
    return spec


def devcluster_role(replicas: int = 1, *, policy: str = "OnFailure",
                    containers: list[dict[str, Any]] | None = None, annotations: dict[str, str] | None = None,
                    exit_code: int | None = None, exit_after: str | None = None) -> dict[str, Any]:
    """A role of a job run on the devcluster: DEVCLUSTER_IMAGE, restartPolicy OnFailure unless told
    otherwise, and when `exit_code` is given its pods exit with it (`exit_after` their start)."""
    return role(replicas, policy=policy, image=DEVCLUSTER_IMAGE, containers=containers, annotations=annotations,
                exit_code=exit_code, exit_after=exit_after)


def make_job(**spec: Any) -> dict[str, Any]:
    """Job `ns/j` (uid `job-uid`, generation 1) with the CRD's defaults applied, as the planner sees it.

    Role keywords (chief, ps, worker, evaluator) are a replica count (restartPolicy OnFailure) or a
    `(replicas, restartPolicy)` pair; the other keywords are spec fields: `make_job(worker=(2, "Never"),
    backoffLimit=1)`."""
    roles: dict[str, Any] = {}
    for name, value in spec.items():
        if name in ROLES:
            replicas, policy = value if isinstance(value, tuple) else (value, "OnFailure")
            roles[name] = role(replicas, policy=policy)
    rest = {key: value for key, value in spec.items() if key not in ROLES}
    return apply_defaults(tfjob("j", {**roles, **rest}, namespace="ns", uid="job-uid", generation=1))


def pods_for(job: dict[str, Any], phase: str = "Running", *, node: str | None = "node-1", uid: str = "uid-{name}",
             **metadata: Any) -> list[dict[str, Any]]:
    """The pods the operator builds for `job` (its defaults applied, as `make_job` gives it), as the
    cache shows them once created: each with a uid (`uid` formatted with the pod's `name` and `index`
    in build order), the extra `metadata` (e.g. deletionTimestamp), `phase`, and bound to `node`
    (unless None)."""
    pods = build_pods(job, "", (), TENSORFLOWJOB)
    for index, pod in enumerate(pods):
        pod["metadata"].update(uid=uid.format(name=pod["metadata"]["name"], index=index), **metadata)
        pod["status"] = {"phase": phase}
        if node is not None:
            pod["spec"]["nodeName"] = node
    return pods


def pod_manifest(name: str, *, containers: list[dict[str, Any]] | None = None, labels: dict[str, str] | None = None,
                 annotations: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    """A bare Pod (no owner) of `containers`, by default one TensorFlow container with DEVCLUSTER_IMAGE;
    `labels` and `annotations` are set when given (even empty); other keywords are pod spec fields."""
    metadata: dict[str, Any] = {"name": name}
    if labels is not None:
        metadata["labels"] = dict(labels)
    if annotations is not None:
        metadata["annotations"] = dict(annotations)
    pod_spec = {**copy.deepcopy(spec),
                "containers": copy.deepcopy(containers) if containers is not None else [container(DEVCLUSTER_IMAGE)]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": pod_spec}
