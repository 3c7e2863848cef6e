"""Which container is "the TensorFlow one", and which port its server listens on.

The container named `tensorflow` gets TF_CONFIG and the TF port; when no container has that name
the first one does (single-container templates need no naming ceremony). The port is the one that
container names `tfjob-port`, 2222 when it names none.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

TF_CONTAINER = "tensorflow"
PORT_NAME = "tfjob-port"
DEFAULT_PORT = 2222


def tf_container_index(pod_spec: Mapping[str, Any]) -> int:
    """Index of the container that runs TensorFlow: the one named `tensorflow`, else 0."""
    containers = pod_spec.get("containers") or []
    for index, container in enumerate(containers):
        if container.get("name") == TF_CONTAINER:
            return index
    return 0


def role_port(role_spec: Mapping[str, Any]) -> int:
    """The role's TensorFlow server port: the TF container's `tfjob-port`, default 2222."""
    pod_spec = (role_spec.get("template") or {}).get("spec") or {}
    containers = pod_spec.get("containers") or []
    if not containers:
        return DEFAULT_PORT
    for port in containers[tf_container_index(pod_spec)].get("ports") or []:
        if port.get("name") == PORT_NAME and isinstance(port.get("containerPort"), int):
            return int(port["containerPort"])
    return DEFAULT_PORT
