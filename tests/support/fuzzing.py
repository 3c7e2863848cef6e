"""Hypothesis strategies for bad (and barely good) TensorFlowJobs, and for what the planner observes.

`candidates()` draws a `Candidate`: a job document plus what must happen to it —
* `valid`: edge cases admission accepts and the operator runs (zero-replica roles, one-replica
  jobs, long names, sidecars before the TensorFlow container, a user TF_CONFIG, ports at the
  limits, every policy, suspend, TTL 0, a 1 s deadline, ...);
* `rejected`: one invalid mutation of a valid job, with the field admission must name (`field`);
* `invalid-spec`: admitted by the CRD but not runnable (only `tfjob-operator validate` and the
  operator see it): the job must end Failed/InvalidSpec;
* `bad-template`: valid for the CRD and for validation, refused by the API server's pod validation:
  Failed/InvalidPodTemplate.
`wild_specs()` puts arbitrary JSON where the known fields go (a job stored before a rule existed),
and `observed_pods()` draws the pods a job might have in the cache, in every state.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from tests.support.jobs import DEVCLUSTER_IMAGE, ROLES, SIM_EXIT_AFTER, SIM_EXIT_CODE, tfjob
from tfjob_api.names import JOB_NAME_LABEL, REPLICA_INDEX_LABEL, REPLICA_TYPE_LABEL

POLICIES = ("Never", "OnFailure", "Always", "ExitCode")
JOB_UID = "0b0e6c1c-0000-4000-8000-00000000f022"


@dataclass(frozen=True)
class Candidate:
    job: dict[str, Any]
    kind: str  # valid | rejected | invalid-spec | bad-template
    field: str = ""  # for `rejected`: what the admission message must name
    note: str = ""


# ---- valid jobs ---------------------------------------------------------------------------------

EXITS = st.sampled_from([None, ("0", "2s"), ("0", "1s"), ("1", "2s"), ("137", "1s")])


@st.composite
def templates(draw: st.DrawFn) -> dict[str, Any]:
    tensorflow: dict[str, Any] = {"name": "tensorflow", "image": DEVCLUSTER_IMAGE}
    if draw(st.booleans()):
        tensorflow["ports"] = [{"name": "tfjob-port", "containerPort": draw(st.sampled_from([1, 2222, 8470, 65535]))}]
    if draw(st.booleans()):
        tensorflow["env"] = [{"name": "TF_CONFIG", "value": "{}"}, {"name": "OTHER", "value": "x"}]
    containers = [tensorflow]
    if draw(st.booleans()):
        containers.insert(0, {"name": "sidecar", "image": "busybox"})
    template: dict[str, Any] = {"spec": {"containers": containers}}
    exit_with = draw(EXITS)
    if exit_with:
        template["metadata"] = {"annotations": {SIM_EXIT_CODE: exit_with[0], SIM_EXIT_AFTER: exit_with[1]}}
    return template


@st.composite
def role_specs(draw: st.DrawFn, replicas: st.SearchStrategy[int]) -> dict[str, Any]:
    spec: dict[str, Any] = {"template": draw(templates())}
    count = draw(replicas)
    if count != 1 or draw(st.booleans()):  # replicas: 1 is the default, so it may be left out
        spec["replicas"] = count
    if draw(st.booleans()):
        spec["restartPolicy"] = draw(st.sampled_from(POLICIES))
    return spec


@st.composite
def valid_specs(draw: st.DrawFn) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if draw(st.booleans()):
        spec["chief"] = draw(role_specs(st.integers(0, 1)))
    chief = spec.get("chief", {}).get("replicas", 1) if "chief" in spec else 0
    if not chief or draw(st.booleans()):
        spec["worker"] = draw(role_specs(st.integers(0 if chief else 1, 3)))
    if draw(st.booleans()):
        spec["ps"] = draw(role_specs(st.integers(0, 2)))
    if draw(st.booleans()):
        spec["evaluator"] = draw(role_specs(st.integers(0, 1)))
    workers = spec.get("worker", {}).get("replicas", 1) if "worker" in spec else 0
    optional = {
        "cleanPodPolicy": st.sampled_from(["None", "All", "Running"]),
        "ttlSecondsAfterFinished": st.sampled_from([0, 1, 30]),
        "activeDeadlineSeconds": st.sampled_from([1, 5, 600]),
        "backoffLimit": st.sampled_from([0, 1, 6]),
        "successPolicy": st.sampled_from(["", "AllWorkers"] if workers else [""]),
        "restartScope": st.sampled_from(["Pod", "All"]),
        "suspend": st.booleans(),
    }
    for key, values in optional.items():
        if draw(st.integers(0, 3)) == 0:
            spec[key] = draw(values)
    return spec


NAME_LENGTHS = st.one_of(st.integers(6, 12), st.integers(48, 51))  # 51 + len("-evaluator-0") = 63


@st.composite
def names(draw: st.DrawFn) -> str:
    length = draw(NAME_LENGTHS)
    body = draw(st.text("abcdefghijklmnopqrstuvwxyz0123456789-", min_size=length - 2, max_size=length - 2))
    return "j" + body + "z"


# ---- invalid mutations: (field admission must name, change) ------------------------------------------

def _set(path: list[str | int], value: Any) -> Any:
    def change(doc: dict[str, Any]) -> None:
        target: Any = doc
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return change


def _delete(path: list[str | int]) -> Any:
    def change(doc: dict[str, Any]) -> None:
        target: Any = doc
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]
    return change


def _too_long(doc: dict[str, Any]) -> None:
    doc["metadata"]["name"] = "j" + "a" * 52 + "z"  # 54 + len("-worker-9") = 63 is allowed; "-worker-10" is not
    doc["spec"].pop("evaluator")
    doc["spec"]["worker"]["replicas"] = 11


def _upper(doc: dict[str, Any]) -> None:
    doc["metadata"]["name"] = "Job" + doc["metadata"]["name"][3:]


def _no_runner(doc: dict[str, Any]) -> None:
    doc["spec"].pop("chief", None)
    doc["spec"]["worker"]["replicas"] = 0


WORKER_CONTAINER = ["spec", "worker", "template", "spec", "containers", -1]

MUTATIONS: list[tuple[str, str, Any]] = [
    ("chief replicas 2", "spec.chief.replicas", _set(["spec", "chief", "replicas"], 2)),
    ("evaluator replicas 3", "spec.evaluator.replicas", _set(["spec", "evaluator", "replicas"], 3)),
    ("negative workers", "spec.worker.replicas", _set(["spec", "worker", "replicas"], -1)),
    ("replicas as text", "spec.worker.replicas", _set(["spec", "worker", "replicas"], "two")),
    ("unknown restart policy", "spec.ps.restartPolicy", _set(["spec", "ps", "restartPolicy"], "Sometimes")),
    ("unknown cleanPodPolicy", "spec.cleanPodPolicy", _set(["spec", "cleanPodPolicy"], "Some")),
    ("unknown successPolicy", "spec.successPolicy", _set(["spec", "successPolicy"], "AnyWorker")),
    ("unknown restartScope", "spec.restartScope", _set(["spec", "restartScope"], "Job")),
    ("negative backoffLimit", "spec.backoffLimit", _set(["spec", "backoffLimit"], -1)),
    ("negative TTL", "spec.ttlSecondsAfterFinished", _set(["spec", "ttlSecondsAfterFinished"], -5)),
    ("zero deadline", "spec.activeDeadlineSeconds", _set(["spec", "activeDeadlineSeconds"], 0)),
    ("suspend as text", "spec.suspend", _set(["spec", "suspend"], "yes")),
    ("misspelt role", "spec.workers", _set(["spec", "workers"], {"replicas": 1})),
    ("empty image", "spec.worker.template.spec.containers", _set([*WORKER_CONTAINER, "image"], "")),
    ("no containers", "spec.worker.template.spec.containers", _delete(["spec", "worker", "template", "spec",
                                                                       "containers"])),
    ("container without a name", "spec.worker.template.spec.containers", _delete([*WORKER_CONTAINER, "name"])),
    ("misspelt pod field", "spec.worker.template.spec.restartPolcy",
     _set(["spec", "worker", "template", "spec", "restartPolcy"], "Never")),
    ("port as text", "spec.worker.template.spec.containers",
     _set([*WORKER_CONTAINER, "ports"], [{"name": "tfjob-port", "containerPort": "x"}])),
    ("neither chief nor worker runs", "spec.chief or spec.worker", _no_runner),
    ("name too long for its pods", "metadata.name", _too_long),
    ("upper-case name", "metadata.name", _upper),
]


def base_for_mutation(name: str, template: dict[str, Any]) -> dict[str, Any]:
    """A valid job with every role present, so any mutation has something to change."""
    def role(replicas: int) -> dict[str, Any]:
        return {"replicas": replicas, "template": copy.deepcopy(template)}
    return tfjob(name, {"chief": role(1), "ps": role(1), "worker": role(2), "evaluator": role(1)})


@st.composite
def rejected(draw: st.DrawFn) -> Candidate:
    note, field, change = draw(st.sampled_from(MUTATIONS))
    job = base_for_mutation(draw(names()), draw(templates()))
    change(job)
    return Candidate(job, "rejected", field, note)


@st.composite
def valid(draw: st.DrawFn) -> Candidate:
    return Candidate(tfjob(draw(names()), draw(valid_specs())), "valid")


@st.composite
def invalid_specs(draw: st.DrawFn) -> Candidate:
    """Admitted by the CRD, refused by validation (so the operator must fail it with InvalidSpec)."""
    job = tfjob(draw(names()), draw(valid_specs()))
    spec = job["spec"]
    if draw(st.booleans()):
        role = spec.get("worker") or spec.get("chief")
        role["replicas"] = 1
        container = role["template"]["spec"]["containers"][-1]
        container["ports"] = [{"name": "tfjob-port", "containerPort": draw(st.sampled_from([0, 65536, 70000]))}]
        return Candidate(job, "invalid-spec", note="tfjob-port outside 1-65535")
    spec["chief"] = {"replicas": 1, "template": draw(templates())}
    spec["worker"] = {"replicas": 0, "template": draw(templates())}
    spec["successPolicy"] = "AllWorkers"
    return Candidate(job, "invalid-spec", note="AllWorkers without workers")


@st.composite
def bad_templates(draw: st.DrawFn) -> Candidate:
    """Valid for the CRD and for validation; the API server's pod validation refuses the pods."""
    job = tfjob(draw(names()), draw(valid_specs()))
    job["spec"].pop("suspend", None)  # a suspended job never tries to create its pods
    role = job["spec"].get("worker") or job["spec"]["chief"]
    role["replicas"] = max(1, role.get("replicas", 1))
    container = role["template"]["spec"]["containers"][-1]
    container["ports"] = [{"name": "a-port-name-that-is-too-long", "containerPort": 2222}]
    return Candidate(job, "bad-template", note="port name longer than 15 characters")


def candidates() -> st.SearchStrategy[Candidate]:
    return st.one_of(valid(), rejected(), invalid_specs(), bad_templates())


# ---- wild specs and observed pods, for the pure planner ------------------------------------------------

JSON = st.recursive(st.none() | st.booleans() | st.integers(-3, 70000) | st.floats(allow_nan=False) | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
                    max_leaves=8)
KEYS = st.sampled_from([*ROLES, "cleanPodPolicy", "ttlSecondsAfterFinished", "activeDeadlineSeconds", "backoffLimit",
                        "successPolicy", "restartScope", "suspend", "replicas", "template", "restartPolicy", "spec",
                        "containers", "ports", "name", "image", "containerPort"])


@st.composite
def wild_specs(draw: st.DrawFn) -> dict[str, Any]:
    """A valid spec with arbitrary JSON written over a few of its keys, at any depth."""
    spec = draw(valid_specs())
    for _ in range(draw(st.integers(1, 4))):
        target: Any = spec
        for _depth in range(draw(st.integers(0, 4))):
            children = [k for k, v in target.items() if isinstance(v, dict)] if isinstance(target, dict) else []
            if not children:
                break
            target = target[draw(st.sampled_from(sorted(children)))]
        if isinstance(target, dict):
            target[draw(KEYS)] = draw(JSON)
    return spec


PHASES = st.sampled_from(["Pending", "Running", "Succeeded", "Failed", "Unknown", None])
STAMPS = st.sampled_from([None, "2026-11-29T11:59:00Z", "2026-11-29T12:00:30Z", "not a time"])


@st.composite
def observed_pods(draw: st.DrawFn, job_name: str) -> list[dict[str, Any]]:
    pods = []
    for number in range(draw(st.integers(0, 8))):
        role = draw(st.sampled_from([*ROLES, "stranger"]))
        index = draw(st.sampled_from(["0", "1", "2", "5", "x", "-1"]))
        status: dict[str, Any] = {}
        phase = draw(PHASES)
        if phase:
            status["phase"] = phase
        if draw(st.booleans()):
            status["containerStatuses"] = [{
                "name": draw(st.sampled_from(["tensorflow", "sidecar"])),
                "restartCount": draw(st.integers(0, 5)),
                "state": {"terminated": {"exitCode": draw(st.sampled_from([0, 1, 2, 127, 128, 137, 143, 255]))}}
                if draw(st.booleans()) else {"running": {}},
            }]
        if draw(st.booleans()):
            status["reason"] = draw(st.sampled_from(["Evicted", "NodeLost", "Preempting", "Error", ""]))
        if draw(st.booleans()):
            status["conditions"] = [{"type": "DisruptionTarget", "status": draw(st.sampled_from(["True", "False"]))}]
        metadata: dict[str, Any] = {
            "name": f"{job_name}-{role}-{index}", "namespace": "ns", "uid": f"pod-{number}",
            "labels": {JOB_NAME_LABEL: job_name, REPLICA_TYPE_LABEL: role, REPLICA_INDEX_LABEL: index},
            "annotations": {"tensorflowjob.kubeflow.org/cluster-spec-hash": draw(st.sampled_from(["stale", "x"]))},
            "ownerReferences": [{"apiVersion": "kubeflow.org/v1", "kind": "TensorFlowJob", "name": job_name,
                                 "uid": JOB_UID, "controller": True}],
        }
        deleted_at = draw(STAMPS)
        if deleted_at:
            metadata["deletionTimestamp"] = deleted_at
        pods.append({"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
                     "spec": {"nodeName": draw(st.sampled_from(["", "node-a", "dead"])),
                              "containers": [{"name": "tensorflow", "image": DEVCLUSTER_IMAGE}]},
                     "status": status})
    return pods


@st.composite
def job_statuses(draw: st.DrawFn) -> dict[str, Any]:
    """A status the operator could have written earlier: any conditions, but at most one terminal one
    True, and Running/Restarting not True beside it."""
    status: dict[str, Any] = {}
    terminal = draw(st.sampled_from([None, "Succeeded", "Failed"]))
    conditions = []
    for kind in ("Created", "Running", "Restarting", "Succeeded", "Failed", "Suspended"):
        if kind == terminal:
            value = "True"
        elif draw(st.integers(0, 3)) != 0:
            continue
        elif kind in ("Succeeded", "Failed") or (terminal and kind in ("Running", "Restarting")):
            value = "False"
        else:
            value = draw(st.sampled_from(["True", "False"]))
        conditions.append({"type": kind, "status": value, "reason": "Earlier", "message": "",
                           "lastTransitionTime": "2026-11-29T11:00:00Z"})
    if conditions:
        status["conditions"] = conditions
    for key, values in (("startTime", STAMPS), ("completionTime", STAMPS),
                        ("restartCount", st.integers(0, 9)), ("retriedFailures", st.integers(0, 9))):
        if draw(st.booleans()):
            status[key] = draw(values)
    return status
