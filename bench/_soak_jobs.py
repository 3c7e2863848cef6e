"""The soak's stream of jobs (bench/soak.py): which job comes next, and its body for either kind.

A seeded `random.Random` draws each job's plan, so a soak that found something can be run again with
the same stream (`--seed`). Every job is queued (LocalQueue `lq`) with one of two priorities, so
Kueue preempts the low ones; its workers ask for 1 CPU each and one rack (Kueue's topology-aware
scheduling), so the gang scheduler, the NetworkPolicy and the topology gate all apply. Pods "run" on
KWOK and exit by the annotations its stages read (tests/support/jobs.py): code 0 after
`runtime` seconds (the job succeeds) or, for a TensorFlowJob drawn to fail, code 3, which its
`FailJob` rule turns into a failed job at once. TensorFlowJobs also report progress (polled by the
operator; KWOK's pods never answer, which is part of the test). Some jobs have a TTL, some start
suspended; the soak deletes the others once they finished.

Pure: no cluster, no clock.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from controller.kueue import protocol as kq
from controller.kueue import topology
from tests.support.jobs import DEVCLUSTER_IMAGE, container, devcluster_role, tfjob
from tests.support.kubeflow import as_tfjob

RACK = "tfjob-test/rack"
EXIT_3_FAILS = {"name": "bad-config", "action": "FailJob", "onExitCodes": {"operator": "In", "values": [3]}}
FAIL_CODE = 3


@dataclass(frozen=True)
class JobPlan:
    name: str
    kind: str  # "TensorFlowJob" or "TFJob"
    priority: str  # "low" or "high"
    workers: int
    runtime: int  # seconds from a pod's start to its exit
    fails: bool  # exits with FAIL_CODE (TensorFlowJob only: a TFJob has no failure rules)
    ttl: int | None
    suspended: bool  # created with spec.suspend: true


def draw(rng: random.Random, number: int) -> JobPlan:
    """The `number`-th job of the stream."""
    kind = "TFJob" if rng.random() < 0.4 else "TensorFlowJob"
    return JobPlan(
        name=f"soak-{number:04d}-{'tf' if kind == 'TFJob' else 'tfj'}",
        kind=kind,
        priority="high" if rng.random() < 0.25 else "low",
        workers=rng.choice((1, 2, 2, 3)),
        runtime=rng.randint(60, 180),
        fails=kind == "TensorFlowJob" and rng.random() < 0.15,
        ttl=30 if rng.random() < 0.4 else None,
        suspended=rng.random() < 0.1,
    )


def worker_role(plan: JobPlan) -> dict[str, Any]:
    one_cpu = container(DEVCLUSTER_IMAGE, requests={"cpu": "1", "memory": "1Gi"})
    return devcluster_role(plan.workers, containers=[one_cpu],
                           annotations={topology.REQUIRED: RACK}, exit_code=FAIL_CODE if plan.fails else 0,
                           exit_after=f"{plan.runtime}s")


def body(plan: JobPlan, namespace: str, queue: str = "lq") -> dict[str, Any]:
    """The job's manifest, in its kind's own shape."""
    labels = {kq.QUEUE_LABEL: queue, kq.PRIORITY_CLASS_LABEL: plan.priority}
    spec: dict[str, Any] = {"worker": worker_role(plan)}
    if plan.ttl is not None:
        spec["ttlSecondsAfterFinished"] = plan.ttl
    if plan.suspended:
        spec["suspend"] = True
    if plan.kind == "TFJob":
        return as_tfjob(plan.name, spec, namespace=namespace, labels=labels)
    spec["failurePolicy"] = {"rules": [EXIT_3_FAILS]}
    spec["progress"] = {"periodSeconds": 10}
    return tfjob(plan.name, spec, namespace=namespace, labels=labels)


def plural(kind: str) -> str:
    return "tfjobs" if kind == "TFJob" else "tensorflowjobs"


def suspend_patch(kind: str, suspend: bool) -> dict[str, Any]:
    return {"spec": {"runPolicy": {"suspend": suspend}}} if kind == "TFJob" else {"spec": {"suspend": suspend}}


def scale_patch(kind: str, workers: int) -> dict[str, Any]:
    if kind == "TFJob":
        return {"spec": {"tfReplicaSpecs": {"Worker": {"replicas": workers}}}}
    return {"spec": {"worker": {"replicas": workers}}}
