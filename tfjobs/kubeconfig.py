"""Which kubeconfig, context and namespace a command uses, the way kubectl decides.

The API client (`kube.Kube`) loads credentials, but a user tool also needs kubectl's notion of the
*default namespace*: the namespace of the kubeconfig's current (or chosen) context, else the
in-cluster ServiceAccount's namespace when running in a pod without a kubeconfig, else `default`.
Files are merged as kubectl merges `$KUBECONFIG`: for each setting, the first file that sets it wins.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

__all__ = ["DEFAULT_NAMESPACE", "IN_CLUSTER_NAMESPACE_FILE", "context_namespace", "default_namespace",
           "kubeconfig_paths"]

DEFAULT_NAMESPACE = "default"
IN_CLUSTER_NAMESPACE_FILE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def kubeconfig_paths(explicit: str | None = None, environ: Mapping[str, str] | None = None) -> list[Path]:
    """The kubeconfig files in use: `explicit` (a --kubeconfig flag), else the existing entries of
    $KUBECONFIG, else ~/.kube/config when it exists. Empty when there is none (in a pod)."""
    if explicit:
        return [Path(explicit).expanduser()]
    env = os.environ if environ is None else environ
    listed = [Path(p).expanduser() for p in env.get("KUBECONFIG", "").split(os.pathsep) if p]
    if listed:
        return [p for p in listed if p.is_file()]
    home = Path(env.get("HOME") or Path.home()) / ".kube" / "config"
    return [home] if home.is_file() else []


def context_namespace(configs: Sequence[Mapping[str, Any]], context: str | None = None) -> str | None:
    """The namespace of `context` (default: the current context) in merged kubeconfig documents,
    or None when the context sets none or does not exist."""
    name = context or next((c.get("current-context") for c in configs if c.get("current-context")), None)
    if not name:
        return None
    for config in configs:
        for entry in config.get("contexts") or []:
            if isinstance(entry, Mapping) and entry.get("name") == name:
                return (entry.get("context") or {}).get("namespace") or None
    return None


def default_namespace(kubeconfig: str | None = None, context: str | None = None,
                      environ: Mapping[str, str] | None = None,
                      in_cluster_file: Path = IN_CLUSTER_NAMESPACE_FILE) -> str:
    """kubectl's default namespace for these flags (see the module docstring)."""
    paths = kubeconfig_paths(kubeconfig, environ)
    configs = []
    for path in paths:
        try:
            loaded = yaml.safe_load(path.read_text())
        except (OSError, yaml.YAMLError):
            continue
        if isinstance(loaded, Mapping):
            configs.append(loaded)
    found = context_namespace(configs, context)
    if found:
        return found
    if not paths:
        try:
            return in_cluster_file.read_text().strip() or DEFAULT_NAMESPACE
        except OSError:
            pass
    return DEFAULT_NAMESPACE
