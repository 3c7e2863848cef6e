"""Fault 5: random pod deletions and failures on a running OnFailure job.

Each round hits a random few Running pods (distinct slots, each by UID so a replacement is never
hit by mistake): a deletion (a disruption: replaced, not counted) or an injected failure (exit code
1, 2 or 137: replaced and counted). The job must then finish normally with `restartCount` equal to
the injected failures exactly; the operator deletes exactly the failed pods; every slot has one
more pod per hit (or per pod the simulator removed by itself) and never two live at once.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable

from prometheus_client.parser import text_string_to_metric_families

from kube import resource_path
from tests.support.jobs import devcluster_role
from tests.support.polling import until_empty, wait_for
from tfjob_api.names import REPLICA_INDEX_LABEL, REPLICA_TYPE_LABEL

from ..conftest import Operator, TfJobs
from .conftest import Scale
from .watching import PodStory, PodWatch

JOB = "churn"


def operator_deletions(operator: Operator) -> dict[str, float]:
    """The operator's pod deletions so far, by reason."""
    counts: dict[str, float] = {}
    for family in text_string_to_metric_families(operator.metrics()):
        for sample in family.samples:
            if sample.name == "tfjob_pods_deleted_total":
                counts[sample.labels["reason"]] = counts.get(sample.labels["reason"], 0) + sample.value
    return counts


def story_lines(pods: list[PodStory], since: float) -> str:
    def at(moment: float | None) -> str:
        return "-" if moment is None else f"{moment - since:+.2f}s"
    return "\n".join(f"{p.uid[:8]} seen={at(p.first_seen)} running={at(p.running_at)} failed={at(p.failed_at)} "
                     f"terminating={at(p.terminating_at)} gone={at(p.gone_at)} node={p.node}" for p in pods)


def test_churned_on_failure_job_completes_counting_only_the_injected_failures(
        scale: Scale, rng: random.Random, tfjobs: TfJobs, operator: Operator, pod_watch: PodWatch,
        chaos_results: Callable[..., None]) -> None:
    pods_total = 1 + scale.churn_workers
    deleted_before = operator_deletions(operator)
    tfjobs.create(JOB, ps=devcluster_role(1), worker=devcluster_role(scale.churn_workers), backoffLimit=1000)
    tfjobs.wait_pods(JOB, pods_total, timeout=90)
    tfjobs.wait_condition(JOB, "Running", timeout=60)
    failures = disruptions = 0
    started = time.monotonic()
    injected: list[str] = []
    hit_uids: set[str] = set()
    hits: Counter[tuple[str, int]] = Counter()
    recoveries: list[float] = []

    for _ in range(scale.churn_rounds):
        running = tfjobs.wait_pods(JOB, pods_total, timeout=60)
        targets = rng.sample(running, scale.churn_per_round)
        hit_at = time.monotonic()
        for pod in targets:
            meta = pod["metadata"]
            hits[(meta["labels"][REPLICA_TYPE_LABEL], int(meta["labels"][REPLICA_INDEX_LABEL]))] += 1
            path = resource_path("", "v1", "pods", tfjobs.namespace, meta["name"])
            injected.append(f"{time.monotonic() - started:+.2f}s {meta['name']} {meta['uid'][:8]}")
            hit_uids.add(meta["uid"])
            if rng.random() < 0.5:
                tfjobs.api.delete(path, uid=meta["uid"])
                disruptions += 1
                injected[-1] += " deleted"
            else:
                code = rng.choice([1, 2, 137])
                tfjobs.api.patch(path, {"metadata": {"uid": meta["uid"], "annotations": {  # uid: a precondition
                    "sim.tensorflowjob.kubeflow.org/exit-code": str(code),
                    "sim.tensorflowjob.kubeflow.org/exit-after": "0s"}}})
                failures += 1
                injected[-1] += f" failed ({code})"
        old = {p["metadata"]["uid"] for p in targets}

        def unrecovered(old: set[str] = old) -> list[str]:
            pods = tfjobs.pods(JOB)
            wrong = [f"{p['metadata']['name']}:{p['status'].get('phase')}"
                     f"{'(old)' if p['metadata']['uid'] in old else ''}"
                     f"{'(terminating)' if p['metadata'].get('deletionTimestamp') else ''}"
                     for p in pods if p["metadata"]["uid"] in old or p["status"].get("phase") != "Running"
                     or p["metadata"].get("deletionTimestamp")]
            if len(pods) != pods_total:
                wrong.append(f"{len(pods)} pods of {pods_total}: {sorted(p['metadata']['name'] for p in pods)}")
            return wrong

        until_empty(unrecovered, 60, "every hit pod to be replaced and Running")
        recoveries.append(time.monotonic() - hit_at)
        tfjobs.wait_condition(JOB, "Running", timeout=60)

    wait_for(lambda: tfjobs.status(JOB).get("restartCount") == failures, 30,
             f"restartCount to reach the {failures} injected failures (now {tfjobs.status(JOB).get('restartCount')})")
    finishing = time.monotonic()
    tfjobs.exit_pod(f"{JOB}-worker-0", 0)
    tfjobs.wait_condition(JOB, "Succeeded", timeout=60)

    status = tfjobs.status(JOB)
    assert status["restartCount"] == failures, f"{failures} failures and {disruptions} disruptions injected"
    assert len(pod_watch.failures(JOB)) == failures
    assert not pod_watch.duplicates
    # The operator deleted exactly the failed pods (and, at the end, what cleanPodPolicy says).
    deleted = {reason: count - deleted_before.get(reason, 0) for reason, count in operator_deletions(operator).items()}
    assert {r: n for r, n in deleted.items() if n and r != "JobFinished"} == ({"PodFailed": failures} if failures else {})
    # Every pod of a slot has a cause: the first, one per hit, and one per pod the simulated kubelet
    # removed by itself (KWOK confirms a deletion by name, so a late confirmation can take the
    # successor that already holds the name; the operator then replaces it, as it should).
    removed_by_cluster = 0
    for (role_name, index), pods in pod_watch.incarnations(JOB).items():
        external = [p for p in pods if p.uid not in hit_uids and p.failed_at is None and p.gone_at is not None
                    and p.gone_at < finishing]
        removed_by_cluster += len(external)
        assert len(pods) == 1 + hits[(role_name, index)] + len(external), (
            f"{role_name}-{index}: {len(pods)} pods for {hits[(role_name, index)]} hits; injected: {injected}\n"
            + story_lines(pods, started))
    chaos_results(fault="pod churn", failures=failures, disruptions=disruptions, restart_count=status["restartCount"],
                  recovery_s=f"{min(recoveries):.1f}-{max(recoveries):.1f}", duplicates=len(pod_watch.duplicates),
                  pods_removed_by_the_simulator=removed_by_cluster, lost_jobs=0)
