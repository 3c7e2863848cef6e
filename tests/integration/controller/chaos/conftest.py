"""Fixtures for the fault-injection (chaos) suite: the operator and the cluster under it fail while jobs run.

Size: `CHAOS_SCALE=ci` (the default, run by `make test`) or `full` (`make chaos`); the numbers of
both are in `SCALES`. Randomness: every test draws from `rng`, seeded from `CHAOS_SEED` (or a fresh
seed) and the test's name; the seed is printed in the terminal summary and with every failure, so
`CHAOS_SEED=<n> pytest tests/integration/controller/chaos -k <test>` replays a run.

Fixtures:
* `scale` — this run's `Scale`;
* `rng` — the test's `random.Random`;
* `operators` — start `tfjob-operator run` processes (own kubeconfig optional), stopped afterwards;
  their log tails are attached to a failure;
* `pod_watch` / `job_watch` — the raw-watch observers of `watching.py` on the test's namespace;
* `chaos_results` — each test records what it injected and what it measured; the terminal summary
  prints the table and writes it to `$TFJOB_TEST_LOG_DIR/chaos-results-<scale>.json`.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kube import ApiError, Kube, resource_path
from tests.support.operator import LOG_DIR, Operator
from tests.support.polling import wait_for
from tfjob_api.names import JOB_NAME_LABEL

from .watching import JobWatch, PodWatch

SCALE_ENV = "CHAOS_SCALE"
SEED_ENV = "CHAOS_SEED"


@dataclass(frozen=True)
class Scale:
    name: str
    # 1. operator SIGKILLed while jobs are created, scaled and finishing
    kill_jobs: int
    kills: int
    # 2. API server and etcd restarted
    restart_jobs: int
    # 3. watch history compacted while the operator is away
    compaction_jobs: int
    # 4. node lost
    node_jobs: int
    node_workers: int
    nodes_lost: int
    # 5. pod churn
    churn_workers: int
    churn_rounds: int
    churn_per_round: int
    # 6. leader failover
    failover_jobs: int
    failovers: int
    # 7. faulty API
    proxy_jobs: int
    fault_seconds: float
    # 8. fuzzing
    planner_examples: int
    apply_examples: int  # batches of four jobs: valid, rejected, invalid spec, bad template


SCALES = {
    "ci": Scale("ci", kill_jobs=10, kills=3, restart_jobs=4, compaction_jobs=3, node_jobs=2, node_workers=4,
                nodes_lost=1, churn_workers=3, churn_rounds=3, churn_per_round=2, failover_jobs=8, failovers=2,
                proxy_jobs=8, fault_seconds=15.0, planner_examples=300, apply_examples=6),
    "full": Scale("full", kill_jobs=50, kills=10, restart_jobs=12, compaction_jobs=8, node_jobs=4, node_workers=8,
                  nodes_lost=2, churn_workers=6, churn_rounds=10, churn_per_round=3, failover_jobs=20, failovers=3,
                  proxy_jobs=10, fault_seconds=60.0, planner_examples=3000, apply_examples=30),
}


def current_scale() -> Scale:
    name = os.environ.get(SCALE_ENV, "ci")
    if name not in SCALES:
        raise pytest.UsageError(f"{SCALE_ENV}={name!r}: must be one of {', '.join(SCALES)}")
    return SCALES[name]


FIRST_MARK = "chaos_first"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{FIRST_MARK}: run before the other chaos tests (needs a control plane "
                                       "that has not been restarted in this session)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Move the chaos tests marked `chaos_first` ahead of the other chaos tests.

    Observed: once the API server has been restarted in a session, KWOK sometimes keeps confirming
    pod deletions on a node whose heartbeats stopped (lose_node), so evicted pods vanish at once
    instead of staying Terminating and the lost-node scenario does not happen. The node-loss test
    therefore runs before the tests that restart the control plane."""
    here = Path(__file__).resolve().parent
    chaos = [i for i, item in enumerate(items) if Path(str(item.path)).resolve().parent == here]
    if not chaos:
        return
    first = [items[i] for i in chaos if items[i].get_closest_marker(FIRST_MARK)]
    rest = [items[i] for i in chaos if not items[i].get_closest_marker(FIRST_MARK)]
    for position, item in zip(chaos, first + rest, strict=True):
        items[position] = item


SESSION_SEED = int(os.environ.get(SEED_ENV) or random.SystemRandom().randrange(2**32))
RESULTS: list[dict[str, Any]] = []


@pytest.fixture(scope="session")
def scale() -> Scale:
    return current_scale()


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> random.Random:
    """A random source seeded by the session seed and the test's name (replayable per test)."""
    print(f"chaos seed {SESSION_SEED} (replay: {SEED_ENV}={SESSION_SEED} {SCALE_ENV}={current_scale().name})")
    return random.Random(f"{SESSION_SEED}:{request.node.name}")


@pytest.fixture
def chaos_results(request: pytest.FixtureRequest, scale: Scale) -> Callable[..., None]:
    def record(**facts: Any) -> None:
        RESULTS.append({"test": request.node.name, "scale": scale.name, "seed": SESSION_SEED, **facts})
    return record


_OPERATORS = pytest.StashKey[list[Operator]]()


@pytest.fixture
def operators(cluster: Any, crd: None, request: pytest.FixtureRequest) -> Iterator[Callable[..., Operator]]:
    """Start operator processes: `operators(extra_args, kubeconfig=None, wait_ready=True)`."""
    started: list[Operator] = []
    request.node.stash[_OPERATORS] = started

    def start(extra: list[str] | None = None, kubeconfig: str | os.PathLike[str] | None = None,
              wait_ready: bool = True) -> Operator:
        operator = Operator(str(kubeconfig or cluster.kubeconfig), f"chaos-{request.node.name}-{len(started)}", extra)
        operator.log_path.unlink(missing_ok=True)
        started.append(operator)
        return operator.start(wait_ready)

    yield start
    for operator in started:
        if operator.process is not None and operator.process.poll() is None:
            with contextlib.suppress(OSError):
                os.kill(operator.process.pid, signal.SIGCONT)  # in case a test paused it
        operator.stop()


@pytest.fixture
def pod_watch(api: Kube, namespace: str) -> Iterator[PodWatch]:
    watch = PodWatch(api, namespace)
    watch.start()
    yield watch
    watch.stop()
    watch.assert_healthy()


@pytest.fixture
def job_watch(api: Kube, namespace: str) -> Iterator[JobWatch]:
    watch = JobWatch(api, namespace)
    watch.start()
    yield watch
    watch.stop()
    watch.assert_healthy()


class Supervisor:
    """Restart control-plane components that crash, as the kubelet restarts static pods.

    Restarting the API server can kill the kube-scheduler (it exits with the fatal log "Pod updated
    on a different node than previously added to. Scheduler cache is corrupted"): in a real cluster
    the kubelet restarts it; in the devcluster nothing would, and pods would stay Pending for the
    rest of the session. Components a test restarts on purpose are left to the test, which holds
    `lock` while doing so.
    """

    WATCHED = ("kube-controller-manager", "kube-scheduler", "kwok")

    def __init__(self, cluster: Any) -> None:
        self.cluster = cluster
        self.lock = threading.Lock()
        self.revived: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="control-plane supervisor", daemon=True)

    def __enter__(self) -> Supervisor:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(30)
        self.revive()

    def revive(self) -> None:
        with self.lock:
            for component in self.WATCHED:
                if not self.cluster.is_running(component):
                    self.revived.append(component)
                    self.cluster.start_component(component, wait=False)

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            self.revive()


@pytest.fixture
def supervisor(cluster: Any) -> Iterator[Supervisor]:
    with Supervisor(cluster) as running:
        yield running


# ---- shared checks ----------------------------------------------------------------------------------


def metric_total(operator: Operator, name: str, **labels: str) -> float:
    """The sum of one metric's samples whose labels include `labels` (0 when absent)."""
    total = 0.0
    for family in text_string_to_metric_families(operator.metrics()):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                total += sample.value
    return total


def leftovers(api: Kube, namespace: str) -> list[str]:
    """Pods and Services carrying the job label that still exist in the namespace."""
    found = []
    for plural in ("pods", "services"):
        items = api.list(resource_path("", "v1", plural, namespace), label_selector=JOB_NAME_LABEL)["items"]
        found += [f"{plural}/{item['metadata']['name']}" for item in items]
    return found


def wait_no_leftovers(api: Kube, namespace: str, timeout: float) -> float:
    """Wait until garbage collection removed every pod and Service of the (deleted) jobs; the seconds taken."""
    started = time.monotonic()
    wait_for(lambda: not leftovers(api, namespace) or None, timeout,
             f"no orphan pods or Services in {namespace} (left: {leftovers(api, namespace)})", interval=0.5)
    return time.monotonic() - started


def wait_cluster_serves_new_namespaces(api: Kube, timeout: float = 180) -> None:
    """After an API server or etcd restart, wait until the controller-manager works again (it
    creates the `default` ServiceAccount of new namespaces, which later tests' pods need)."""
    name = f"chaos-settle-{random.SystemRandom().randrange(16**8):08x}"
    api.create("/api/v1/namespaces", {"metadata": {"name": name}})
    try:
        def served() -> bool:
            try:
                api.get(f"/api/v1/namespaces/{name}/serviceaccounts/default")
                return True
            except ApiError:
                return False
        wait_for(served, timeout, "the controller-manager to serve new namespaces again", interval=0.5)
    finally:
        api.delete(f"/api/v1/namespaces/{name}")


# ---- reporting --------------------------------------------------------------------------------------


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if report.failed and report.when in ("setup", "call"):
        report.sections.append(("chaos seed", f"{SEED_ENV}={SESSION_SEED} {SCALE_ENV}={current_scale().name}"))
        for operator in item.stash.get(_OPERATORS, []):
            report.sections.append((f"operator {operator.log_path.name} (tail)", operator.tail(40)))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not RESULTS:
        return
    scale = current_scale().name
    terminalreporter.section(f"chaos results ({scale} size, {SEED_ENV}={SESSION_SEED})")
    for result in RESULTS:
        facts = ", ".join(f"{k}={v}" for k, v in result.items() if k not in ("test", "scale", "seed"))
        terminalreporter.write_line(f"{result['test']}: {facts}")
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    path = Path(LOG_DIR) / f"chaos-results-{scale}.json"
    path.write_text(json.dumps(RESULTS, indent=2))
    terminalreporter.write_line(f"written to {path}")
