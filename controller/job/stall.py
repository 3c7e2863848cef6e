"""Stall rules: the probes that restart a TensorFlow container whose training stopped making progress.

A worker stuck in a deadlocked collective or a dead input pipeline keeps its pod Running and its
GPUs busy forever, and nothing in the pod's status says so. A role with `stall` set
(docs/production.md) gets, in its TensorFlow container:

* a **startup probe** -- the grace for the first heartbeat (data loading, the first step): it passes
  as soon as the heartbeat is fresh and lets the kubelet restart the container only when none came
  within `startupSeconds`;
* a **liveness probe** -- it fails when the heartbeat is older than `timeoutSeconds` (file), or the
  health endpoint does not answer 2xx (http). Two failures in a row restart the container, so one
  slow probe on a loaded node does not;
* the environment the heartbeat helper (`tfheartbeat`) reads, so the training code needs no settings.

A probe or variable the template already has wins: the operator only adds what is missing.

The file probe is a POSIX shell command (`sh`, `stat -c %Y`, `date +%s`: GNU coreutils and BusyBox
both have them), with the path and the limit passed as arguments, never pasted into the script.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

# The environment the heartbeat helper reads: one definition, the helper's (it imports nothing of
# the operator, since it runs inside training images).
from tfheartbeat.settings import (
    DEFAULT_FILE,
    DEFAULT_HTTP_PATH,
    HEARTBEAT_FILE_ENV,
    HEARTBEAT_PATH_ENV,
    HEARTBEAT_PORT_ENV,
    STALL_TIMEOUT_ENV,
)

DEFAULT_TIMEOUT = 600
DEFAULT_STARTUP = 600

LIVENESS_FAILURES = 2
"""Consecutive liveness failures before the kubelet restarts the container."""
MAX_PROBE_TIMEOUT = 10
"""Seconds one probe may take (an exec on a loaded node can be slow)."""

CHECK_NAME = "tfjob-heartbeat-check"
CHECK_SCRIPT = (
    'f=$1; limit=$2; '
    'beat=$(stat -c %Y -- "$f" 2>/dev/null) || { echo "no heartbeat file $f"; exit 1; }; '
    'age=$(( $(date +%s) - beat )); '
    'if [ "$age" -le "$limit" ]; then exit 0; fi; '
    'echo "heartbeat $f is ${age}s old (limit ${limit}s)"; exit 1'
)
"""Exit 0 when the file at $1 was touched at most $2 seconds ago; otherwise say why (the kubelet puts
the output into its `Unhealthy` event) and exit 1."""


def heartbeat_check_command(path: str, limit: int) -> list[str]:
    """The exact command both file probes run."""
    return ["sh", "-c", CHECK_SCRIPT, CHECK_NAME, path, str(limit)]


def probe_period(timeout: int) -> int:
    """Seconds between probes: a quarter of the timeout, between 5 and 60."""
    return min(60, max(5, timeout // 4))


def _handler(stall: Mapping[str, Any]) -> dict[str, Any]:
    if stall.get("heartbeat", "file") == "http":
        return {"httpGet": {"path": stall.get("path") or DEFAULT_HTTP_PATH, "port": int(stall["port"])}}
    timeout = int(stall.get("timeoutSeconds", DEFAULT_TIMEOUT))
    return {"exec": {"command": heartbeat_check_command(stall.get("path") or DEFAULT_FILE, timeout)}}


def liveness_probe(stall: Mapping[str, Any]) -> dict[str, Any]:
    period = probe_period(int(stall.get("timeoutSeconds", DEFAULT_TIMEOUT)))
    return {**_handler(stall), "periodSeconds": period, "timeoutSeconds": min(MAX_PROBE_TIMEOUT, period),
            "failureThreshold": LIVENESS_FAILURES, "successThreshold": 1}


def startup_probe(stall: Mapping[str, Any]) -> dict[str, Any] | None:
    """None when `startupSeconds` is 0 (no grace: the liveness probe starts at once)."""
    grace = int(stall.get("startupSeconds", DEFAULT_STARTUP))
    if grace <= 0:
        return None
    period = probe_period(int(stall.get("timeoutSeconds", DEFAULT_TIMEOUT)))
    return {**_handler(stall), "periodSeconds": period, "timeoutSeconds": min(MAX_PROBE_TIMEOUT, period),
            "failureThreshold": max(1, math.ceil(grace / period)), "successThreshold": 1}


def heartbeat_env(stall: Mapping[str, Any]) -> list[dict[str, str]]:
    """What `tfheartbeat` reads to find its file or serve its endpoint, and the timeout."""
    timeout = str(int(stall.get("timeoutSeconds", DEFAULT_TIMEOUT)))
    if stall.get("heartbeat", "file") == "http":
        return [{"name": HEARTBEAT_PORT_ENV, "value": str(int(stall["port"]))},
                {"name": HEARTBEAT_PATH_ENV, "value": stall.get("path") or DEFAULT_HTTP_PATH},
                {"name": STALL_TIMEOUT_ENV, "value": timeout}]
    return [{"name": HEARTBEAT_FILE_ENV, "value": stall.get("path") or DEFAULT_FILE},
            {"name": STALL_TIMEOUT_ENV, "value": timeout}]


def with_stall_probes(container: Mapping[str, Any], stall: Mapping[str, Any] | None) -> dict[str, Any]:
    """The TensorFlow container with the stall rule's probes and environment added where the template
    has none (a template probe or variable wins). A new dict; `container` is not changed."""
    result = dict(container)
    if stall is None:
        return result
    if "livenessProbe" not in result:
        result["livenessProbe"] = liveness_probe(stall)
    startup = startup_probe(stall)
    if startup is not None and "startupProbe" not in result:
        result["startupProbe"] = startup
    present = {e.get("name") for e in result.get("env") or []}
    added = [e for e in heartbeat_env(stall) if e["name"] not in present]
    if added:
        result["env"] = [*(result.get("env") or []), *added]
    return result
