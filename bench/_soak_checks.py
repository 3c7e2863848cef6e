"""The soak's invariants (bench/soak.py), as pure functions of plain dicts: pods, jobs, Workloads, a ClusterQueue.

The soak lists what the cluster holds every few seconds and hands the lists here; nothing in this
module talks to a cluster or reads a clock (the caller passes `now`), so every rule is unit-tested on
hand-written dicts (tests/unit/test_bench_soak_checks.py). Some states are fine for a moment and wrong
only when they last (a pod whose job was just deleted, a ClusterQueue status a beat behind its
Workloads): those go through `Lasting`, which reports a finding only once it has been seen
continuously for its grace period.

The rules:

* `duplicate_slots`: two live pods for one slot (job UID, replica type, replica index);
* `orphan_pods`: a pod whose controlling job no longer exists (with grace: garbage collection);
* `quota_mismatch`: the ClusterQueue's reserved CPU and reserving count differ from the sum over the
  Workloads that hold a reservation (with grace: Kueue's status lags);
* `quota_without_pods`: an admitted, active, unfinished Workload whose job has no pod at all (with
  grace: pods are created after admission, and deleted before the admission is cleared);
* `stuck_jobs`: a job not finished that says nothing about why (no condition, or its current
  condition without a reason), with grace from its creation;
* `counted_disruptions`: a job whose `restartCount` is above zero although the soak never made one of
  its pods fail (only disruptions hit it: evictions, deletions, preemptions, node loss, restarts);
* `leftovers`: objects still owned by a job that was deleted (pods, Services, NetworkPolicies,
  Workloads of either API), with grace;
* `error_lines`: the operator's error-level log lines (and tracebacks), counted by event.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from tfjob_api.quantity import parse_quantity

REPLICA_TYPE_LABEL = "tensorflowjob.kubeflow.org/replica-type"
REPLICA_INDEX_LABEL = "tensorflowjob.kubeflow.org/replica-index"
TERMINAL = ("Succeeded", "Failed")
JOB_KINDS = ("TensorFlowJob", "TFJob")


@dataclass(frozen=True)
class Finding:
    """One broken invariant: which rule, about what (a stable key), and what was seen."""

    rule: str
    subject: str
    detail: str


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _key(obj: Mapping[str, Any]) -> str:
    meta = _meta(obj)
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def controller_uid(obj: Mapping[str, Any], kinds: Sequence[str] = JOB_KINDS) -> str:
    """The UID of the object's controlling owner of one of `kinds` ('' when none)."""
    for ref in _meta(obj).get("ownerReferences") or []:
        if ref.get("controller") and ref.get("kind") in kinds:
            return str(ref.get("uid") or "")
    return ""


def owner_uids(obj: Mapping[str, Any]) -> set[str]:
    return {str(ref.get("uid")) for ref in _meta(obj).get("ownerReferences") or [] if ref.get("uid")}


def is_live_pod(pod: Mapping[str, Any]) -> bool:
    """Neither being deleted nor finished: a pod that holds its slot."""
    phase = (pod.get("status") or {}).get("phase")
    return not _meta(pod).get("deletionTimestamp") and phase not in TERMINAL


def duplicate_slots(pods: Iterable[Mapping[str, Any]]) -> list[Finding]:
    slots: dict[tuple[str, str, str], list[str]] = {}
    for pod in pods:
        if not is_live_pod(pod):
            continue
        labels = _meta(pod).get("labels") or {}
        slot = (controller_uid(pod), str(labels.get(REPLICA_TYPE_LABEL, "")), str(labels.get(REPLICA_INDEX_LABEL, "")))
        slots.setdefault(slot, []).append(_key(pod))
    return [Finding("duplicate-slot", f"{uid}/{role}-{index}", f"live pods {sorted(names)}")
            for (uid, role, index), names in slots.items() if len(names) > 1 and uid]


def orphan_pods(pods: Iterable[Mapping[str, Any]], job_uids: set[str]) -> list[Finding]:
    found = []
    for pod in pods:
        uid = controller_uid(pod)
        if uid and uid not in job_uids and not _meta(pod).get("deletionTimestamp"):
            found.append(Finding("orphan-pod", _key(pod), f"controlling job {uid} is gone"))
    return found


def _true(obj: Mapping[str, Any], kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True"
               for c in (obj.get("status") or {}).get("conditions") or [])


def holds_reservation(workload: Mapping[str, Any]) -> bool:
    """QuotaReserved and not Finished: what Kueue counts in the ClusterQueue's reservation."""
    return _true(workload, "QuotaReserved") and not _true(workload, "Finished")


def reserved(workload: Mapping[str, Any], resource: str = "cpu") -> Fraction:
    """The Workload's reserved amount of `resource`, summed over its admission's pod sets."""
    admission = (workload.get("status") or {}).get("admission") or {}
    total = Fraction(0)
    for assignment in admission.get("podSetAssignments") or []:
        value = (assignment.get("resourceUsage") or {}).get(resource)
        if value is not None:
            total += parse_quantity(value)
    return total


def queue_reserved(cluster_queue: Mapping[str, Any], resource: str = "cpu") -> Fraction:
    """The ClusterQueue's reserved amount of `resource` over its flavors (status.flavorsReservation)."""
    total = Fraction(0)
    for flavor in (cluster_queue.get("status") or {}).get("flavorsReservation") or []:
        for usage in flavor.get("resources") or []:
            if usage.get("name") == resource and usage.get("total") is not None:
                total += parse_quantity(usage["total"])
    return total


def quota_mismatch(cluster_queue: Mapping[str, Any], workloads: Iterable[Mapping[str, Any]]) -> list[Finding]:
    holding = [w for w in workloads if holds_reservation(w)]
    want_cpu = sum((reserved(w) for w in holding), Fraction(0))
    status = cluster_queue.get("status") or {}
    have_cpu, have_count = queue_reserved(cluster_queue), int(status.get("reservingWorkloads") or 0)
    if have_cpu == want_cpu and have_count == len(holding):
        return []
    return [Finding("quota-mismatch", _meta(cluster_queue).get("name", ""),
                    f"ClusterQueue reserves {float(have_cpu):g} CPU for {have_count} Workloads; the Workloads "
                    f"holding a reservation sum to {float(want_cpu):g} CPU over {len(holding)}")]


def quota_without_pods(workloads: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]]) -> list[Finding]:
    with_pods = {controller_uid(pod) for pod in pods}
    found = []
    for workload in workloads:
        active = (workload.get("spec") or {}).get("active", True) is not False
        if holds_reservation(workload) and _true(workload, "Admitted") and active:
            uid = controller_uid(workload)
            if uid and uid not in with_pods:
                found.append(Finding("quota-without-pods", _key(workload), f"admitted, job {uid} has no pod"))
    return found


def is_terminal(job: Mapping[str, Any]) -> bool:
    return any(_true(job, kind) for kind in TERMINAL)


def current_condition(job: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The newest True condition (by lastTransitionTime, then list order)."""
    true = [c for c in (job.get("status") or {}).get("conditions") or [] if c.get("status") == "True"]
    return max(true, key=lambda c: str(c.get("lastTransitionTime") or ""), default=None)


def stuck_jobs(jobs: Iterable[Mapping[str, Any]]) -> list[Finding]:
    """Jobs that say nothing about where they are (use with a grace from their creation)."""
    found = []
    for job in jobs:
        if _meta(job).get("deletionTimestamp") or is_terminal(job):
            continue
        condition = current_condition(job)
        if condition is None:
            found.append(Finding("stuck-job", _key(job), "no True condition: the operator says nothing"))
        elif not condition.get("reason"):
            found.append(Finding("stuck-job", _key(job), f"{condition.get('type')} without a reason"))
    return found


def counted_disruptions(jobs: Iterable[Mapping[str, Any]], failed_on_purpose: set[str]) -> list[Finding]:
    found = []
    for job in jobs:
        count = int((job.get("status") or {}).get("restartCount") or 0)
        if count and _meta(job).get("uid") not in failed_on_purpose:
            found.append(Finding("counted-disruption", _key(job),
                                 f"restartCount {count}, yet no pod of it was made to fail"))
    return found


def leftovers(objects: Iterable[tuple[str, Mapping[str, Any]]], deleted_uids: set[str]) -> list[Finding]:
    """(kind, object) pairs still owned by a deleted job."""
    found = []
    for kind, obj in objects:
        gone = owner_uids(obj) & deleted_uids
        if gone and not _meta(obj).get("deletionTimestamp"):
            found.append(Finding("leftover", f"{kind} {_key(obj)}", f"owned by deleted job {sorted(gone)[0]}"))
    return found


@dataclass
class Lasting:
    """Findings that count only once seen in every check for `grace` seconds in a row."""

    grace: float
    since: dict[tuple[str, str], float] = field(default_factory=dict)

    def update(self, findings: Iterable[Finding], now: float) -> list[Finding]:
        current = {(f.rule, f.subject): f for f in findings}
        self.since = {key: self.since.get(key, now) for key in current}
        return [f for key, f in current.items() if now - self.since[key] >= self.grace]


@dataclass
class Ledger:
    """Every violation once (by rule and subject, the first detail kept), for the summary."""

    first: dict[tuple[str, str], Finding] = field(default_factory=dict)

    def add(self, findings: Iterable[Finding]) -> list[Finding]:
        """Record the findings; return those not seen before."""
        new = [f for f in findings if (f.rule, f.subject) not in self.first]
        for finding in new:
            self.first[(finding.rule, finding.subject)] = finding
        return new

    def by_rule(self) -> Counter[str]:
        return Counter(rule for rule, _ in self.first)


def rss_growth(samples: Sequence[tuple[float, int]], warm_up: float) -> tuple[int, int]:
    """(RSS at the first sample at or after `warm_up` seconds, RSS at the last sample); (0, 0) without samples."""
    if not samples:
        return 0, 0
    start = next((rss for at, rss in samples if at >= warm_up), samples[-1][1])
    return start, samples[-1][1]


def error_lines(lines: Iterable[str]) -> Counter[str]:
    """The operator's error-level (or critical) JSON log lines by event, and lines of a traceback."""
    found: Counter[str] = Counter()
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            if line.startswith("Traceback"):
                found["(traceback)"] += 1
            continue
        if isinstance(entry, dict) and str(entry.get("level", "")).lower() in ("error", "critical"):
            found[str(entry.get("event", ""))[:120]] += 1
    return found
