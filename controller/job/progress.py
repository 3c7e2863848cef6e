"""A job's opt-in progress reporting (`spec.progress`): which pod reports, the environment that tells its
`tfheartbeat` to serve `/progress`, and where and how often the operator reads it.

One pod reports for the whole job: the one that decides success (design.md §4), the chief, else
worker 0. With distribution strategies every replica runs the same script, so only that pod gets
`TFJOB_PROGRESS_PORT`, and only its endpoint is read. A job without `spec.progress` gets no variable,
no poll and no write: everything here answers "nothing" for it.

The operator reads the report through the API server's pod proxy
(`/api/v1/namespaces/<ns>/pods/<pod>:<port>/proxy/progress`, docs/design.md "Training progress"):
the same path in-cluster and out of cluster, and only while the pod runs and the job is neither
finished nor suspended. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tfconfig import pod_name, role_replicas
from tfheartbeat.progress import PROGRESS_PATH
from tfheartbeat.settings import PROGRESS_PORT_ENV
from tfjob_api import conditions as cond
from tfjob_api import podstate

DEFAULT_PORT = 8090
DEFAULT_PERIOD = 30


@dataclass(frozen=True)
class Target:
    """Where a job's progress is read now, and how often."""

    namespace: str
    job: str
    pod: str
    port: int
    period: float  # seconds between reads
    incarnation: str = ""  # the pod's uid and its TensorFlow container's restarts: which process answers

    @property
    def proxy_path(self) -> str:
        """The report through the API server's pod proxy."""
        return f"/api/v1/namespaces/{self.namespace}/pods/{self.pod}:{self.port}/proxy{PROGRESS_PATH}"


def settings(job: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """`spec.progress`, or None when the job does not report progress."""
    value = (job.get("spec") or {}).get("progress")
    return value if isinstance(value, Mapping) else None


def reporting_slot(job: Mapping[str, Any]) -> tuple[str, int] | None:
    """(role, index) of the pod whose progress the job shows: the chief, else worker 0; None without
    `spec.progress`."""
    if settings(job) is None:
        return None
    spec = job["spec"]
    for role in ("chief", "worker"):
        if role_replicas(spec, role) > 0:
            return role, 0
    return None


def with_progress_env(container: Mapping[str, Any], job: Mapping[str, Any], role: str, index: int) -> dict[str, Any]:
    """The TensorFlow container with `TFJOB_PROGRESS_PORT` when its pod is the one that reports (a
    variable of that name in the template wins). A new dict; `container` is not changed."""
    result = dict(container)
    progress = settings(job)
    if progress is None or reporting_slot(job) != (role, index):
        return result
    env = list(result.get("env") or [])
    if not any(e.get("name") == PROGRESS_PORT_ENV for e in env):
        env.append({"name": PROGRESS_PORT_ENV, "value": str(int(progress.get("port", DEFAULT_PORT)))})
        result["env"] = env
    return result


def is_over(job: Mapping[str, Any]) -> bool:
    """Finished or suspended: nothing is training, nothing is read."""
    conditions = (job.get("status") or {}).get("conditions") or []
    return any(cond.is_true(conditions, kind) for kind in (cond.SUCCEEDED, cond.FAILED, cond.SUSPENDED))


def target(job: Mapping[str, Any], pods: Iterable[Mapping[str, Any]]) -> Target | None:
    """Where to read the job's progress now: its reporting pod while that pod is Running (and not
    being deleted) and the job is neither finished nor suspended; None otherwise."""
    progress, slot = settings(job), reporting_slot(job)
    if progress is None or slot is None or is_over(job):
        return None
    name = pod_name(job["metadata"]["name"], *slot)
    for pod in pods:
        if podstate.name(pod) == name and podstate.phase(pod) == "Running" and not podstate.is_terminating(pod):
            restarts = int((podstate.tf_container_status(pod) or {}).get("restartCount") or 0)
            return Target(job["metadata"]["namespace"], job["metadata"]["name"], name,
                          int(progress.get("port", DEFAULT_PORT)),
                          float(progress.get("periodSeconds", DEFAULT_PERIOD)), f"{podstate.uid(pod)}/{restarts}")
    return None
