"""The soak's invariants (bench/_soak_checks.py) on hand-written dicts: each rule finds what it names and
nothing else, and lasting findings count only once they lasted. No cluster: bench/soak.py feeds these
functions what it lists from one."""

from __future__ import annotations

import random
from typing import Any

from bench import _soak_checks as checks
from bench import _soak_jobs as jobs

JOB_UID = "job-1"


def owner(uid: str = JOB_UID, kind: str = "TensorFlowJob") -> list[dict[str, Any]]:
    return [{"kind": kind, "name": "j", "uid": uid, "controller": True}]


def pod(name: str, index: str = "0", *, uid: str = JOB_UID, phase: str = "Running", deleting: bool = False,
        kind: str = "TensorFlowJob") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "soak", "ownerReferences": owner(uid, kind),
                            "labels": {checks.REPLICA_TYPE_LABEL: "worker", checks.REPLICA_INDEX_LABEL: index}}
    if deleting:
        meta["deletionTimestamp"] = "2026-12-06T00:00:00Z"
    return {"metadata": meta, "status": {"phase": phase}}


def condition(kind: str, status: str = "True", reason: str = "R", at: str = "2026-12-06T00:00:00Z") -> dict[str, Any]:
    return {"type": kind, "status": status, "reason": reason, "lastTransitionTime": at}


def job(name: str = "j", *conditions: dict[str, Any], restarts: int = 0, uid: str = JOB_UID) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "soak", "uid": uid},
            "status": {"conditions": list(conditions), "restartCount": restarts}}


def workload(cpu: str, *kinds: str, uid: str = JOB_UID, active: bool = True, name: str = "w") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "soak", "ownerReferences": owner(uid)},
            "spec": {"active": active},
            "status": {"conditions": [condition(k) for k in kinds],
                       "admission": {"podSetAssignments": [{"name": "worker", "resourceUsage": {"cpu": cpu}}]}}}


def cluster_queue(cpu: str, reserving: int) -> dict[str, Any]:
    return {"metadata": {"name": "cq"}, "status": {"reservingWorkloads": reserving, "flavorsReservation": [
        {"name": "racks", "resources": [{"name": "cpu", "total": cpu}, {"name": "memory", "total": "3Gi"}]}]}}


def test_two_live_pods_for_one_slot_are_a_duplicate_but_a_terminating_one_is_not() -> None:
    assert [f.rule for f in checks.duplicate_slots([pod("a"), pod("b")])] == ["duplicate-slot"]
    assert checks.duplicate_slots([pod("a"), pod("b", deleting=True)]) == []
    assert checks.duplicate_slots([pod("a"), pod("b", phase="Failed")]) == []
    assert checks.duplicate_slots([pod("a", "0"), pod("b", "1")]) == []
    assert checks.duplicate_slots([pod("a"), pod("b", uid="job-2")]) == []


def test_a_pod_whose_job_is_gone_is_an_orphan_unless_it_is_being_deleted() -> None:
    found = checks.orphan_pods([pod("a"), pod("b", uid="job-2"), pod("c", uid="job-3", deleting=True)], {JOB_UID})
    assert [f.subject for f in found] == ["soak/b"]


def test_a_tfjobs_pods_belong_to_their_tfjob() -> None:
    assert checks.orphan_pods([pod("a", kind="TFJob")], {JOB_UID}) == []


def test_the_queue_reservation_must_equal_the_workloads_that_hold_one() -> None:
    held = [workload("2", "QuotaReserved", "Admitted", name="a"), workload("1", "QuotaReserved", name="b"),
            workload("3", "QuotaReserved", "Finished", name="done"), workload("4", name="pending")]
    assert checks.quota_mismatch(cluster_queue("3", 2), held) == []
    assert checks.quota_mismatch(cluster_queue("3000m", 2), held) == []
    assert [f.rule for f in checks.quota_mismatch(cluster_queue("5", 2), held)] == ["quota-mismatch"]
    assert [f.rule for f in checks.quota_mismatch(cluster_queue("3", 3), held)] == ["quota-mismatch"]


def test_an_admitted_workload_whose_job_has_no_pod_holds_quota_for_nothing() -> None:
    admitted = workload("2", "QuotaReserved", "Admitted")
    assert [f.rule for f in checks.quota_without_pods([admitted], [])] == ["quota-without-pods"]
    assert checks.quota_without_pods([admitted], [pod("a", deleting=True)]) == []
    assert checks.quota_without_pods([workload("2", "QuotaReserved", "Admitted", active=False)], []) == []
    assert checks.quota_without_pods([workload("2", "QuotaReserved", "Admitted", "Finished")], []) == []
    assert checks.quota_without_pods([workload("2", "QuotaReserved")], []) == []


def test_an_unfinished_job_without_a_reason_is_stuck() -> None:
    assert [f.subject for f in checks.stuck_jobs([job("quiet")])] == ["soak/quiet"]
    assert [f.subject for f in checks.stuck_jobs([job("mute", condition("Suspended", reason=""))])] == ["soak/mute"]
    waiting = job("waiting", condition("Created", at="2026-12-06T00:00:00Z"),
                  condition("Suspended", reason="WaitingForAdmission", at="2026-12-06T00:00:01Z"))
    assert checks.stuck_jobs([waiting, job("done", condition("Succeeded", reason=""))]) == []


def test_a_restart_counted_on_a_job_never_made_to_fail_is_a_counted_disruption() -> None:
    assert [f.rule for f in checks.counted_disruptions([job(restarts=1)], set())] == ["counted-disruption"]
    assert checks.counted_disruptions([job(restarts=1)], {JOB_UID}) == []
    assert checks.counted_disruptions([job(restarts=0)], set()) == []


def test_objects_owned_by_a_deleted_job_are_leftovers() -> None:
    service = {"metadata": {"name": "j", "namespace": "soak", "ownerReferences": owner()}}
    gang = {"metadata": {"name": "j", "namespace": "soak", "ownerReferences": owner("job-2")}}
    found = checks.leftovers([("Service", service), ("GangWorkload", gang), ("Pod", pod("a", deleting=True))],
                             {JOB_UID})
    assert [f.subject for f in found] == ["Service soak/j"]


def test_a_lasting_finding_counts_only_after_its_grace_and_starts_over_once_it_cleared() -> None:
    lasting = checks.Lasting(grace=30)
    finding = checks.Finding("orphan-pod", "soak/a", "gone")
    assert lasting.update([finding], now=0) == []
    assert lasting.update([finding], now=29) == []
    assert lasting.update([finding], now=30) == [finding]
    assert lasting.update([], now=31) == []
    assert lasting.update([finding], now=40) == []


def test_the_ledger_reports_each_violation_once() -> None:
    ledger = checks.Ledger()
    finding = checks.Finding("leftover", "Service soak/j", "x")
    assert ledger.add([finding]) == [finding]
    assert ledger.add([finding]) == []
    assert ledger.by_rule() == {"leftover": 1}


def test_rss_growth_reads_the_first_sample_after_warm_up_and_the_last() -> None:
    assert checks.rss_growth([(10, 1), (130, 50), (600, 60)], warm_up=120) == (50, 60)
    assert checks.rss_growth([(10, 1), (20, 2)], warm_up=120) == (2, 2)
    assert checks.rss_growth([], warm_up=120) == (0, 0)


def test_the_job_stream_is_the_same_for_one_seed_and_both_kinds_are_queued_in_one_rack() -> None:
    def stream(seed: int) -> list[jobs.JobPlan]:
        rng = random.Random(seed)
        return [jobs.draw(rng, n) for n in range(1, 50)]
    first = stream(7)
    assert first == stream(7)
    kinds = {plan.kind for plan in first}
    assert kinds == {"TensorFlowJob", "TFJob"}
    assert not any(plan.fails for plan in first if plan.kind == "TFJob")
    for plan in first:
        body = jobs.body(plan, "soak")
        assert body["kind"] == plan.kind
        assert body["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "lq"
        assert "kueue.x-k8s.io/podset-required-topology" in str(body["spec"])


def test_error_level_log_lines_and_tracebacks_are_counted_by_event() -> None:
    lines = ['{"event": "reconciled", "level": "info"}', '{"event": "reconcile failed", "level": "error"}',
             '{"event": "reconcile failed", "level": "error"}', '{"event": "watch broke", "level": "warning"}',
             "Traceback (most recent call last):", "not json"]
    assert checks.error_lines(lines) == {"reconcile failed": 2, "(traceback)": 1}
