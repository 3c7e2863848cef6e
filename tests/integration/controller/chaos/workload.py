"""Mixed TensorFlowJob workloads with known outcomes, for the chaos tests.

Each `PlannedJob` is a job spec plus what must become of it: the terminal state and reason, whether
every slot must keep its first pod for the job's whole life (no fault may make the operator create
a pod twice), a mid-run scale, a TTL. Durations come from the simulated pods' exit annotations
(`exit-after` counts from the container start), so a job's life is a few seconds to a minute.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from tests.support.jobs import devcluster_role

from ..conftest import TfJobs
from .watching import JobWatch, PodWatch

KINDS = ("workers", "chief-ps", "never", "scaled", "retry", "deadline", "ttl")
RETRY_BACKOFF_LIMIT = 2


@dataclass
class PlannedJob:
    name: str
    kind: str
    spec: dict[str, Any]
    state: str  # Succeeded | Failed
    reason: str
    single_incarnation: bool  # every slot keeps its first pod (nothing is recreated)
    scale_to: int | None = None
    scale_after: float = 0.0
    deleted_by_ttl: bool = False
    uid: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def create(self, tfjobs: TfJobs) -> None:
        self.uid = tfjobs.create(self.name, **self.spec)["metadata"]["uid"]


def plan_job(name: str, kind: str, duration: float) -> PlannedJob:
    """One job of `kind` whose deciding pod ends `duration` seconds after it starts."""
    after = f"{duration:.1f}s"
    if kind == "workers":
        spec = {"worker": devcluster_role(2, exit_code=0, exit_after=after)}
        return PlannedJob(name, kind, spec, "Succeeded", "JobSucceeded", True)
    if kind == "chief-ps":
        spec = {"chief": devcluster_role(1, exit_code=0, exit_after=after), "ps": devcluster_role(1),
                "worker": devcluster_role(2)}
        return PlannedJob(name, kind, spec, "Succeeded", "JobSucceeded", True)
    if kind == "never":
        spec = {"worker": devcluster_role(2, policy="Never", exit_code=1, exit_after=after)}
        return PlannedJob(name, kind, spec, "Failed", "ReplicaFailed", True)
    if kind == "scaled":
        spec = {"worker": devcluster_role(2, exit_code=0, exit_after=after)}
        return PlannedJob(name, kind, spec, "Succeeded", "JobSucceeded", False, scale_to=3,
                          scale_after=min(2.0, duration / 3))
    if kind == "retry":
        spec = {"worker": devcluster_role(1, policy="ExitCode", exit_code=137, exit_after="2s"),
                "backoffLimit": RETRY_BACKOFF_LIMIT}
        return PlannedJob(name, kind, spec, "Failed", "BackoffLimitExceeded", False)
    if kind == "deadline":
        spec = {"worker": devcluster_role(2), "activeDeadlineSeconds": max(5, round(duration))}
        return PlannedJob(name, kind, spec, "Failed", "DeadlineExceeded", True)
    if kind == "ttl":
        spec = {"worker": devcluster_role(1, exit_code=0, exit_after=after), "ttlSecondsAfterFinished": 2}
        return PlannedJob(name, kind, spec, "Succeeded", "JobSucceeded", True, deleted_by_ttl=True)
    raise ValueError(kind)


def mixed_jobs(rng: random.Random, count: int, prefix: str, min_duration: float, max_duration: float,
               kinds: tuple[str, ...] = KINDS) -> list[PlannedJob]:
    """`count` jobs cycling through `kinds` (so every kind is present), durations drawn from `rng`."""
    return [plan_job(f"{prefix}{i:02d}-{kinds[i % len(kinds)]}", kinds[i % len(kinds)],
                     rng.uniform(min_duration, max_duration)) for i in range(count)]


def terminal(tfjobs: TfJobs, job: PlannedJob, final_state: str | None) -> bool:
    """Whether the job reached a terminal state (for TTL jobs: was seen Succeeded, then deleted)."""
    if job.deleted_by_ttl:
        return final_state in ("Succeeded", "Failed") and tfjobs.get(job.name) is None
    return tfjobs.status(job.name).get("state") in ("Succeeded", "Failed")


def outcome_problems(tfjobs: TfJobs, jobs: list[PlannedJob], pod_watch: PodWatch, job_watch: JobWatch) -> list[str]:
    """Everything wrong with how the jobs ended, as readable lines (empty when all is right)."""
    problems = [f"two live pods at once in {d.slot}: {d.uids}" for d in pod_watch.duplicates]
    for job in jobs:
        status = (job_watch.last.get(job.uid) or {}) if job.deleted_by_ttl else tfjobs.status(job.name)
        condition = next((c for c in status.get("conditions") or [] if c["type"] == job.state), {})
        if status.get("state") != job.state or condition.get("reason") != job.reason:
            problems.append(f"{job.name}: ended {status.get('state')}/{condition.get('reason')}, "
                            f"expected {job.state}/{job.reason}")
        if job.deleted_by_ttl and tfjobs.get(job.name) is not None:
            problems.append(f"{job.name}: not deleted by its TTL")
        stories = pod_watch.pods(job.name)
        if not stories:
            problems.append(f"{job.name}: no pod was ever created")
        foreign = [s.name for s in stories if s.owner_uid != job.uid]
        if foreign:
            problems.append(f"{job.name}: pods not owned by this job's UID: {foreign}")
        if job.single_incarnation:
            twice = {f"{r}-{i}": [s.uid for s in pods]
                     for (r, i), pods in pod_watch.incarnations(job.name).items() if len(pods) > 1}
            if twice:
                problems.append(f"{job.name}: slots created more than once: {twice}")
        if job.kind == "retry":
            failures = len(pod_watch.failures(job.name))
            restarts = status.get("restartCount")
            if not failures == restarts == RETRY_BACKOFF_LIMIT + 1:
                problems.append(f"{job.name}: restartCount {restarts}, pod failures seen {failures}, expected both "
                                f"{RETRY_BACKOFF_LIMIT + 1}")
    return problems


def live_pods_of_finished_jobs(pod_watch: PodWatch, jobs: list[PlannedJob]) -> list[str]:
    """Finished jobs keep no Pending or Running pod (cleanPodPolicy Running; failed jobs delete theirs)."""
    return [s.name for job in jobs for s in pod_watch.pods(job.name) if s.live and s.terminating_at is None]


def unfinished(tfjobs: TfJobs, jobs: list[PlannedJob], job_watch: JobWatch) -> list[str]:
    """The jobs not yet in a terminal state, each with its state, conditions and pods (for a message)."""
    left = []
    for job in jobs:
        if terminal(tfjobs, job, job_watch.final_state(job.uid)):
            continue
        status = tfjobs.status(job.name)
        conditions = [f"{c['type']}={c['status']}/{c.get('reason')}" for c in status.get("conditions") or []]
        pods = [f"{p['metadata']['name']}:{(p.get('status') or {}).get('phase')}"
                f"{'(terminating)' if p['metadata'].get('deletionTimestamp') else ''}" for p in tfjobs.pods(job.name)]
        left.append(f"{job.name} state={status.get('state')} startTime={status.get('startTime')} "
                    f"restarts={status.get('restartCount')} conditions={conditions} pods={pods}")
    return left
