"""The examples as the disruption scenarios run them, and what one disruption cost their training.

Each example is applied as shipped, with what a user adds to see progress and to place the pods: the
repository's `tfheartbeat` mounted beside the program (the examples report their step through it when
it can be imported) and `spec.progress` read every 10 s, so `status.progress.lastResume` and the
`TrainingResumed` event say when training resumed and from which step; fewer epochs than shipped, so
a disruption at a few epochs in leaves most of the run to train through; and a placement with exactly
one pod to disrupt on the second node (all-reduce: one worker per node; parameter servers: the chief
and the parameter server on the first node, one worker on each).

What a disruption cost (`Cost`) is read from three places, since each sees a part: the operator's
`lastResume` (the last step it read before the interruption, and when it read the first report after
it), the program's own log lines (the step its checkpoint was written at on SIGTERM, the step it
resumed from), and the job's status at the end (its state, `restartCount`).
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from tests.real.jobs import documents, provide_storage
from tests.real.kubectl import Kubectl
from tests.real.reporting import PERIOD
from tfjob_api.names import JOB_NAME_LABEL, REPLICA_TYPE_LABEL
from tfjob_api.timeutil import parse_time

ROOT = Path(__file__).resolve().parents[3]
HOSTNAME = "kubernetes.io/hostname"
RESULTS = Path(os.environ.get("TFJOB_TEST_LOG_DIR", "/tmp/tfjob-operator-test-logs")) / "disruptions.jsonl"


@dataclass(frozen=True)
class Example:
    """One example as the scenarios run it."""

    file: str
    reporter: str  # the pod slot that reports progress and logs the resume ("worker-0", "chief-0")
    epochs: int
    steps_per_epoch: int
    resumed: str  # the reporter's log line on resuming; group 1 is the step (or epoch, see `per_match`)
    saved: str  # a log line on SIGTERM after the checkpoint was written; group 1 as above
    per_match: int  # steps per unit of those lines' group 1 (1: a step, steps_per_epoch: an epoch)
    checkpoint_interval: int  # the most steps a disruption with SIGTERM may cost

    @property
    def total_steps(self) -> int:
        return self.epochs * self.steps_per_epoch


ALLREDUCE = Example("allreduce.yaml", "worker-0", epochs=20, steps_per_epoch=50,
                    resumed=r"TASK worker/0 resumed at step (\d+)", saved=r"checkpoint written at step (\d+)",
                    per_match=1, checkpoint_interval=1)
PARAMETER_SERVER = Example("parameter-server.yaml", "chief-0", epochs=24, steps_per_epoch=20,
                           resumed=r"restored \S+ at epoch (\d+)", saved=r"checkpoint written at epoch (\d+)",
                           per_match=20, checkpoint_interval=20)
EXAMPLES = {"allreduce": ALLREDUCE, "parameter-server": PARAMETER_SERVER}


def with_tfheartbeat(config_map: dict[str, Any]) -> dict[str, Any]:
    """The example's ConfigMap with the tfheartbeat package beside its program (keys cannot hold a `/`)."""
    config_map = copy.deepcopy(config_map)
    for source in sorted((ROOT / "tfheartbeat").glob("*.py")):
        config_map["data"][f"tfheartbeat.{source.name}"] = source.read_text()
    return config_map


def _code_items() -> list[dict[str, str]]:
    return [{"key": "train.py", "path": "train.py"}] + [
        {"key": f"tfheartbeat.{p.name}", "path": f"tfheartbeat/{p.name}"} for p in sorted((ROOT / "tfheartbeat").glob("*.py"))]


def prepared(example: Example, job: dict[str, Any], first_node: str, *, labels: dict[str, str] | None = None,
             scratch_limit: str | None = None) -> dict[str, Any]:
    """The job as the scenario runs it (see the module docstring); `labels` on the job (Kueue's), and with
    `scratch_limit` an emptyDir of that sizeLimit at /scratch in every worker, to be filled past it."""
    job = copy.deepcopy(job)
    name, spec = job["metadata"]["name"], job["spec"]
    job["metadata"].setdefault("labels", {}).update(labels or {})
    spec["progress"] = {"periodSeconds": PERIOD}
    spec.pop("ttlSecondsAfterFinished", None)  # the test reads the job after it finished
    for role in ("chief", "ps", "worker", "evaluator"):
        if role not in spec:
            continue
        pod = spec[role]["template"]["spec"]
        for volume in pod.get("volumes") or []:
            if "configMap" in volume:
                volume["configMap"]["items"] = _code_items()
        container = pod["containers"][0]
        container.setdefault("env", []).append({"name": "PYTHONPATH", "value": "/code"})
        if role == "worker" and scratch_limit:
            pod["volumes"].append({"name": "scratch", "emptyDir": {"sizeLimit": scratch_limit}})
            container.setdefault("volumeMounts", []).append({"name": "scratch", "mountPath": "/scratch"})
    trainer = "chief" if "chief" in spec else "worker"
    command = spec[trainer]["template"]["spec"]["containers"][0]["command"]
    command[:] = [arg for arg in command if not arg.startswith("--epochs")] + [f"--epochs={example.epochs}"]
    workers = {"matchLabels": {JOB_NAME_LABEL: name, REPLICA_TYPE_LABEL: "worker"}}
    spec["worker"]["template"]["spec"]["affinity"] = {"podAntiAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 100, "podAffinityTerm": {"topologyKey": HOSTNAME, "labelSelector": workers}}]}}
    for role in ("chief", "ps"):
        if role in spec:
            spec[role]["template"]["spec"]["nodeSelector"] = {HOSTNAME: first_node}
    return job


def apply(kubectl: Kubectl, example: Example, first_node: str, **options: Any) -> str:
    """Apply the example `prepared` (with its storage); return the job's name."""
    docs = []
    for doc in documents(example.file):
        if doc["kind"] == "ConfigMap":
            doc = with_tfheartbeat(doc)
        elif doc["kind"] == "TensorFlowJob":
            doc = prepared(example, doc, first_node, **options)
            provide_storage(kubectl, doc)
            name = str(doc["metadata"]["name"])
        docs.append(doc)
    kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs))
    return name


class PodLogs:
    """`kubectl logs -f` of every pod of a job as it is when the block starts, each until its container
    ends: the last lines of a pod being deleted (what it did on SIGTERM), which a follower of the whole
    job can miss once the pod is gone."""

    def __init__(self, kubectl: Kubectl, job: str) -> None:
        self.kubectl, self.job = kubectl, job
        self.processes: list[subprocess.Popen[str]] = []
        self.output = ""

    def __enter__(self) -> PodLogs:
        cluster = self.kubectl.cluster
        for pod in self.kubectl.pods(self.job):
            argv = [str(cluster.bin_dir / "kubectl"), f"--kubeconfig={cluster.kubeconfig}", "-n",
                    self.kubectl.namespace, "logs", "-f", pod["metadata"]["name"]]
            self.processes.append(subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True))
        return self

    def __exit__(self, *_: object) -> None:
        for process in self.processes:
            try:
                out, _err = process.communicate(timeout=2)  # a pod still running: its stream is cut
            except subprocess.TimeoutExpired:
                process.terminate()
                out, _err = process.communicate(timeout=10)
            self.output += out


def progress(kubectl: Kubectl, name: str) -> dict[str, Any]:
    return (kubectl.job(name).get("status") or {}).get("progress") or {}


def pods_on(kubectl: Kubectl, job: str, node: str, role: str = "worker") -> list[dict[str, Any]]:
    return [p for p in kubectl.pods(job) if p["metadata"]["labels"].get(REPLICA_TYPE_LABEL) == role
            and p["spec"].get("nodeName") == node and not p["metadata"].get("deletionTimestamp")]


def resumed_event(kubectl: Kubectl, name: str) -> str:
    """The message of the job's latest TrainingResumed event ('' when there is none)."""
    events = kubectl.json("events", "--field-selector", f"involvedObject.name={name},reason=TrainingResumed")["items"]
    return str(events[-1].get("message") or "") if events else ""


@dataclass
class Cost:
    """What one disruption cost one run of an example (None: not seen)."""

    example: str
    disruption: str
    step_before: int | None = None  # the last step the operator read before the interruption
    saved_at: int | None = None  # the step a SIGTERM checkpoint was written at (the program's log)
    resumed_at: int | None = None  # the step training resumed from (the reporter's log)
    steps_lost: int | None = None  # step_before - resumed_at (at least 0)
    operator_steps_lost: int | None = None  # lastResume.stepsLost (its `step` is the first report it read)
    seconds_to_training: float | None = None  # from the disruption to lastResume.time (up to a period late)
    seconds_to_resume_log: float | None = None  # from the disruption to the reporter's resume line
    steps_run_again: int = 0  # parameter-server chief: in-flight steps it scheduled again
    restart_count: int | None = None
    state: str = ""
    finished_epochs: int | None = None  # the last epoch the reporter logged
    event: str = ""
    notes: list[str] = field(default_factory=list)

    def read(self, example: Example, status: dict[str, Any], stamped_log: list[str], all_logs: str,
             disrupted_at: datetime) -> list[str]:
        """Fill in from the job's final status, the reporter's final log (`kubectl logs --timestamps`)
        and every pod's followed log; return the reporter's log without the timestamps."""
        stamps = [(parse_time(line.split(" ", 1)[0][:19] + "Z"), line.split(" ", 1)[-1]) for line in stamped_log]
        reporter_log = [text for _, text in stamps]
        self.state = str(status.get("state") or "")
        self.restart_count = int(status.get("restartCount") or 0)
        resume = (status.get("progress") or {}).get("lastResume") or {}
        if resume:
            self.step_before = resume.get("stepBefore")
            self.operator_steps_lost = resume.get("stepsLost")
            resumed_time = parse_time(resume.get("time"))
            if resumed_time is not None:
                self.seconds_to_training = round((resumed_time - disrupted_at).total_seconds(), 1)
        found = [(int(m[1]) * example.per_match, moment) for moment, line in stamps
                 if (m := re.search(example.resumed, line))]
        if found:
            self.resumed_at, moment = found[-1]
            if moment is not None:
                self.seconds_to_resume_log = round((moment - disrupted_at).total_seconds(), 1)
        elif resume:
            self.resumed_at = 0  # it resumed (the operator saw it) with no checkpoint to resume from: from the start
            self.notes.append("started over from step 0")
        saved = [int(m[1]) * example.per_match for m in re.finditer(example.saved, all_logs)]
        self.saved_at = max(saved) if saved else None
        if self.step_before is not None and self.resumed_at is not None:
            self.steps_lost = max(0, self.step_before - self.resumed_at)
        self.steps_run_again = sum(int(m[1]) for m in re.finditer(r"(\d+) steps lost to", all_logs))
        epochs = [int(m[1]) for line in reporter_log if (m := re.match(r"epoch (\d+)/", line))]
        self.finished_epochs = epochs[-1] if epochs else None
        return reporter_log

    def record(self) -> None:
        """Print it and append it to RESULTS (one JSON line per run), for bench/RESULTS.md."""
        line = json.dumps(asdict(self), sort_keys=True)
        print(f"DISRUPTION COST {line}")
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        with RESULTS.open("a") as out:
            out.write(line + "\n")
