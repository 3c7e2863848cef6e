"""Fault 7: a slow and failing API, through the fault-injecting proxy (faultproxy.py).

The operator talks to the API server only through the proxy (a ServiceAccount token bound to
cluster-admin, the proxy's CA). Once the operator has created the jobs' first pod, for a while every
request — watches included — may be delayed, throttled with 429 and a Retry-After, failed with 500,
dropped before it reaches the API server, or lost after it took effect; open watches are cut now and
then. Meanwhile the jobs run, are scaled and finish. Then the faults stop (after a set time, and not
before each kind has happened). The operator must retry with back-off, never send a request again
sooner than the Retry-After it was given (a few watches are always throttled), never hot-loop,
never create anything twice nor claim a name conflict that does not exist, and converge.
"""

from __future__ import annotations

import base64
import random
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kube import ApiError, Kube, resource_path
from tests.support.polling import until_empty, wait_for

from ..conftest import Operator, TfJobs
from .conftest import Scale, metric_total
from .faultproxy import Exchange, FaultProxy, Faults
from .watching import JobWatch, PodWatch
from .workload import live_pods_of_finished_jobs, mixed_jobs, outcome_problems, unfinished

pytestmark = pytest.mark.usefixtures("no_session_operator")

FAULTS = Faults(delay=0.15, max_delay=1.0, throttle=0.10, retry_after=(1, 3), error=0.08, drop=0.05, lose=0.05,
                first=("delay", "throttle", "error", "drop", "lose"))
WATCH_RETRY_AFTER = 3  # seconds, for the watches throttled after the first cut
RETRY_AFTER_SLACK = 0.02  # seconds: the proxy stamps a 429 just before the client reads it
MAX_RETRIES_PER_SECOND = 4  # tenacity's back-off (0.2 s doubling), then a 5 ms requeue, allow about 3
RBAC = "rbac.authorization.k8s.io"


@pytest.fixture
def admin_token(cluster: Any, api: Kube, namespace: str) -> Iterator[str]:
    """A token of a ServiceAccount bound to cluster-admin (the binding is deleted afterwards)."""
    api.create(resource_path("", "v1", "serviceaccounts", namespace), {"metadata": {"name": "chaos-operator"}})
    binding = f"chaos-{namespace}"
    api.create(resource_path(RBAC, "v1", "clusterrolebindings"), {
        "metadata": {"name": binding},
        "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"kind": "ServiceAccount", "name": "chaos-operator", "namespace": namespace}]})
    config = yaml.safe_load(Path(cluster.service_account_kubeconfig(namespace, "chaos-operator")).read_text())
    yield config["users"][0]["user"]["token"]
    try:
        api.delete(resource_path(RBAC, "v1", "clusterrolebindings", None, binding))
    except ApiError as error:
        if not error.not_found:
            raise


def kubeconfig_for(proxy: FaultProxy, token: str, folder: Path) -> Path:
    ca = proxy.ca.read_bytes()
    path = folder / "through-proxy.kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "proxy",
        "clusters": [{"name": "proxy", "cluster": {"server": proxy.url,
                                                   "certificate-authority-data": base64.b64encode(ca).decode()}}],
        "users": [{"name": "operator", "user": {"token": token}}],
        "contexts": [{"name": "proxy", "context": {"cluster": "proxy", "user": "operator"}}]}))
    return path


def too_soon(log: list[Exchange]) -> list[str]:
    """Requests sent again sooner than the Retry-After of the 429 answered just before."""
    problems = []
    for number, refused in enumerate(log):
        if refused.fate != "throttle" or refused.answered_at is None or refused.retry_after is None:
            continue
        again = next((e for e in log[number + 1:] if e.key == refused.key), None)
        if again is not None and again.at - refused.answered_at < refused.retry_after - RETRY_AFTER_SLACK:
            problems.append(f"{refused.key}: 429 with Retry-After {refused.retry_after}, "
                            f"sent again {again.at - refused.answered_at:.3f}s later")
    return problems


def hammered(log: list[Exchange]) -> list[str]:
    """Requests sent again more than MAX_RETRIES_PER_SECOND times in the second after a failure."""
    problems = []
    for number, failed in enumerate(log):
        if failed.fate not in ("error", "drop", "lose"):
            continue
        again = [e for e in log[number + 1:] if e.key == failed.key and e.at - failed.at <= 1.0]
        if len(again) > MAX_RETRIES_PER_SECOND:
            problems.append(f"{failed.key}: {failed.fate}, then sent {len(again)} times within a second")
    return problems


def test_operator_backs_off_honours_retry_after_and_converges_through_a_faulty_api(
        cluster: Any, scale: Scale, rng: random.Random, operators: Callable[..., Operator],
        tfjobs_no_operator: TfJobs, admin_token: str, pod_watch: PodWatch, job_watch: JobWatch, tmp_path: Path,
        chaos_results: Callable[..., None]) -> None:
    tfjobs = tfjobs_no_operator
    with FaultProxy(cluster.api_url, cluster.layout.pki / "ca.crt", tmp_path, random.Random(rng.random())) as proxy:
        operator = operators(["--namespace", tfjobs.namespace], kubeconfig=kubeconfig_for(proxy, admin_token, tmp_path))
        jobs = mixed_jobs(rng, scale.proxy_jobs, "p", 4.0, scale.fault_seconds,
                          kinds=("workers", "chief-ps", "scaled", "never", "retry"))
        for job in jobs:
            job.create(tfjobs)
        # The faults begin once the operator works through the proxy: begun earlier, on a busy machine
        # its first watches could fail and back off (as client-go's do) past the whole fault window.
        wait_for(lambda: pod_watch.pods(), 60, "the operator's first pod, created through the proxy")
        proxy.faults = FAULTS
        started = time.monotonic()
        scale_at = started + min((j.scale_after for j in jobs if j.scale_to), default=1.0)
        cuts = sorted(started + rng.uniform(0, scale.fault_seconds) for _ in range(max(2, int(scale.fault_seconds / 5))))
        for moment in sorted([scale_at, *cuts]):
            threading.Event().wait(max(0.0, moment - time.monotonic()))  # planned fault moments
            if moment == scale_at:
                for job in jobs:
                    if job.scale_to:
                        tfjobs.patch(job.name, {"worker": {"replicas": job.scale_to}})
            else:
                if moment == cuts[0]:  # the first cut: the watches reopened right after it are throttled
                    proxy.throttle_watches(3, WATCH_RETRY_AFTER)
                proxy.cut()
        threading.Event().wait(max(0.0, started + scale.fault_seconds - time.monotonic()))  # the planned end
        # ... and on until every kind of fault has met a request (the operator's requests come at its pace)
        wait_for(lambda: set(FAULTS.first) <= {e.fate for e in proxy.log()}, 120,
                 "every kind of fault to have happened once")
        proxy.faults = None
        calm = time.monotonic()
        until_empty(lambda: unfinished(tfjobs, jobs, job_watch), 90, "every job to reach a terminal state once the faults stopped")
        converged = time.monotonic() - calm
        wait_for(lambda: not live_pods_of_finished_jobs(pod_watch, jobs), 30, "finished jobs to keep no live pods")
        log = proxy.log()

    problems = outcome_problems(tfjobs, jobs, pod_watch, job_watch)
    problems += [f"{job.name}: false {e['reason']} event: {e['message']}" for job in jobs
                 for e in tfjobs.events(job.name) if e["reason"] == "NameConflict"]  # nothing foreign exists here
    assert not problems, "\n".join(problems)
    during = [e for e in log if started <= e.at <= calm]
    fates = {fate: sum(1 for e in during if e.fate == fate) for fate in ("delay", "throttle", "error", "drop", "lose")}
    print(f"{len(during)} requests during the faults: {fates}")
    for exchange in during:
        if exchange.fate not in ("", "delay"):
            again = next((e for e in log if e.key == exchange.key and e.at > exchange.at), None)
            gap = f"{again.at - (exchange.answered_at or exchange.at):.2f}s" if again else "-"
            print(f"  {exchange.fate:8} {exchange.status} ra={exchange.retry_after} again after {gap}: {exchange.key}")
    assert all(fates.values()), f"every kind of fault should have happened at least once: {fates}"
    early = too_soon(log)
    assert not early, "requests retried before their Retry-After:\n" + "\n".join(early)
    hot = hammered(log)
    assert not hot, "failed requests retried without back-off:\n" + "\n".join(hot)
    rate = len(during) / (calm - started)
    assert rate < 50, f"{rate:.0f} requests/s through a failing API looks like a hot loop"
    assert operator.process is not None and operator.process.poll() is None
    assert "retrying transient API error" in operator.log_path.read_text()
    assert metric_total(operator, "tfjob_api_requests_total", code="429") >= 1
    chaos_results(fault="faulty API (proxy)", fault_s=scale.fault_seconds, requests=len(during), faults=fates,
                  converged_after_faults_s=round(converged, 1), retry_after_violations=len(early),
                  duplicates=len(pod_watch.duplicates), lost_jobs=0)
