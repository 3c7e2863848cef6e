"""Unit tests of the Configuration devcluster/kueue.py writes for Kueue's manager: the built-in
frameworks it enables (batch/job by default, others when asked). Kueue itself runs in
tests/integration/controller/kueue/.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from devcluster.api import ApiError
from devcluster.kueue import Kueue

PORTS = {"webhook": 19443, "health": 18081}


def manager(tmp_path: Path, **keywords: Any) -> Kueue:
    cluster: Any = SimpleNamespace(dir=tmp_path)  # only the cluster's folder is read before start()
    return Kueue(cluster, bin_dir=tmp_path, **keywords)


def test_only_the_batch_job_framework_is_enabled_by_default(tmp_path: Path) -> None:
    integrations = manager(tmp_path).configuration(PORTS)["integrations"]
    assert integrations == {"frameworks": ["batch/job"], "externalFrameworks": ["TensorFlowJob.v1.kubeflow.org"]}


def test_the_frameworks_a_caller_names_are_enabled(tmp_path: Path) -> None:
    kueue = manager(tmp_path, frameworks=("batch/job", "kubeflow.org/tfjob"))
    assert kueue.configuration(PORTS)["integrations"]["frameworks"] == ["batch/job", "kubeflow.org/tfjob"]


class RecordingApi:
    """The cluster API's two calls the publication makes: a create, and a patch when it exists."""

    def __init__(self, exists: bool) -> None:
        self.exists = exists
        self.calls: list[tuple[str, str, Any]] = []

    def post(self, path: str, body: Any) -> Any:
        self.calls.append(("post", path, body))
        if self.exists:
            raise ApiError("POST", path, 409, {})
        return body

    def merge_patch(self, path: str, body: Any) -> Any:
        self.calls.append(("patch", path, body))
        return body


def test_the_configuration_is_published_where_kueues_installs_keep_it(tmp_path: Path) -> None:
    for exists in (False, True):
        api = RecordingApi(exists)
        cluster: Any = SimpleNamespace(dir=tmp_path, api=api)
        kueue = Kueue(cluster, bin_dir=tmp_path)
        kueue._publish_configuration("kind: Configuration\n")
        method, path, body = api.calls[-1]
        assert path.startswith("/api/v1/namespaces/kueue-system/configmaps")
        assert body["data"] == {"controller_manager_config.yaml": "kind: Configuration\n"}
        assert method == ("patch" if exists else "post")
        if exists:
            assert path.endswith("/kueue-manager-config")
