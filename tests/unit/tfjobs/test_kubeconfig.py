"""Unit tests of `tfjobs.kubeconfig`: kubectl's default namespace from kubeconfig files."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from tfjobs.kubeconfig import context_namespace, default_namespace, kubeconfig_paths


def kubeconfig(path: Path, current: str | None, contexts: dict[str, str | None]) -> Path:
    config: dict[str, Any] = {"apiVersion": "v1", "kind": "Config", "contexts": [
        {"name": name, "context": {"cluster": "c", "user": "u", **({"namespace": ns} if ns else {})}}
        for name, ns in contexts.items()]}
    if current:
        config["current-context"] = current
    path.write_text(yaml.safe_dump(config))
    return path


def test_the_current_contexts_namespace_is_the_default(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path / "config", "dev", {"dev": "team-a", "prod": "team-b"})

    assert default_namespace(str(path), environ={}) == "team-a"


def test_a_chosen_context_wins_over_the_current_one(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path / "config", "dev", {"dev": "team-a", "prod": "team-b"})

    assert default_namespace(str(path), "prod", environ={}) == "team-b"


def test_a_context_without_namespace_means_default(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path / "config", "dev", {"dev": None})

    assert default_namespace(str(path), environ={}, in_cluster_file=tmp_path / "absent") == "default"


def test_kubeconfig_files_merge_first_setting_wins(tmp_path: Path) -> None:
    first = kubeconfig(tmp_path / "a", None, {"dev": "from-a"})
    second = kubeconfig(tmp_path / "b", "dev", {"dev": "from-b"})
    environ = {"KUBECONFIG": os.pathsep.join([str(first), str(tmp_path / "missing"), str(second)])}

    assert kubeconfig_paths(None, environ) == [first, second]
    assert default_namespace(None, environ=environ) == "from-a"


def test_in_a_pod_without_kubeconfig_the_serviceaccounts_namespace_is_used(tmp_path: Path) -> None:
    namespace_file = tmp_path / "namespace"
    namespace_file.write_text("pipelines\n")

    assert default_namespace(None, environ={"HOME": str(tmp_path)}, in_cluster_file=namespace_file) == "pipelines"


def test_an_unknown_context_has_no_namespace() -> None:
    assert context_namespace([{"contexts": [{"name": "a", "context": {"namespace": "x"}}]}], "b") is None
