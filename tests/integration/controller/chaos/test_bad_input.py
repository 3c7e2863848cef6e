"""Fault 8: bad input, generated with hypothesis (strategies in tests/support/fuzzing.py).

Offline, fast and many, the same candidates go through `validate_job` and the pure planner: that
half needs no cluster and runs with the unit tests (tests/unit/controller/job/test_plan_properties.py).

Through the cluster, fewer: the candidates go through `kubectl apply` to a running operator.
Admission rejects exactly the invalid mutations, naming the field, as `tfjob-operator validate` does
offline; whatever is admitted runs or ends with a specific reason; the operator's API calls stay
bounded per job and quiet once things settle; and foreign objects with the job label — a Pod and a
Service squatting the names of a job — are never touched.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
import zlib
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import yaml
from hypothesis import HealthCheck, Phase, example, given, seed, settings
from hypothesis import strategies as st

from controller.job.validation import validate_job
from kube import Kube, resource_path
from tests.support.fuzzing import Candidate, bad_templates, invalid_specs, valid
from tests.support.fuzzing import rejected as rejected_candidates
from tests.support.jobs import DEVCLUSTER_IMAGE, container, pod_manifest, role, tfjob
from tests.support.polling import until_empty, wait_for
from tfjob_api.names import JOB_NAME_LABEL

from ..conftest import Operator, TfJobs
from .conftest import SESSION_SEED, Scale, metric_total
from .watching import JobWatch

RUN_REASONS = {"ReplicaFailed", "BackoffLimitExceeded", "DeadlineExceeded"}  # a job's own way of failing
DECOY = "decoy"
QUIET_WINDOW = 5.0  # seconds during which a settled operator should make (almost) no API calls


def hypothesis_seed(test: str) -> int:
    return zlib.crc32(f"{SESSION_SEED}:{test}".encode())


def true_conditions(status: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in status.get("conditions") or [] if isinstance(c, dict) and c.get("status") == "True"}


# ---- through the cluster --------------------------------------------------------------------------


def renamed(job: dict[str, Any], serial: int) -> dict[str, Any]:
    """The job under a unique name of the same length and character class (first and last kept)."""
    name = job["metadata"]["name"]
    if len(name) >= 6:
        name = name[0] + f"{serial:03d}" + name[4:]
    return {**job, "metadata": {**job["metadata"], "name": name}}


def outcome(tfjobs: TfJobs, job_watch: JobWatch, candidate: Candidate, name: str) -> str | None:
    """A specific end (or steady state) the job reached, or None while it has none yet. A job deleted
    by its TTL is judged by the last status the watch saw."""
    job = tfjobs.get(name)
    if job is None:
        with job_watch.lock:
            last = [job_watch.last[uid] for uid, seen in job_watch.names.items() if seen == name]
        if not last or "ttlSecondsAfterFinished" not in candidate.job["spec"]:
            return None
        status, gone = last[-1], " (then deleted by its TTL)"
    else:
        status, gone = job.get("status") or {}, ""
    conditions = true_conditions(status)
    failed = conditions.get("Failed", {}).get("reason")
    running = next((c for c in status.get("conditions") or [] if c["type"] == "Running"), {})
    expected = {"invalid-spec": "InvalidSpec", "bad-template": "InvalidPodTemplate"}.get(candidate.kind)
    if expected:
        return f"Failed/{failed}{gone}" if failed == expected else None
    if candidate.kind == "conflict":
        return "NameConflict" if running.get("reason") == "NameConflict" else None
    if failed in RUN_REASONS:
        return f"Failed/{failed}{gone}"
    if status.get("state") in ("Running", "Succeeded", "Suspended"):
        return f"{status['state']}{gone}"
    return None


def reconciles_between(operator: Operator, start: datetime, end: datetime) -> dict[str, int]:
    """Per job name: reconciles that wrote something or failed, logged between two moments."""
    counts: dict[str, int] = {}
    for line in operator.log_path.read_text(errors="replace").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict) or not event.get("job") or not event.get("timestamp"):
            continue
        if event.get("event") not in ("reconciled", "reconcile incomplete; retrying with back-off"):
            continue
        if start <= datetime.fromisoformat(event["timestamp"].replace("Z", "+00:00")) <= end:
            name = str(event["job"]).split("/", 1)[1]
            counts[name] = counts.get(name, 0) + 1
    return counts


def squat(api: Kube, namespace: str) -> dict[str, str]:
    """A foreign Pod and Service named as job `decoy`'s would be, with the job label; their versions."""
    labels = {JOB_NAME_LABEL: DECOY, "owner": "someone-else"}
    pod = api.create(resource_path("", "v1", "pods", namespace),
                     pod_manifest(f"{DECOY}-worker-0", labels=labels, containers=[container("busybox", name="c")]))
    service = api.create(resource_path("", "v1", "services", namespace), {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": DECOY, "labels": labels},
        "spec": {"clusterIP": "None", "selector": {"owner": "someone-else"}, "ports": [{"port": 80}]}})
    path = resource_path("", "v1", "pods", namespace, pod["metadata"]["name"])
    running = wait_for(lambda: (p := api.get(path))["status"].get("phase") == "Running" and p, 60,
                       "the foreign pod to run (after which nothing but a writer changes it)")
    return {f"pods/{DECOY}-worker-0": running["metadata"]["resourceVersion"],
            f"services/{DECOY}": service["metadata"]["resourceVersion"]}


def requests_made(operator: Operator) -> float:
    """The operator's API requests other than list and watch (its informers' own traffic)."""
    return sum(metric_total(operator, "tfjob_api_requests_total", verb=verb)
               for verb in ("get", "create", "update", "patch", "delete"))


CONFLICT = Candidate(tfjob(DECOY, {"worker": role(1, image=DEVCLUSTER_IMAGE)}), "conflict")


def test_generated_jobs_are_rejected_naming_the_field_or_run_or_fail_with_a_specific_reason(
        scale: Scale, operators: Callable[..., Operator], tfjobs_no_operator: TfJobs, api: Kube,
        job_watch: JobWatch, no_session_operator: None, chaos_results: Callable[..., None]) -> None:
    tfjobs = tfjobs_no_operator
    operator = operators(["--namespace", tfjobs.namespace])
    decoys = squat(api, tfjobs.namespace)
    serial = itertools.count()
    admitted: list[tuple[Candidate, str]] = []
    rejected = 0

    @seed(hypothesis_seed("apply"))
    @settings(max_examples=scale.apply_examples, deadline=None, database=None, phases=[Phase.explicit, Phase.generate],
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @example([CONFLICT])
    @given(st.tuples(valid(), rejected_candidates(), invalid_specs(), bad_templates()))
    def apply(batch: tuple[Candidate, ...] | list[Candidate]) -> None:  # one candidate of each kind
        nonlocal rejected
        for candidate in batch:
            job = candidate.job if candidate.kind == "conflict" else renamed(candidate.job, next(serial))
            answer = tfjobs.apply_yaml(yaml.safe_dump(job))
            offline = validate_job(job)
            if candidate.kind == "rejected":
                assert answer.returncode != 0, f"admitted: {candidate.note}"
                assert candidate.field in answer.stderr, (candidate.note, answer.stderr)
                assert any(candidate.field in str(p) for p in offline), (candidate.note, offline)
                rejected += 1
            else:
                assert answer.returncode == 0, (candidate.kind, candidate.note, answer.stderr)
                admitted.append((candidate, job["metadata"]["name"]))

    apply()
    applied = time.monotonic()

    outcomes: dict[str, str] = {}  # the first specific outcome of each job (a running one may move on)

    def pending() -> list[str]:
        for candidate, name in admitted:
            if name not in outcomes and (reached := outcome(tfjobs, job_watch, candidate, name)) is not None:
                outcomes[name] = reached
        return [f"{name} ({c.kind} {c.note})" for c, name in admitted if name not in outcomes]

    until_empty(pending, 120, "every admitted job to reach a specific outcome", interval=1.0)
    settled = time.monotonic() - applied

    pods = int(metric_total(operator, "tfjob_pods_created_total"))
    calls = requests_made(operator)
    bound = 10 * len(admitted) + 4 * pods  # a few status writes and events per job; create, delete, ... per pod
    assert calls <= bound, f"{calls:.0f} API calls for {len(admitted)} jobs and {pods} pods created (bound {bound})"
    quiet_from, window_start = requests_made(operator), datetime.now(UTC)
    threading.Event().wait(QUIET_WINDOW)  # a measurement window, not a synchronisation
    quiet = requests_made(operator) - quiet_from
    busy = reconciles_between(operator, window_start, datetime.now(UTC))
    print(f"{quiet:.0f} API calls in the quiet window; reconciles per job: {busy}")
    for name, result in outcomes.items():
        done = (result or "").startswith(("Failed", "Succeeded"))
        limit = 2 if done else 3 if result == "NameConflict" else 25
        assert busy.get(name, 0) <= limit, f"{name} ({result}) reconciled {busy[name]} times in {QUIET_WINDOW:.0f}s"
    for key, version in decoys.items():
        current = api.get(resource_path("", "v1", key.split("/")[0], tfjobs.namespace, key.split("/")[1]))
        assert current["metadata"]["resourceVersion"] == version, f"the foreign {key} was modified"
        assert not current["metadata"].get("deletionTimestamp"), f"the foreign {key} was deleted"
    chaos_results(fault="bad input through kubectl apply (hypothesis)", applied=len(admitted) + rejected,
                  rejected=rejected, admitted=len(admitted), outcomes=sorted(set(outcomes.values())),
                  api_calls=int(calls), api_bound=bound, calls_when_quiet=int(quiet), foreign_touched=0,
                  settled_s=round(settled, 1))
