"""Whether a restart of a TensorFlow container was most likely its stall rule's liveness probe.

What the API lets the operator see: a liveness kill leaves no mark of its own in the pod's status.
The kubelet stops the container (SIGTERM, then SIGKILL after the grace period), records the exit --
143 or 137, reason `Error` -- in `state.terminated` (pod restartPolicy Never) or `lastState.terminated`
(an in-place restart), and posts `Unhealthy` and `Killing` Events on the pod. The operator does not
watch Events (a cluster-wide watch for this alone), so it calls a restart "stalled" when the role has
a stall rule and the TensorFlow container ended by SIGTERM or SIGKILL without being OOM-killed. That
is a strong hint, not a proof: someone killing the process by hand looks the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from tfjob_api import podstate
from tfjob_api.timeutil import parse_time

SIGNAL_EXIT_CODES = frozenset({137, 143})
RECENT = timedelta(minutes=2)
"""An in-place restart is reported when its termination finished this recently (the reconcile that
counts it follows the pod update within a second)."""


def _termination(pod: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
    status = podstate.tf_container_status(pod)
    terminated = ((status or {}).get(key) or {}).get("terminated")
    return terminated if isinstance(terminated, Mapping) else None


def _killed(terminated: Mapping[str, Any] | None) -> bool:
    return (terminated is not None and terminated.get("exitCode") in SIGNAL_EXIT_CODES
            and terminated.get("reason") != "OOMKilled")


def has_stall_rule(job: Mapping[str, Any], role: str) -> bool:
    return (job["spec"].get(role) or {}).get("stall") is not None


def failed_pod_stalled(job: Mapping[str, Any], role: str, pod: Mapping[str, Any]) -> bool:
    """A failed pod (restartPolicy Never) whose TensorFlow container was killed under a stall rule."""
    return has_stall_rule(job, role) and _killed(_termination(pod, "state") or _termination(pod, "lastState"))


def restarted_after_stall(job: Mapping[str, Any], role: str, pod: Mapping[str, Any], now: datetime) -> bool:
    """A live pod whose TensorFlow container was restarted in place, recently, after a kill under a
    stall rule."""
    if not has_stall_rule(job, role):
        return False
    terminated = _termination(pod, "lastState")
    if not _killed(terminated):
        return False
    assert terminated is not None
    finished = parse_time(terminated.get("finishedAt"))
    return finished is not None and now - finished <= RECENT


def describe(pod: Mapping[str, Any]) -> str:
    """`<pod> (exit code N)` for messages."""
    code = podstate.exit_code(pod)
    return f"{podstate.name(pod)} (exit code {code})" if code is not None else podstate.name(pod)
