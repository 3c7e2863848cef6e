"""Unit tests of `tfjobs.client`: what `wait_for` decides from a job (pure), and the exact API calls
of create (with the ConfigMaps, Secrets and claims beside a job), get, scale and delete (a mocked
`kube.Kube`). Waiting, logs and the rest against the local cluster:
tests/integration/controller/test_user_tools.py."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest.mock import DEFAULT, MagicMock

import pytest
import yaml
from pytest_mock import MockerFixture

from tfjobs.client import STATES, JobNotFound, TfJobClient, _verdict, event_time
from tfjobs.errors import ClusterApiError
from tfjobs.manifests import InputError
from tfjobs.selectors import Conditions

JOB: dict[str, Any] = {
    "apiVersion": "kubeflow.org/v1", "kind": "TensorFlowJob", "metadata": {"name": "mnist"},
    "spec": {"worker": {"replicas": 2, "template": {"spec": {"containers": [{"name": "tensorflow", "image": "tf"}]}}}},
}
NO_CONDITIONS = Conditions()


def in_state(state: str, reason: str = "", message: str = "") -> dict[str, Any]:
    return {"status": {"state": state, "conditions": [{"type": state, "status": "True", "reason": reason,
                                                       "message": message}]}}


@pytest.fixture
def kube() -> MagicMock:
    """A connection whose cluster has TensorFlowJobs only: a TFJob is never found."""
    mock = MagicMock()
    mock.create.side_effect = lambda path, body: body
    mock.patch.side_effect = lambda path, body: body

    def get(path: str, **query: Any) -> Any:
        if "/tfjobs/" in path:
            raise ClusterApiError(404, "NotFound", "tfjobs.kubeflow.org not found")
        return DEFAULT  # the return_value a test set
    mock.get.side_effect = get
    return mock


def test_the_states_are_the_operators() -> None:
    assert set(STATES) >= {"Created", "Running", "Restarting", "Succeeded", "Failed", "Suspended"}


def test_a_job_in_the_awaited_state_is_reached() -> None:
    assert _verdict(in_state("Running"), in_state("Running"), ("Running",), NO_CONDITIONS, False) == "reached"
    assert _verdict(in_state("Created"), in_state("Created"), ("Running",), NO_CONDITIONS, False) is None


def test_a_job_that_ended_otherwise_fails_the_wait_with_its_reason() -> None:
    failed = in_state("Failed", "BackoffLimitExceeded", "restarted 7 times")

    assert _verdict(failed, failed, ("Succeeded",), NO_CONDITIONS, False) == \
        "ended Failed (BackoffLimitExceeded: restarted 7 times)"
    assert _verdict(in_state("Succeeded"), in_state("Succeeded"), ("Running",), NO_CONDITIONS, False) == \
        "ended Succeeded"


def test_argo_style_conditions_decide_when_given() -> None:
    checks = Conditions.parse("status.state == Running", "status.restartCount > 2")

    assert _verdict(in_state("Running"), in_state("Running"), ("Succeeded",), checks, True) == "reached"
    restarted = {"status": {"state": "Running", "restartCount": 3}}
    assert _verdict(restarted, restarted, ("Succeeded",), checks, True) == \
        "matched the failure condition status.restartCount>2"


def test_create_sends_the_manifest_with_overrides_name_and_namespace(kube: MagicMock) -> None:
    client = TfJobClient(kube, "team-a")

    client.create(JOB, name="mnist-2", overrides={"worker.replicas": 8})

    path, body = kube.create.call_args.args
    assert path == "/apis/kubeflow.org/v1/namespaces/team-a/tensorflowjobs"
    assert body["metadata"] == {"name": "mnist-2", "namespace": "team-a"}
    assert body["spec"]["worker"]["replicas"] == 8
    assert JOB["metadata"] == {"name": "mnist"}  # the caller's dict is left alone


def test_the_manifests_namespace_is_kept_unless_one_is_given(kube: MagicMock) -> None:
    client = TfJobClient(kube, "team-a")
    job = {**JOB, "metadata": {"name": "mnist", "namespace": "team-b"}}

    client.create(job)
    client.create(job, namespace="team-c")

    assert [c.args[0].split("/")[5] for c in kube.create.call_args_list] == ["team-b", "team-c"]


def test_a_job_without_a_name_is_refused_before_any_call(kube: MagicMock) -> None:
    with pytest.raises(ValueError, match=r"metadata\.name"):
        TfJobClient(kube).create({**JOB, "metadata": {}})
    kube.create.assert_not_called()


def test_create_from_yaml_needs_exactly_one_job(kube: MagicMock) -> None:
    text = "apiVersion: kubeflow.org/v1\nkind: TensorFlowJob\nmetadata: {generateName: m-}\nspec: {}\n"

    TfJobClient(kube).create_from_yaml(text)
    with pytest.raises(ValueError, match="holds 2 jobs"):
        TfJobClient(kube).create_from_yaml(text + "---\n" + text)
    assert kube.create.call_count == 1


def test_a_missing_job_is_job_not_found(kube: MagicMock) -> None:
    kube.get.side_effect = ClusterApiError(404, "NotFound", 'tensorflowjobs "x" not found')

    with pytest.raises(JobNotFound, match='"x" not found in namespace default'):
        TfJobClient(kube).get("x")


def test_scale_patches_the_replicas_of_one_role(kube: MagicMock) -> None:
    kube.get.return_value = JOB

    TfJobClient(kube, "ns").scale("mnist", 4)

    kube.patch.assert_called_once_with("/apis/kubeflow.org/v1/namespaces/ns/tensorflowjobs/mnist",
                                       {"spec": {"worker": {"replicas": 4}}})


def test_scaling_a_role_the_job_does_not_have_is_refused(kube: MagicMock) -> None:
    kube.get.return_value = JOB

    with pytest.raises(ValueError, match="has no ps role to scale"):
        TfJobClient(kube).scale("mnist", 2, role="ps")
    kube.patch.assert_not_called()


def test_delete_lets_garbage_collection_take_the_pods(kube: MagicMock) -> None:
    TfJobClient(kube, "ns").delete("mnist")

    kube.delete.assert_called_once_with("/apis/kubeflow.org/v1/namespaces/ns/tensorflowjobs/mnist",
                                        propagation="Background")


def test_waiting_for_an_unknown_state_is_refused(kube: MagicMock) -> None:
    with pytest.raises(ValueError, match="unknown state Done"):
        TfJobClient(kube).wait_for("mnist", "Done")
    kube.get.assert_not_called()


def test_events_sort_by_their_last_time_whatever_api_wrote_them() -> None:
    core = {"lastTimestamp": "2030-01-01T00:00:05Z"}
    new_api = {"eventTime": "2030-01-01T00:00:03.500000Z"}
    series = {"series": {"lastObservedTime": "2030-01-01T00:00:09.000000Z"}, "eventTime": "2030-01-01T00:00:01Z"}

    assert sorted([core, new_api, series], key=event_time) == [new_api, core, series]


class EndlessFollower:
    """A log follower whose job never ends: it yields nothing until it is closed."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.closed = threading.Event()

    def __enter__(self) -> EndlessFollower:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self.closed.set()

    def __iter__(self) -> Iterator[Any]:
        assert self.closed.wait(30), "the follower was never closed"
        return iter(())


def test_following_logs_with_a_timeout_stops_at_the_timeout(kube: MagicMock, mocker: MockerFixture) -> None:
    kube.get.return_value = JOB
    mocker.patch("tfjobs.client.LogFollower", EndlessFollower)
    # Without the timeout the follower is never closed, and its own guard fails the test.
    assert list(TfJobClient(kube).logs("mnist", follow=True, timeout=0.05)) == []


# --- the ConfigMaps, Secrets and claims beside a job ------------------------------------------------

EXAMPLE = Path(__file__).resolve().parents[3] / "manifests" / "examples" / "allreduce.yaml"
CONFIG_MAP: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "mnist-code"},
                              "data": {"train.py": "print('hello')\n"}}
CLAIM: dict[str, Any] = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
                         "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}


def already_exists(path: str, body: dict[str, Any]) -> dict[str, Any]:
    if "/tensorflowjobs" not in path:
        raise ClusterApiError(409, "AlreadyExists", f'"{body["metadata"]["name"]}" already exists')
    return body


def calls(kube: MagicMock) -> list[tuple[str, str]]:
    """The API calls made, as (verb, path), in order."""
    verbs = {"create": "POST", "get": "GET", "replace": "PUT", "patch": "PATCH", "delete": "DELETE"}
    return [(verbs[name], args[0]) for name, args, _ in kube.method_calls if name in verbs]


def test_create_from_file_creates_the_examples_configmap_then_its_job(kube: MagicMock) -> None:
    job = TfJobClient(kube, "team-a").create_from_file(str(EXAMPLE), overrides={"worker.replicas": 3})

    assert calls(kube) == [("POST", "/api/v1/namespaces/team-a/configmaps"),
                           ("POST", "/apis/kubeflow.org/v1/namespaces/team-a/tensorflowjobs")]
    config_map = kube.create.call_args_list[0].args[1]
    assert config_map["metadata"] == {"name": "mnist-allreduce-code", "namespace": "team-a"}
    assert "train.py" in config_map["data"]
    assert job["metadata"]["name"] == "mnist-allreduce" and job["spec"]["worker"]["replicas"] == 3


def test_a_configmap_that_exists_is_replaced_by_the_files_version(kube: MagicMock) -> None:
    kube.create.side_effect = already_exists
    kube.get.return_value = {**CONFIG_MAP, "metadata": {"name": "mnist-code", "resourceVersion": "41"},
                             "data": {"train.py": "old"}}
    text = yaml.safe_dump_all([CONFIG_MAP, JOB])

    TfJobClient(kube).create_from_yaml(text)

    path = "/api/v1/namespaces/default/configmaps/mnist-code"
    assert calls(kube) == [("POST", "/api/v1/namespaces/default/configmaps"), ("GET", path), ("PUT", path),
                           ("POST", "/apis/kubeflow.org/v1/namespaces/default/tensorflowjobs")]
    body = kube.replace.call_args.args[1]
    assert body["metadata"]["resourceVersion"] == "41" and body["data"] == CONFIG_MAP["data"]


def test_a_claim_that_exists_is_kept_as_it_is(kube: MagicMock) -> None:
    kube.create.side_effect = already_exists
    kube.get.return_value = {**CLAIM, "metadata": {"name": "data", "resourceVersion": "5"}}

    stored, outcome = TfJobClient(kube).apply_companion(CLAIM)

    assert (outcome, stored["metadata"]["resourceVersion"]) == ("kept", "5")
    kube.replace.assert_not_called()


def test_companions_go_where_the_job_goes_unless_they_say(kube: MagicMock) -> None:
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "token", "namespace": "vault"}}
    text = yaml.safe_dump_all([CONFIG_MAP, secret, {**JOB, "metadata": {"name": "mnist", "namespace": "team-b"}}])

    TfJobClient(kube, "team-a").create_from_yaml(text)
    TfJobClient(kube, "team-a").create_from_yaml(text, namespace="team-c")

    assert [path for _, path in calls(kube)] == [
        "/api/v1/namespaces/team-b/configmaps", "/api/v1/namespaces/vault/secrets",
        "/apis/kubeflow.org/v1/namespaces/team-b/tensorflowjobs",
        "/api/v1/namespaces/team-c/configmaps", "/api/v1/namespaces/team-c/secrets",
        "/apis/kubeflow.org/v1/namespaces/team-c/tensorflowjobs"]


def test_another_kind_beside_the_job_is_refused_before_any_call(kube: MagicMock) -> None:
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "board"}}

    with pytest.raises(InputError, match="apply the Deployment with kubectl apply"):
        TfJobClient(kube).create_from_yaml(yaml.safe_dump_all([CONFIG_MAP, JOB, deployment]))
    assert kube.method_calls == []


def test_a_job_that_cannot_be_created_creates_no_companion_first(kube: MagicMock) -> None:
    with pytest.raises(ValueError, match=r"metadata\.name"):
        TfJobClient(kube).create_from_yaml(yaml.safe_dump_all([CONFIG_MAP, {**JOB, "metadata": {}}]))
    assert kube.method_calls == []


def test_create_from_yaml_still_needs_exactly_one_job_beside_its_companions(kube: MagicMock) -> None:
    with pytest.raises(ValueError, match="holds 2 jobs"):
        TfJobClient(kube).create_from_yaml(yaml.safe_dump_all([CONFIG_MAP, JOB, JOB]))
    assert kube.method_calls == []


def test_the_placement_of_a_dispatched_job_is_read_from_its_workloads(kube: MagicMock) -> None:
    kube.list.return_value = {"items": [{"status": {"clusterName": "worker-1"}}]}
    job = {"metadata": {"name": "j", "namespace": "team-a", "uid": "u-1"}}
    assert TfJobClient(kube, "team-a").placement(job) == "worker-1"
    path = kube.list.call_args.args[0]
    assert path == "/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/workloads"
    assert kube.list.call_args.kwargs == {"label_selector": "kueue.x-k8s.io/job-uid=u-1"}


def test_without_kueue_a_job_has_no_placement(kube: MagicMock) -> None:
    kube.list.side_effect = ClusterApiError(404, "NotFound", "the server could not find the requested resource")
    assert TfJobClient(kube, "team-a").placement({"metadata": {"namespace": "team-a", "uid": "u"}}) == ""


def test_a_jobs_workload_is_found_by_kueues_job_uid_label(kube: MagicMock) -> None:
    kube.list.return_value = {"items": [{"metadata": {"name": "tensorflowjob-mnist-abcde"}}]}
    job = {"metadata": {"name": "mnist", "namespace": "team-a", "uid": "u-1"}}
    assert TfJobClient(kube, "team-a").workload(job) == {"metadata": {"name": "tensorflowjob-mnist-abcde"}}
    path = kube.list.call_args.args[0]
    assert path == "/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/workloads"
    assert kube.list.call_args.kwargs["label_selector"] == "kueue.x-k8s.io/job-uid=u-1"


@pytest.mark.parametrize("status", [403, 404])
def test_no_workload_is_shown_where_kueue_is_not_served_or_not_readable(kube: MagicMock, status: int) -> None:
    kube.list.side_effect = ClusterApiError(status, "Forbidden" if status == 403 else "NotFound")
    assert TfJobClient(kube, "team-a").workload({"metadata": {"namespace": "team-a", "uid": "u"}}) is None
