"""Faults 2 and 3: the control plane under the operator restarts and forgets.

2. The API server, then etcd, are restarted while jobs run: the operator (the same process) reconnects,
   relists, and converges; jobs submitted and pods deleted right after each restart are handled, no
   job is stuck.
3. The watch history is compacted (etcd compaction, then an API server restart so its watch cache
   forgets too) while the operator is frozen (SIGSTOP): its watches resume into `410 Gone`, it
   relists, and the deletes that happened meanwhile — a job (recreated under the same name), a pod,
   a Service — are seen and acted on.
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kube import Kube, resource_path
from tests.support.jobs import devcluster_role
from tests.support.polling import until_empty, wait_for
from tfjob_api.names import REPLICA_INDEX_LABEL, REPLICA_TYPE_LABEL

from ..conftest import Operator, TfJobs
from .conftest import Scale, Supervisor, metric_total, wait_cluster_serves_new_namespaces
from .watching import JobWatch, PodWatch
from .workload import PlannedJob, live_pods_of_finished_jobs, mixed_jobs, outcome_problems, plan_job, unfinished

pytestmark = pytest.mark.usefixtures("no_session_operator")


@pytest.fixture
def settle(api: Kube) -> Iterator[None]:
    """After the test, wait until the controller-manager serves again (later tests need it)."""
    yield
    wait_cluster_serves_new_namespaces(api)


def relists(operator: Operator) -> float:
    return metric_total(operator, "tfjob_informer_relists_total")


def running_replacement(pod_watch: PodWatch, job: str, slot: tuple[str, int], old_uid: str) -> float | None:
    """When a newer pod of the slot was first seen Running (monotonic), else None."""
    for story in pod_watch.incarnations(job).get(slot, []):
        if story.uid != old_uid and story.running_at is not None and story.owner_uid is not None:
            return story.running_at
    return None


def test_operator_rides_out_api_server_and_etcd_restarts_without_restarting(
        cluster: Any, scale: Scale, rng: random.Random, operators: Callable[..., Operator],
        tfjobs_no_operator: TfJobs, pod_watch: PodWatch, job_watch: JobWatch, supervisor: Supervisor,
        settle: None, chaos_results: Callable[..., None]) -> None:
    tfjobs = tfjobs_no_operator
    operator = operators(["--namespace", tfjobs.namespace])
    assert operator.process is not None
    pid = operator.process.pid
    relists_before = relists(operator)
    # Jobs that finish during or after the restarts, and one that runs until told to finish.
    jobs = mixed_jobs(rng, scale.restart_jobs, "r", 10.0, 30.0, kinds=("workers", "chief-ps", "never", "scaled"))
    steady = PlannedJob("steady", "steady", {"ps": devcluster_role(1), "worker": devcluster_role(2)}, "Succeeded",
                        "JobSucceeded", False)
    jobs.append(steady)
    for job in jobs:
        job.create(tfjobs)
    tfjobs.wait_for(lambda: all(tfjobs.status(j.name).get("state") == "Running" for j in jobs), 60,
                    "every job Running before the first restart")
    recovery: dict[str, float] = {}

    for component in ("kube-apiserver", "etcd"):
        with supervisor.lock:
            if component == "kube-apiserver":
                cluster.restart_apiserver()
            else:
                cluster.restart_etcd()
        back = time.monotonic()
        # Right after the restart, while the operator is still reconnecting: a new job, a deleted pod.
        newcomer = plan_job(f"after-{component.split('-')[-1]}", "workers", 3.0)
        newcomer.create(tfjobs)
        jobs.append(newcomer)
        pod = rng.choice(tfjobs.pods(steady.name, include_terminating=False))
        meta = pod["metadata"]
        slot = (meta["labels"][REPLICA_TYPE_LABEL], int(meta["labels"][REPLICA_INDEX_LABEL]))
        tfjobs.api.delete(resource_path("", "v1", "pods", tfjobs.namespace, meta["name"]), uid=meta["uid"])
        replaced = wait_for(lambda s=slot, u=meta["uid"]: running_replacement(pod_watch, steady.name, s, u), 60,
                            f"the pod deleted after the {component} restart to be replaced")
        started = wait_for(lambda n=newcomer: tfjobs.status(n.name).get("state") in ("Running", "Succeeded")
                           and time.monotonic(), 60, f"the job created after the {component} restart to run")
        recovery[component] = round(max(replaced, started) - back, 1)

    tfjobs.exit_pod(f"{steady.name}-worker-0", 0)
    until_empty(lambda: unfinished(tfjobs, jobs, job_watch), 90, "every job to reach a terminal state")
    wait_for(lambda: not live_pods_of_finished_jobs(pod_watch, jobs), 30, "finished jobs to keep no live pods")
    problems = outcome_problems(tfjobs, jobs, pod_watch, job_watch)
    assert not problems, "\n".join(problems)
    assert operator.process.poll() is None and operator.process.pid == pid, "the operator must survive the restarts"
    relisted = relists(operator) - relists_before
    assert relisted >= 1, "the operator's informers should have relisted after the API server lost its watch cache"
    chaos_results(fault="API server + etcd restarted", restarts=2, jobs=len(jobs), relists=int(relisted),
                  recovery_s=recovery, duplicates=len(pod_watch.duplicates), lost_jobs=0, operator_restarts=0,
                  watch_gaps=pod_watch.gaps, components_revived=supervisor.revived)


def test_deletes_during_a_compacted_disconnect_are_seen_after_410(
        cluster: Any, scale: Scale, rng: random.Random, operators: Callable[..., Operator],
        tfjobs_no_operator: TfJobs, pod_watch: PodWatch, supervisor: Supervisor, settle: None,
        chaos_results: Callable[..., None]) -> None:
    tfjobs = tfjobs_no_operator
    operator = operators(["--namespace", tfjobs.namespace])
    assert operator.process is not None
    names = [f"c{i}" for i in range(max(3, scale.compaction_jobs))]
    uids = {name: tfjobs.create(name, worker=devcluster_role(2), ps=devcluster_role(1))["metadata"]["uid"]
            for name in names}
    tfjobs.wait_for(lambda: all(tfjobs.status(n).get("state") == "Running" for n in names), 60, "every job Running")
    relists_before = relists(operator)

    os.kill(operator.process.pid, signal.SIGSTOP)  # the operator is away from here on
    try:
        recreated, disrupted, unserviced = names[0], names[1::2], names[2::2]
        # A job deleted (its pods collected) and created again under the same name:
        tfjobs.delete(recreated)
        tfjobs.wait_for(lambda: tfjobs.get(recreated) is None and not tfjobs.pods(recreated), 60,
                        f"{recreated} and its pods to be deleted")
        uids[recreated] = tfjobs.create(recreated, worker=devcluster_role(3))["metadata"]["uid"]
        # Pods deleted by someone (a disruption to repair):
        gone_pods = {}
        for name in disrupted:
            pod = rng.choice(tfjobs.pods(name))
            tfjobs.api.delete(resource_path("", "v1", "pods", tfjobs.namespace, pod["metadata"]["name"]),
                              uid=pod["metadata"]["uid"])
            gone_pods[pod["metadata"]["name"]] = pod["metadata"]["uid"]
        # Services deleted by someone:
        for name in unserviced:
            tfjobs.api.delete(resource_path("", "v1", "services", tfjobs.namespace, name))
        tfjobs.wait_for(lambda: all(tfjobs.service(n) is None for n in unserviced)
                        and not any(p["metadata"]["uid"] in gone_pods.values() for n in disrupted
                                    for p in tfjobs.pods(n)), 30, "the deletes to complete")
        with supervisor.lock:
            revision = cluster.compact_etcd()  # and restarts the API server: its watch cache forgets too
    finally:
        os.kill(operator.process.pid, signal.SIGCONT)
    resumed = time.monotonic()

    def repaired() -> bool:
        pods = {p["metadata"]["name"]: p for n in names for p in tfjobs.pods(n, include_terminating=False)}
        return (all(name in pods and pods[name]["metadata"]["uid"] != uid and pods[name]["status"].get("phase")
                    == "Running" for name, uid in gone_pods.items())
                and all(tfjobs.service(n) is not None for n in unserviced)
                and len(tfjobs.pod_names(recreated)) == 3
                and all(tfjobs.status(n).get("state") == "Running" for n in names))

    wait_for(repaired, 60, "the deleted pods and Services to be recreated and the recreated job to run")
    recovered = time.monotonic() - resumed
    new_pods = tfjobs.pods(recreated)
    assert {p["metadata"]["ownerReferences"][0]["uid"] for p in new_pods} == {uids[recreated]}
    assert all(tfjobs.service(n)["metadata"]["ownerReferences"][0]["uid"] == uids[n] for n in unserviced)
    assert operator.process.poll() is None, "the operator must not have restarted"
    # At least one informer must relist; one whose last event is the compacted revision itself (the
    # Service deletes are the last writes before the compaction) may resume without a 410.
    relisted = relists(operator) - relists_before
    assert relisted >= 1, "the operator's informers should relist after 410 Gone"
    gone_lines = [line for line in operator.log_path.read_text().splitlines() if "resource version expired" in line]
    assert gone_lines, "the operator should log the 410 it handled"
    assert not pod_watch.duplicates
    chaos_results(fault="etcd compacted while the operator was frozen", compacted_revision=revision,
                  deletes_missed=0, jobs=len(names), relists=int(relisted), recovery_s=round(recovered, 1),
                  duplicates=len(pod_watch.duplicates), lost_jobs=0, components_revived=supervisor.revived)
