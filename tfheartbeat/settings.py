"""Where the heartbeat goes, read from the environment the operator sets in a container with a stall
rule (docs/production.md), so training code needs no configuration of its own.

The operator injects these names (`controller/job/stall.py` imports them from here). This package
imports nothing of the operator: it runs inside training images, with the standard library only.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

HEARTBEAT_FILE_ENV = "TFJOB_HEARTBEAT_FILE"
HEARTBEAT_PORT_ENV = "TFJOB_HEARTBEAT_PORT"
HEARTBEAT_PATH_ENV = "TFJOB_HEARTBEAT_PATH"
STALL_TIMEOUT_ENV = "TFJOB_STALL_TIMEOUT_SECONDS"
PROGRESS_PORT_ENV = "TFJOB_PROGRESS_PORT"  # set only in the pod whose progress the operator reads

DEFAULT_FILE = "/tmp/tfjob-heartbeat"
DEFAULT_HTTP_PATH = "/healthz"
DEFAULT_TIMEOUT = 600.0


@dataclass(frozen=True)
class Settings:
    file: str | None  # the heartbeat file; None in http mode
    port: int | None  # the health endpoint's port (http mode)
    http_path: str
    timeout: float  # seconds without a beat after which the endpoint answers 503
    progress_port: int | None = None  # the port `/progress` is served on (a job with `spec.progress`)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Http mode when the operator set a port; else the file it named, or the default file (so
        the helper also works in a container without a stall rule, where nobody reads it)."""
        env = os.environ if env is None else env
        port = env.get(HEARTBEAT_PORT_ENV)
        timeout = float(env.get(STALL_TIMEOUT_ENV) or DEFAULT_TIMEOUT)
        http_path = env.get(HEARTBEAT_PATH_ENV) or DEFAULT_HTTP_PATH
        progress_port = int(env[PROGRESS_PORT_ENV]) if env.get(PROGRESS_PORT_ENV) else None
        if port:
            return cls(file=env.get(HEARTBEAT_FILE_ENV) or None, port=int(port), http_path=http_path, timeout=timeout,
                       progress_port=progress_port)
        return cls(file=env.get(HEARTBEAT_FILE_ENV) or DEFAULT_FILE, port=None, http_path=http_path, timeout=timeout,
                   progress_port=progress_port)
