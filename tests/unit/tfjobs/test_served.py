"""Unit tests of what the user tools say about a kind the cluster does not serve (`tfjobs.served`,
through `TfJobClient` and `kubectl tfjob`): the API server's bare `404 page not found` told apart from a
missing job, and the kind's CRD read to say why — not installed, NamesAccepted=False, not Established, a
version not served, or a CRD this user may not read — against a fake API server that answers as the
real one does (the real one: tests/integration/controller/test_unserved_kinds.py)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from kubernetes.client.exceptions import ApiException
from pytest_mock import MockerFixture

from tfjobs import KindNotServed, cli
from tfjobs.client import JobNotFound, TfJobClient
from tfjobs.errors import ClusterApiError
from tfjobs.kinds import KINDS, TENSORFLOWJOB, TFJOB, JobKind

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
NAMES_CLASH = {"type": "NamesAccepted", "status": "False", "reason": "SingularConflict",
               "message": '"tfjob" is already in use'}
NOT_ACCEPTED = {"type": "Established", "status": "False", "reason": "NotAccepted",
                "message": "not all names are accepted"}
ESTABLISHED = {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
               "message": "the initial names have been accepted"}
NAMES_OK = {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found"}


def answered(status: int, body: str, reason: str = "") -> ClusterApiError:
    """The ClusterApiError of an answer with this status and body, read as the connection reads it."""
    response = SimpleNamespace(status=status, reason=reason, data=body.encode(), getheaders=lambda: {})
    return ClusterApiError.from_exception(ApiException(http_resp=response))


def status_answer(code: int, reason: str, message: str) -> ClusterApiError:
    return answered(code, json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                      "message": message, "reason": reason, "code": code}))


def crd(kind: JobKind, *conditions: dict[str, str], versions: tuple[str, ...] = ("v1",)) -> dict[str, Any]:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": kind.resource},
            "spec": {"group": kind.group, "versions": [{"name": v, "served": True, "storage": True} for v in versions]},
            "status": {"conditions": list(conditions)}}


class FakeServer:
    """A connection to an API server that serves the kinds in `served` (holding `jobs` by path) and
    the CRDs in `crds` (by name), answering as the real one: a Status 404 for a missing object, a bare
    `404 page not found` for a kind it does not serve; `crd_refusal` answers every CRD read."""

    def __init__(self, served: tuple[JobKind, ...] = (), crds: tuple[dict[str, Any], ...] = (),
                 jobs: dict[str, dict[str, Any]] | None = None, crd_refusal: ClusterApiError | None = None) -> None:
        self.served = served
        self.crds = {c["metadata"]["name"]: c for c in crds}
        self.jobs = jobs or {}
        self.crd_refusal = crd_refusal
        self.requests: list[tuple[str, str]] = []

    def _route(self, method: str, path: str) -> dict[str, Any]:
        self.requests.append((method, path))
        if path.startswith(CRDS + "/"):
            if self.crd_refusal is not None:
                raise self.crd_refusal
            name = path.rsplit("/", 1)[1]
            if name not in self.crds:
                raise status_answer(404, "NotFound",
                                    f'customresourcedefinitions.apiextensions.k8s.io "{name}" not found')
            return self.crds[name]
        kind = next((k for k in KINDS if f"/apis/{k.group}/{k.version}/" in path and f"/{k.plural}" in path), None)
        if kind is None or kind not in self.served:
            raise answered(404, "404 page not found\n", "Not Found")
        if method == "LIST":
            return {"items": [job for job_path, job in self.jobs.items() if job_path.startswith(path)]}
        if method == "POST":
            return {**self.jobs.get(path, {}), "created": True}
        if path not in self.jobs:
            raise status_answer(404, "NotFound", f'{kind.resource} "{path.rsplit("/", 1)[1]}" not found')
        return self.jobs[path]

    def get(self, path: str, **query: Any) -> dict[str, Any]:
        return self._route("GET", path)

    def list(self, path: str, **query: Any) -> dict[str, Any]:
        return self._route("LIST", path)

    def create(self, path: str, body: dict[str, Any], **query: Any) -> dict[str, Any]:
        self._route("POST", path)
        return body

    def delete(self, path: str, *, propagation: str | None = None) -> dict[str, Any]:
        return self._route("DELETE", path)

    def close(self) -> None:
        pass

    def crd_reads(self) -> list[str]:
        return [path for _, path in self.requests if path.startswith(CRDS)]


def job_of(kind: JobKind, name: str = "mnist") -> dict[str, Any]:
    spec: dict[str, Any] = ({"tfReplicaSpecs": {"Worker": {"replicas": 1, "template": {}}}} if kind is TFJOB
                            else {"worker": {"replicas": 1}})
    return {"apiVersion": kind.api_version, "kind": kind.name, "metadata": {"name": name}, "spec": spec}


def not_served_error(server: FakeServer, kind: JobKind) -> KindNotServed:
    with pytest.raises(KindNotServed) as raised:
        TfJobClient(server, "ns").create(job_of(kind))
    return raised.value


# --- the two 404s -------------------------------------------------------------------------------------


def test_a_bare_404_is_a_path_nothing_serves_and_a_status_404_a_missing_object() -> None:
    bare = answered(404, "404 page not found\n", "Not Found")
    missing = status_answer(404, "NotFound", 'tfjobs.kubeflow.org "mnist" not found')

    assert bare.no_such_path and bare.message == "404 page not found"
    assert missing.not_found and not missing.no_such_path


# --- why a kind is not served ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_creating_a_kind_whose_crd_is_not_installed_says_so_and_how_to_install_it(kind: JobKind) -> None:
    server = FakeServer()

    error = not_served_error(server, kind)

    assert error.message.startswith(f"{kind.name} ({kind.plural}.kubeflow.org) is not served by this cluster: "
                                    f"its CustomResourceDefinition {kind.plural}.kubeflow.org is not installed; "
                                    f"install it: kubectl apply --server-side ")
    assert "\n" not in error.message and str(error) == error.message
    assert server.crd_reads() == [f"{CRDS}/{kind.plural}.kubeflow.org"]
    assert isinstance(error, ClusterApiError) and error.status == 404 and error.kind == kind.name


def test_a_crd_whose_names_clash_is_named_with_its_names_accepted_condition() -> None:
    server = FakeServer(served=(TENSORFLOWJOB,), crds=(crd(TFJOB, NAMES_CLASH, NOT_ACCEPTED),))

    error = not_served_error(server, TFJOB)

    assert error.message.startswith(
        "TFJob (tfjobs.kubeflow.org) is not served by this cluster: its CustomResourceDefinition "
        'tfjobs.kubeflow.org has NamesAccepted=False (SingularConflict: "tfjob" is already in use); resolve the '
        "name conflict with the other CRD of group kubeflow.org that holds the name (kubectl get crd)")
    assert "-k manifests/kubeflow/" in error.message
    assert error.condition == NAMES_CLASH and error.crd == "tfjobs.kubeflow.org"


def test_a_crd_that_may_not_be_read_still_names_the_kind_not_served() -> None:
    forbidden = status_answer(403, "Forbidden", 'customresourcedefinitions.apiextensions.k8s.io "tfjobs.kubeflow.org" '
                                                'is forbidden: User "alice" cannot get resource')
    server = FakeServer(served=(TENSORFLOWJOB,), crd_refusal=forbidden)

    error = not_served_error(server, TFJOB)

    assert error.message.startswith(
        "TFJob (tfjobs.kubeflow.org) is not served by this cluster, and its CustomResourceDefinition "
        'tfjobs.kubeflow.org could not be read (Forbidden: customresourcedefinitions.apiextensions.k8s.io '
        '"tfjobs.kubeflow.org" is forbidden: User "alice" cannot get resource); ask a cluster admin')
    assert error.condition is None


@pytest.mark.parametrize(("conditions", "versions", "says"), [
    ((), ("v1",), "is not Established yet; wait for it (kubectl wait --for condition=Established "
                  "crd/tfjobs.kubeflow.org)"),
    ((NAMES_OK, {"type": "Established", "status": "False", "reason": "Installing", "message": "installing"}),
     ("v1",), "has Established=False (Installing: installing); wait for it"),
    ((NAMES_OK, ESTABLISHED, {"type": "Terminating", "status": "True", "reason": "InstanceDeletionInProgress",
                              "message": "CustomResource deletion is in progress"}),
     ("v1",), "is being deleted (Terminating=True (InstanceDeletionInProgress: CustomResource deletion is in "
              "progress)); install it again once it is gone"),
    ((NAMES_OK, ESTABLISHED), ("v2beta1",), "does not serve version v1 (it serves: v2beta1); apply a CRD that "
                                            "serves kubeflow.org/v1"),
    ((NAMES_OK, ESTABLISHED), ("v1",), "is Established only now; try again in a moment"),
], ids=["no-conditions-yet", "not-established", "terminating", "other-version", "just-established"])
def test_every_other_reason_a_crd_is_not_served_is_named(conditions: tuple[dict[str, str], ...],
                                                         versions: tuple[str, ...], says: str) -> None:
    server = FakeServer(crds=(crd(TFJOB, *conditions, versions=versions),))

    error = not_served_error(server, TFJOB)

    assert error.message.startswith(f"TFJob (tfjobs.kubeflow.org) is not served by this cluster: its "
                                    f"CustomResourceDefinition tfjobs.kubeflow.org {says}")


def test_a_long_condition_message_is_clipped_to_one_short_line() -> None:
    clash = {**NAMES_CLASH, "message": "in use\n" + "x" * 2000}
    server = FakeServer(crds=(crd(TFJOB, clash),))

    error = not_served_error(server, TFJOB)

    assert "\n" not in error.message and len(error.message) < 1000 and "x..." in error.message


# --- where the client looks and where it does not --------------------------------------------------------


def test_a_missing_job_of_a_served_kind_is_job_not_found_without_reading_the_crd() -> None:
    server = FakeServer(served=KINDS)

    with pytest.raises(JobNotFound):
        TfJobClient(server, "ns").get("mnist", kind="TFJob")

    assert server.crd_reads() == []


def test_a_name_is_not_found_when_the_other_kind_is_not_served_and_no_crd_is_read() -> None:
    server = FakeServer(served=(TENSORFLOWJOB,))

    with pytest.raises(JobNotFound, match='"mnist" not found in namespace ns'):
        TfJobClient(server, "ns").get("mnist")

    assert server.crd_reads() == []


def test_a_job_of_an_unserved_kind_asked_for_by_kind_says_the_kind_is_not_served() -> None:
    server = FakeServer(served=(TENSORFLOWJOB,), crds=(crd(TFJOB, NAMES_CLASH),))

    with pytest.raises(KindNotServed, match="NamesAccepted=False"):
        TfJobClient(server, "ns").wait_for("mnist", kind="TFJob")


def test_a_name_when_neither_kind_is_served_says_why_for_the_first() -> None:
    server = FakeServer()

    with pytest.raises(KindNotServed, match=r"^TensorFlowJob \(tensorflowjobs.kubeflow.org\) is not served"):
        TfJobClient(server, "ns").get("mnist")


def test_listing_both_kinds_leaves_out_the_one_not_served() -> None:
    job = {**job_of(TENSORFLOWJOB), "metadata": {"name": "mnist", "namespace": "ns"}}
    server = FakeServer(served=(TENSORFLOWJOB,), jobs={"/apis/kubeflow.org/v1/namespaces/ns/tensorflowjobs/mnist": job})

    listed = TfJobClient(server, "ns").list()

    assert [j["metadata"]["name"] for j in listed] == ["mnist"] and server.crd_reads() == []


@pytest.mark.parametrize("kind", [None, "TFJob"])
def test_listing_a_kind_not_served_says_why(kind: str | None) -> None:
    server = FakeServer(crds=(crd(TENSORFLOWJOB, NAMES_CLASH), crd(TFJOB, NAMES_CLASH)))

    with pytest.raises(KindNotServed) as raised:
        TfJobClient(server, "ns").list(kind=kind)

    assert raised.value.kind == (kind or "TensorFlowJob") and raised.value.condition == NAMES_CLASH


def test_deleting_a_job_of_a_kind_not_served_says_why() -> None:
    server = FakeServer(served=(TENSORFLOWJOB,))

    with pytest.raises(KindNotServed, match="is not installed"):
        TfJobClient(server, "ns").delete("mnist", kind="TFJob")


# --- kubectl tfjob ----------------------------------------------------------------------------------------


def submit(mocker: MockerFixture, server: FakeServer, job: dict[str, Any], tmp_path: Path) -> tuple[int, str, str]:
    mocker.patch.object(cli.TfJobClient, "connect", return_value=TfJobClient(server, "ns"))
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(job))
    out, err = io.StringIO(), io.StringIO()
    status = cli.main(["submit", "-f", str(path)], cli.Console(out, err, tty=False))
    return status, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_submit_of_a_kind_whose_names_clash_prints_why_on_one_line(mocker: MockerFixture, tmp_path: Path,
                                                                   kind: JobKind) -> None:
    server = FakeServer(served=tuple(k for k in KINDS if k is not kind), crds=(crd(kind, NAMES_CLASH, NOT_ACCEPTED),))

    status, out, err = submit(mocker, server, job_of(kind), tmp_path)

    assert status == 1 and out == ""
    assert err.startswith(f"error: {kind.name} ({kind.resource}) is not served by this cluster: its "
                          f"CustomResourceDefinition {kind.resource} has NamesAccepted=False (SingularConflict: ")
    assert err.endswith("\n") and err.count("\n") == 1
    assert "404 page not found" not in err


def test_submit_of_a_kind_not_installed_prints_why_on_one_line(mocker: MockerFixture, tmp_path: Path) -> None:
    status, _, err = submit(mocker, FakeServer(served=(TENSORFLOWJOB,)), job_of(TFJOB), tmp_path)

    assert status == 1
    assert err == ("error: TFJob (tfjobs.kubeflow.org) is not served by this cluster: its CustomResourceDefinition "
                   "tfjobs.kubeflow.org is not installed; install it: kubectl apply --server-side --force-conflicts "
                   "-k manifests/kubeflow/ (docs/kubeflow.md)\n")
