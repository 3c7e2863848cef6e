"""`Kubectl`: kubectl against the real-node cluster in one test namespace, with the few reads the
real-node tests repeat (a job, its state, its pods)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from typing import Any, TypeVar

from devcluster.cluster import Cluster
from tests.support import polling
from tfjob_api.names import JOB_NAME_LABEL

T = TypeVar("T")
POLL_SECONDS = 1.0  # every check runs kubectl, on the two cores that also run the training


def wait_for(predicate: Callable[[], T], timeout: float, what: str) -> T:
    """tests.support.polling.wait_for, polling once a second."""
    return polling.wait_for(predicate, timeout, what, interval=POLL_SECONDS)


class Kubectl:
    """kubectl against the real cluster, in one namespace."""

    def __init__(self, cluster: Cluster, namespace: str) -> None:
        self.cluster, self.namespace = cluster, namespace

    def __call__(self, *args: str, check: bool = True, input: str | None = None,
                 timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
        return self.cluster.kubectl("-n", self.namespace, *args, check=check, input=input, timeout=timeout)

    def json(self, *args: str) -> Any:
        return json.loads(self("get", *args, "-o", "json").stdout)

    def job(self, name: str) -> dict[str, Any]:
        return self.json("tensorflowjob", name)  # type: ignore[no-any-return]

    def state(self, name: str) -> str:
        return str((self.job(name).get("status") or {}).get("state") or "")

    def pods(self, job: str) -> list[dict[str, Any]]:
        return self.json("pods", "-l", f"{JOB_NAME_LABEL}={job}")["items"]  # type: ignore[no-any-return]
