"""Fixtures for the controller's integration tests: the CRD installed, a running operator process,
an API client, and `TfJobs`, a small driver for one test namespace (`KubeflowTfJobs` for Kubeflow's
TFJob kind: tests parametrised with `tests.support.kinds.both_kinds` run once per kind, the cluster's
CRDs switched for the kind by `CrdScheme`).

The operator runs as a real `tfjob-operator run --kubeconfig ...` subprocess (session-scoped; tests
that kill or restart it start their own with `start_operator`). Its log is printed when a test fails.

Tests that need an operator with other flags (a gang scheduler, every feature on) ask
`standing_operator` for one: it runs in place of the session's and is left running for the next
test that asks for the same flags under the same CRDs, so a module of such tests pays for one start
instead of two starts and two stops per test. Any other test stops it and has the session's back.
"""

from __future__ import annotations

import itertools
import os
import pathlib
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from kube import ApiError, Kube, resource_path
from tests.support.jobs import SIM_EXIT_AFTER, SIM_EXIT_CODE, devcluster_role, tfjob
from tests.support.kubeflow import as_tfjob, as_tfjob_patch
from tests.support.operator import Operator
from tests.support.polling import wait_for
from tfjob_api.kubeflow_status import to_model_status

ROOT = pathlib.Path(__file__).resolve().parents[3]
CRD = ROOT / "manifests" / "crd.yaml"
KUBEFLOW_TENSORFLOWJOB_CRD = ROOT / "manifests" / "kubeflow" / "tensorflowjob-crd.yaml"
TFJOB_CRD = ROOT / "manifests" / "kubeflow" / "tfjob-crd.yaml"
TFJOB_CRD_NAME = "tfjobs.kubeflow.org"


@pytest.fixture(scope="session")
def api(cluster: Any) -> Iterator[Kube]:
    client = Kube.from_kubeconfig(str(cluster.kubeconfig), pool_size=32)
    yield client
    client.close()


def crd_path(name: str) -> str:
    return resource_path("apiextensions.k8s.io", "v1", "customresourcedefinitions", None, name)


def crd_condition(api: Kube, name: str, kind: str) -> bool:
    try:
        conditions = (api.get(crd_path(name)).get("status") or {}).get("conditions") or []
    except ApiError as error:
        if error.not_found:
            return False
        raise
    return any(c["type"] == kind and c["status"] == "True" for c in conditions)


class CrdScheme:
    """Which CRDs the session's cluster serves: "default" (manifests/crd.yaml: TensorFlowJob with the
    short name tfjob) or "kubeflow" (manifests/kubeflow/: TensorFlowJob without it, and the TFJob CRD).

    Tests of either kind ask for their scheme (`use`); a switch stops the session operator, changes
    the CRDs, drops kubectl's discovery cache (it would still map `tfjob` to the other kind) and
    starts the operator again if it was running, so under "kubeflow" it serves TFJobs
    (--kubeflow-tfjob=auto). A standing operator (`standing_operator`) is stopped: it learned the
    kinds served at its start."""

    def __init__(self, cluster: Any, api: Kube) -> None:
        self.cluster, self.api = cluster, api
        self.current = "default"

    def use(self, scheme: str) -> None:
        if scheme == self.current:
            return
        _drop_standing(restart_shared=False)
        shared = _SESSION_OPERATOR[0] if _SESSION_OPERATOR and _SESSION_OPERATOR[0].running() else None
        if shared is not None:
            shared.stop()
        if scheme == "kubeflow":
            self.cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(KUBEFLOW_TENSORFLOWJOB_CRD),
                                 "-f", str(TFJOB_CRD))
            wait_for(lambda: crd_condition(self.api, TFJOB_CRD_NAME, "Established"), 60, "the TFJob CRD")
            # Established comes before the API server serves the kind (a 404 "page not found" for a
            # moment): a test's first request must not race that.
            wait_for(lambda: self.serves("tfjobs"), 60, "the API server to serve TFJobs")
        else:
            self.to_default()
        shutil.rmtree(pathlib.Path(self.cluster.dir) / "kubectl-cache", ignore_errors=True)
        self.current = scheme
        if shared is not None:
            shared.start()

    def to_default(self) -> None:
        try:
            self.api.delete(crd_path(TFJOB_CRD_NAME))
        except ApiError as error:
            if not error.not_found:
                raise
        wait_for(lambda: not self.served(TFJOB_CRD_NAME), 120, "the TFJob CRD to be gone")
        self.cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(CRD))
        wait_for(lambda: "tfjob" in self.short_names(), 60, "the TensorFlowJob CRD to accept its short name")
        wait_for(lambda: self.serves("tensorflowjobs"), 60, "the API server to serve TensorFlowJobs")

    def serves(self, plural: str) -> bool:
        """Whether the API server answers a list of the kind (not only that its CRD exists)."""
        try:
            self.api.list(resource_path("kubeflow.org", "v1", plural), limit=1)
        except ApiError as error:
            if error.not_found:
                return False
            raise
        return True

    def served(self, name: str) -> bool:
        try:
            self.api.get(crd_path(name))
        except ApiError as error:
            if error.not_found:
                return False
            raise
        return True

    def short_names(self) -> list[str]:
        status = self.api.get(crd_path("tensorflowjobs.kubeflow.org")).get("status") or {}
        return (status.get("acceptedNames") or {}).get("shortNames") or []


@pytest.fixture(scope="session")
def crd(cluster: Any, api: Kube) -> None:
    scheme = CrdScheme(cluster, api)
    scheme.to_default()  # (a reused cluster may be left with the other scheme)
    _SCHEME.append(scheme)
    wait_for(lambda: crd_condition(api, "tensorflowjobs.kubeflow.org", "Established"), 60,
             "the TensorFlowJob CRD to be Established")


@pytest.fixture
def crd_scheme(crd: None) -> CrdScheme:
    return _SCHEME[0]


@pytest.fixture(scope="session")
def job_kind(request: pytest.FixtureRequest) -> str:
    """The kind a test's jobs are (TensorFlowJob unless a test is parametrised with
    `tests.support.kinds.both_kinds`)."""
    return getattr(request, "param", "TensorFlowJob")


@pytest.fixture(scope="session")
def operator(cluster: Any, crd: None) -> Iterator[Operator]:
    process = Operator(str(cluster.kubeconfig), "operator-session").start()
    _SESSION_OPERATOR.append(process)
    yield process
    _SESSION_OPERATOR.remove(process)
    process.stop()


@pytest.fixture(autouse=True)
def _session_operator_running(request: pytest.FixtureRequest) -> None:
    """The shared operator, started afresh for a test that uses it if it is not running: it died, or a
    test that stopped it could not start it again. That test's failure stays its own, not every later
    test's. A test that does not ask for the standing operator stops it first (and has the session's
    started again, unless it stops that one itself); one that does leaves the session's stopped."""
    if "standing_operator" in request.fixturenames:
        return  # (the session's stays stopped: the standing one runs in its place)
    _drop_standing(restart_shared="no_session_operator" not in request.fixturenames)
    if "operator" in request.fixturenames:
        shared = request.getfixturevalue("operator")
        if isinstance(shared, Operator) and not shared.running():
            shared.start()


@dataclass
class _Standing:
    """The operator `standing_operator` keeps, with what it was started for."""

    flags: tuple[str, ...]
    scheme: str  # CrdScheme.current at its start: it learns the served kinds then
    process: Operator


_STANDING: list[_Standing] = []  # at most one
_STANDING_NUMBERS = itertools.count()


def _drop_standing(restart_shared: bool = True) -> None:
    """Stop the standing operator, if there is one, and start the session's again (with `restart_shared`)."""
    if not _STANDING:
        return
    _STANDING.pop().process.stop()
    shared = _SESSION_OPERATOR[0] if _SESSION_OPERATOR else None
    if restart_shared and shared is not None:
        shared.start()


@pytest.fixture(scope="session")
def _standing_stopped(cluster: Any) -> Iterator[None]:
    """Stops the standing operator at the end of the session, before the cluster."""
    yield
    _drop_standing(restart_shared=False)


@pytest.fixture
def standing_operator(cluster: Any, crd: None, _standing_stopped: None) -> Callable[[list[str]], Operator]:
    """`standing_operator(flags)`: an operator with these flags in place of the session's (stopped), kept
    running after the test for the next one that asks for the same flags under the same CRDs; one
    asked for with other flags or CRDs replaces it, and a test that asks for none stops it
    (`_session_operator_running`). Ask for it after the fixtures that set the CRDs (`tfjobs`,
    `kind_jobs`, `crd_scheme.use`): the operator learns the served kinds at start. A test may kill
    and start it again; one that left it stopped has it started again by the next."""
    def standing(flags: list[str]) -> Operator:
        key = (tuple(flags), _SCHEME[0].current)
        if _STANDING and (_STANDING[0].flags, _STANDING[0].scheme) != key:
            _drop_standing(restart_shared=False)
        shared = _SESSION_OPERATOR[0] if _SESSION_OPERATOR else None
        if shared is not None:
            shared.stop()
        if not _STANDING:
            process = Operator(str(cluster.kubeconfig), f"standing-{next(_STANDING_NUMBERS)}", list(flags))
            process.log_path.unlink(missing_ok=True)  # (a file of an earlier session)
            _STANDING.append(_Standing(*key, process))
        process = _STANDING[0].process
        if not process.running():
            process.start()
        return process
    return standing


@pytest.fixture
def no_session_operator() -> Iterator[None]:
    """Stop the shared operator for one test (which runs its own), and start it again afterwards.

    Two operators without leader election would both reconcile the same jobs."""
    shared = _SESSION_OPERATOR[0] if _SESSION_OPERATOR else None
    if shared is not None:
        shared.stop()
    yield
    if shared is not None:
        shared.start()


_SESSION_OPERATOR: list[Operator] = []
_SCHEME: list[CrdScheme] = []


@pytest.fixture
def start_operator(cluster: Any, crd: None, request: pytest.FixtureRequest) -> Iterator[Callable[..., Operator]]:
    """Start extra operator processes (stopped at the end of the test)."""
    started: list[Operator] = []

    def start(extra: list[str] | None = None, wait_ready: bool = True,
              kubeconfig: str | os.PathLike[str] | None = None) -> Operator:
        """An operator with these flags, credentials from `kubeconfig` (the cluster's admin one by default)."""
        process = Operator(str(kubeconfig or cluster.kubeconfig), f"{request.node.name}-{len(started)}", extra)
        process.log_path.unlink(missing_ok=True)  # the log of this run only
        started.append(process)
        return process.start(wait_ready)

    yield start
    for process in started:
        process.stop()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" and report.failed:
        for name in ("operator",):
            process = item.funcargs.get(name) if hasattr(item, "funcargs") else None
            if isinstance(process, Operator):
                report.sections.append((f"{name} log (tail)", process.tail()))
        if _STANDING and "standing_operator" in getattr(item, "fixturenames", ()):
            report.sections.append(("standing operator log (tail)", _STANDING[0].process.tail()))


class TfJobs:
    """Create and observe TensorFlowJobs in one namespace through the real API."""

    role = staticmethod(devcluster_role)
    wait_for = staticmethod(wait_for)

    def __init__(self, api: Kube, namespace: str, cluster: Any) -> None:
        self.api = api
        self.namespace = namespace
        self.cluster = cluster

    def path(self, name: str | None = None, sub: str | None = None) -> str:
        return resource_path("kubeflow.org", "v1", "tensorflowjobs", self.namespace, name, sub)

    def create(self, name: str, **spec: Any) -> dict[str, Any]:
        return self.api.create(self.path(), tfjob(name, spec, namespace=self.namespace))

    def apply_yaml(self, text: str) -> subprocess.CompletedProcess[str]:
        return self.cluster.kubectl("apply", "-n", self.namespace, "-f", "-", input=text, check=False)

    def get(self, name: str) -> dict[str, Any] | None:
        try:
            return self.api.get(self.path(name))
        except ApiError as error:
            if error.not_found:
                return None
            raise

    def patch(self, name: str, spec: dict[str, Any]) -> dict[str, Any]:
        return self.api.patch(self.path(name), {"spec": spec})

    def delete(self, name: str) -> None:
        self.api.delete(self.path(name), propagation="Background")

    def status(self, name: str) -> dict[str, Any]:
        job = self.get(name) or {}
        return job.get("status") or {}

    def condition(self, name: str, kind: str) -> dict[str, Any] | None:
        return next((c for c in self.status(name).get("conditions") or [] if c["type"] == kind), None)

    def has_condition(self, name: str, kind: str, reason: str | None = None) -> bool:
        found = self.condition(name, kind)
        return bool(found) and found["status"] == "True" and (reason is None or found.get("reason") == reason)

    def wait_condition(self, name: str, kind: str, reason: str | None = None, timeout: float = 60) -> dict[str, Any]:
        wait_for(lambda: self.has_condition(name, kind, reason), timeout,
                 f"{name} to be {kind}{'/' + reason if reason else ''} (status: {self.status(name)})")
        return self.condition(name, kind) or {}

    def pods(self, job: str, role: str | None = None, include_terminating: bool = True) -> list[dict[str, Any]]:
        selector = f"tensorflowjob.kubeflow.org/job-name={job}"
        if role:
            selector += f",tensorflowjob.kubeflow.org/replica-type={role}"
        items = self.api.list(resource_path("", "v1", "pods", self.namespace), labelSelector=selector)["items"]
        if not include_terminating:
            items = [p for p in items if not p["metadata"].get("deletionTimestamp")]
        return sorted(items, key=lambda p: p["metadata"]["name"])

    def pod_names(self, job: str, role: str | None = None) -> list[str]:
        return [p["metadata"]["name"] for p in self.pods(job, role, include_terminating=False)]

    def wait_pods(self, job: str, count: int, phase: str | None = "Running", role: str | None = None,
                  timeout: float = 60) -> list[dict[str, Any]]:
        def ready() -> list[dict[str, Any]] | None:
            pods = self.pods(job, role, include_terminating=False)
            matching = [p for p in pods if phase is None or (p.get("status") or {}).get("phase") == phase]
            return pods if len(pods) == count and len(matching) == count else None
        return wait_for(ready, timeout, f"{count} {role or ''} pods of {job} {phase or ''} "
                                          f"(now: {[(p['metadata']['name'], (p.get('status') or {}).get('phase')) for p in self.pods(job, role)]})")

    def exit_pod(self, pod: str, code: int) -> None:
        """Make a running pod exit with `code` (the KWOK stage reacts to the annotation)."""
        self.api.patch(resource_path("", "v1", "pods", self.namespace, pod),
                       {"metadata": {"annotations": {SIM_EXIT_CODE: str(code), SIM_EXIT_AFTER: "0s"}}})

    def service(self, name: str) -> dict[str, Any] | None:
        try:
            return self.api.get(resource_path("", "v1", "services", self.namespace, name))
        except ApiError as error:
            if error.not_found:
                return None
            raise

    def events(self, name: str) -> list[dict[str, Any]]:
        items = self.api.list(resource_path("", "v1", "events", self.namespace),
                              fieldSelector=f"involvedObject.name={name}")["items"]
        return items


class KubeflowTfJobs(TfJobs):
    """`TfJobs` for Kubeflow's TFJob kind: the same scenarios, each job created as the TFJob that
    means the same (`tests.support.kubeflow.as_tfjob`), and its status read as the planner's (so
    one assertion holds for both kinds; the TFJob's own status is `stored_status`)."""

    def path(self, name: str | None = None, sub: str | None = None) -> str:
        return resource_path("kubeflow.org", "v1", "tfjobs", self.namespace, name, sub)

    def create(self, name: str, **spec: Any) -> dict[str, Any]:
        return self.api.create(self.path(), as_tfjob(name, spec, namespace=self.namespace))

    def patch(self, name: str, spec: dict[str, Any]) -> dict[str, Any]:
        return self.api.patch(self.path(name), {"spec": as_tfjob_patch(spec)})

    def stored_status(self, name: str) -> dict[str, Any]:
        return super().status(name)

    def status(self, name: str) -> dict[str, Any]:
        return to_model_status(self.stored_status(name))


def jobs_driver(api: Kube, namespace: str, cluster: Any, crd_scheme: CrdScheme, job_kind: str) -> TfJobs:
    """The driver of a kind of job, the cluster's CRDs set for it."""
    if job_kind == "TFJob":
        crd_scheme.use("kubeflow")
        return KubeflowTfJobs(api, namespace, cluster)
    crd_scheme.use("default")
    return TfJobs(api, namespace, cluster)


@pytest.fixture
def tfjobs(api: Kube, namespace: str, cluster: Any, operator: Operator, crd_scheme: CrdScheme,
           job_kind: str) -> TfJobs:
    """The driver of the test's kind of job, with the cluster's CRDs set for it."""
    return jobs_driver(api, namespace, cluster, crd_scheme, job_kind)


@pytest.fixture
def kubeflow_tfjobs(api: Kube, namespace: str, cluster: Any, operator: Operator,
                    crd_scheme: CrdScheme) -> KubeflowTfJobs:
    """TFJobs served by the session operator (the cluster set to serve both kinds)."""
    crd_scheme.use("kubeflow")
    return KubeflowTfJobs(api, namespace, cluster)


@pytest.fixture
def tfjobs_no_operator(api: Kube, namespace: str, cluster: Any, crd: None) -> TfJobs:
    return TfJobs(api, namespace, cluster)
