"""Fault 5 (issue #9): random pod deletions and failures on a running OnFailure job.

Each round hits a random few Running pods (distinct slots, each by UID so a replacement is never
hit by mistake): a deletion (a disruption: replaced, not counted) or an injected failure (exit code
1, 2 or 137: replaced and counted). The job must then finish normally with `restartCount` equal to
the injected failures exactly, every slot having one more pod per hit and never two live at once.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable

from controller.kube import resource_path
from controller.labels import REPLICA_INDEX_LABEL, REPLICA_TYPE_LABEL

from ..conftest import TfJobs, role, wait_for
from .conftest import Scale, until_empty
from .watching import PodWatch

JOB = "churn"


def test_churned_on_failure_job_completes_counting_only_the_injected_failures(
        scale: Scale, rng: random.Random, tfjobs: TfJobs, pod_watch: PodWatch,
        chaos_results: Callable[..., None]) -> None:
    pods_total = 1 + scale.churn_workers
    tfjobs.create(JOB, ps=role(1), worker=role(scale.churn_workers), backoffLimit=1000)
    tfjobs.wait_pods(JOB, pods_total, timeout=90)
    tfjobs.wait_condition(JOB, "Running", timeout=60)
    failures = disruptions = 0
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
            if rng.random() < 0.5:
                tfjobs.api.delete(path, uid=meta["uid"])
                disruptions += 1
            else:
                code = rng.choice([1, 2, 137])
                tfjobs.api.patch(path, {"metadata": {"uid": meta["uid"], "annotations": {  # uid: a precondition
                    "sim.tensorflowjob.kubeflow.org/exit-code": str(code),
                    "sim.tensorflowjob.kubeflow.org/exit-after": "0s"}}})
                failures += 1
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
    tfjobs.exit_pod(f"{JOB}-worker-0", 0)
    tfjobs.wait_condition(JOB, "Succeeded", timeout=60)

    status = tfjobs.status(JOB)
    assert status["restartCount"] == failures, f"{failures} failures and {disruptions} disruptions injected"
    assert len(pod_watch.failures(JOB)) == failures
    assert not pod_watch.duplicates
    for (role_name, index), pods in pod_watch.incarnations(JOB).items():
        assert len(pods) == 1 + hits[(role_name, index)], f"{role_name}-{index}: {len(pods)} pods, {hits} hits"
    chaos_results(fault="pod churn", failures=failures, disruptions=disruptions, restart_count=status["restartCount"],
                  recovery_s=f"{min(recoveries):.1f}-{max(recoveries):.1f}", duplicates=len(pod_watch.duplicates),
                  lost_jobs=0)
