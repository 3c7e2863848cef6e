"""Operator bugs the chaos suite (tests/integration/controller/chaos) found, each pinned by a minimal
deterministic test.

Each test failed while the bug it names was there and stays as a regression test now that it is
fixed; each docstring gives the evidence from the chaos run, the cause and the fix. They run the
controller, the reconciler and the reflector in-process against fakes, so they need no cluster and
run with the unit tests.
"""

from __future__ import annotations

import contextlib
import random
from datetime import UTC, datetime, timedelta
from typing import Any
from unittest.mock import Mock

from controller.controller import Controller
from controller.expectations import Expectations
from controller.job.builders import build_pods, build_service
from controller.job.kinds import TENSORFLOWJOB
from controller.job.plan import FORCE_DELETE_AFTER, PlanInputs, plan_job
from controller.memory import JobMemory
from controller.options import ControllerOptions
from controller.reconciler import Reconciler, RequeueError
from informers.reflector import Reflector
from informers.testing import FakeListerWatcher, RecordingSink, page, pod
from kube import ApiError, Kube
from kube.clock import FakeClock
from tests.support.jobs import make_job, pods_for
from tfjob_api.timeutil import format_time
from workqueue import RateLimitingQueue

NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)


def pods_stuck_on_a_dead_node(job: dict[str, Any]) -> list[dict[str, Any]]:
    """Every pod Running on node `dead`, evicted long enough ago to be force-deleted now."""
    evicted = format_time(NOW - timedelta(seconds=FORCE_DELETE_AFTER + 5))
    return pods_for(job, node="dead", uid="pod-uid-{index}", deletionTimestamp=evicted)


def test_a_pod_already_force_deleted_is_not_force_deleted_again_while_the_cache_lags() -> None:
    """Fault 4 (node lost) evidence: two pods of job n1 stuck on the lost node were force-deleted in
    one reconcile; the DELETED event of the first re-queued the job before the second's arrived, and
    the next reconcile force-deleted the second again ("deleted": 2, then "deleted": 1 in the
    operator log; `tfjob_pods_deleted_total{reason="NodeNotReady"}` rose by 4 for 3 lost pods).
    The UID precondition turns the repeat into a harmless 404, but it is a wasted API call, and the
    reconciler counts the 404 as a deletion in its log line and metric.

    Cause: `controller/job/plan.py`, `_Planner._delete` ignored `pending_deletes` when `force=True`,
    and `controller/reconciler.py`, `_delete_pods`, counted a 404 as a deletion. Fix: skip every
    pending UID, and count only deletions that happened."""
    job = make_job(worker=2)
    pods = pods_stuck_on_a_dead_node(job)
    plan = plan_job(PlanInputs(job, pods, build_service(job, TENSORFLOWJOB), now=NOW, node_ready=lambda _node: False,
                    pending_deletes=frozenset({"pod-uid-0"}), kind=TENSORFLOWJOB))

    deleted = [d.pod["metadata"]["uid"] for d in plan.delete_pods]
    assert deleted == ["pod-uid-1"], f"force-deleted again: {deleted}"


def test_the_reflector_waits_out_a_retry_after_before_watching_again() -> None:
    """Fault 7 (faulty API) evidence: watches answered `429` with `Retry-After: 3` were opened again
    1.85 s, 2.27 s and 2.73 s later (the proxy's request log; deterministic, since the test always
    throttles the watches reopened after its first cut). The reflector ignores `ApiError.retry_after`
    and waits only its own back-off (0.8 s + up to 100 % jitter for the first failure); client-go
    honours Retry-After for every request, lists and watches included.

    Fix: `informers/reflector.py` remembers the error's `retry_after` and `_pause` sleeps
    `max(self._backoff.next_delay(), retry_after)`, for failed lists and watches."""
    throttled = ApiError(429, "TooManyRequests", "slow down", retry_after=5.0)
    lister = FakeListerWatcher(lists=[page([pod("a", "1")], "10")], watches=[throttled])
    time = FakeClock()
    reflector = Reflector(lister, RecordingSink(), clock=time, rand=random.Random(1))
    lister.when_exhausted = reflector.stop
    reflector.run()

    assert lister.count("watch") == 2
    assert time.sleeps and time.sleeps[0] >= 5.0, f"watched again after {time.sleeps[0]:.2f}s, Retry-After was 5s"


class _Caches:
    def __init__(self, job: dict[str, Any]) -> None:
        self.job = job

    def get_job(self, key: str) -> dict[str, Any]:
        return self.job

    def pods_of(self, job_uid: str) -> list[dict[str, Any]]:
        return []

    def get_service(self, namespace: str, name: str) -> dict[str, Any] | None:
        return None

    def node_ready(self, name: str) -> bool | None:
        return True

    def get_owned(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        return None

    def pod_group_events(self, pod_group: dict[str, Any] | None) -> list[dict[str, Any]]:
        return []


class _Events:
    def __init__(self) -> None:
        self.reasons: list[str] = []

    def record(self, job: Any, kind: str, reason: str, message: str) -> None:
        self.reasons.append(reason)


def test_a_transient_error_while_checking_who_owns_an_existing_pod_is_not_a_name_conflict() -> None:
    """Fault 7 (faulty API) evidence: a pod create was lost after it took effect (the proxy closed the
    connection before the answer); the retry got `409 AlreadyExists`; the ownership check that follows
    (`GET` of the pod) was answered `429`; the job then got `Running=False` reason `NameConflict` and a
    Warning event `NameConflict`, though nothing foreign exists in the namespace. It heals on the next
    reconcile, but users are told a false story (and alerting on NameConflict would fire).

    Cause: `controller/reconciler.py`, `Reconciler._ours` returned False for *any* ApiError, and
    `_create_pods` then treated AlreadyExists as a conflict. Fix: an owner that cannot be read is
    retried and requeued, never reported as a NameConflict."""
    job = make_job(worker=1)
    kube = Mock(spec=Kube)
    kube.create.side_effect = lambda path, body: (_ for _ in ()).throw(
        ApiError(409, "AlreadyExists", "pods j-worker-0 already exists")) if path.endswith("/pods") else body
    kube.get.side_effect = ApiError(429, "TooManyRequests", "slow down", retry_after=0.0)
    kube.patch.side_effect = lambda path, body, **_: {**job, "status": body["status"]}
    events = _Events()
    reconciler = Reconciler(kube, _Caches({**job, "metadata": {**job["metadata"], "resourceVersion": "1"}}),
                            recorder=events, clock=FakeClock(wall=NOW))  # type: ignore[arg-type]

    with contextlib.suppress(RequeueError):
        reconciler.reconcile("ns/j")

    conditions = kube.patch.call_args.args[1]["status"]["conditions"] if kube.patch.called else []
    assert not [c for c in conditions if c.get("reason") == "NameConflict"], conditions
    assert "NameConflict" not in events.reasons


class _RecordingQueue(RateLimitingQueue[str]):
    """The controller's queue, remembering after how long each item was to come back."""

    def __init__(self) -> None:
        super().__init__(name="recording")
        self.delays: list[float] = []

    def add_after(self, item: str, delay: float) -> None:
        self.delays.append(delay)
        super().add_after(item, delay)


def test_a_retry_after_the_reconcile_could_not_wait_out_is_honoured_by_the_requeue() -> None:
    """Fault 7 (faulty API) evidence: a status PATCH failed five times (500, drop, 429 + Retry-After 2,
    429 + Retry-After 3, 500); tenacity gave up, the reconcile raised RequeueError and the work queue
    sent the same PATCH again 7 ms later (its per-item back-off starts at 5 ms). Had the fifth answer
    been the 429, its Retry-After would have been ignored; and a Retry-After above `kube/retry.py`'s
    `max_retry_after` (10 s) is never waited for at all: tenacity stops at once and the key is back
    in 5 ms, so an API server that asks for 30 s of quiet is hit again at once, and again.

    Fix: the RequeueError carries the largest Retry-After behind it and `Controller.process`
    requeues no sooner than that."""
    job = make_job(worker=1)
    job["metadata"]["resourceVersion"] = "1"
    kube = Mock(spec=Kube)
    kube.create.side_effect = lambda path, body: body
    kube.patch.side_effect = ApiError(429, "TooManyRequests", "come back in 30 s", retry_after=30.0)
    controller = Controller(kube, ControllerOptions(namespaces=("ns",), kueue="off"))
    queue = _RecordingQueue()
    controller.queue = queue
    controller.reconciler = Reconciler(kube, _Caches(job), clock=FakeClock(wall=NOW))
    try:
        controller.process("ns/j")  # creates the pod; its status waits for the next reconcile
        assert kube.patch.call_count == 0 and queue.delays == [ControllerOptions().first_status_wait]
        queue.delays.clear()
        controller.process("ns/j")  # the one it asked for: writes the status
    finally:
        queue.shut_down()
        controller.reconciler.close()

    assert kube.patch.call_count == 1, "retried within the reconcile although Retry-After exceeds the limit"
    assert queue.delays and min(queue.delays) >= 30.0, f"requeued after {min(queue.delays):.3f}s; Retry-After was 30s"


def test_a_job_whose_pods_exist_but_whose_start_time_was_never_written_still_gets_its_deadline() -> None:
    """Fault 1 (operator SIGKILLed, full size) evidence: job k12-deadline (activeDeadlineSeconds
    within 26 s) stayed `Running` for 260 s with both workers Running and was never failed with
    DeadlineExceeded.

    Cause: `controller/job/plan.py`, `_Planner._create_missing` sets `status.startTime` only in the
    reconcile that creates pods, and the reconciler writes the status after the creates. If that
    status write never happens — the operator is killed between the creates and the write, or the
    write is refused (a 409 Conflict was logged several times in that run) — every later reconcile
    finds the pods present, creates nothing, and never sets startTime; `_deadline_passed` returns
    False without a startTime, so the deadline never fires (and `kubectl get -o wide` shows no
    Started).

    Fix: a job found with pods but no startTime starts its deadline clock from its pods."""
    job = make_job(worker=2)
    job["spec"]["activeDeadlineSeconds"] = 10
    job["status"] = {"conditions": [{"type": "Created", "status": "True", "reason": "JobCreated", "message": "",
                                     "lastTransitionTime": format_time(NOW - timedelta(seconds=60))}]}
    created = format_time(NOW - timedelta(seconds=60))
    pods = pods_for(job, node="node-a", uid="pod-uid-{index}", creationTimestamp=created)

    plan = plan_job(PlanInputs(job, pods, build_service(job, TENSORFLOWJOB), now=NOW, kind=TENSORFLOWJOB))

    failed = next((c for c in plan.status["conditions"] if c["type"] == "Failed" and c["status"] == "True"), None)
    assert failed is not None or plan.status.get("startTime"), \
        f"no startTime, so the 10 s deadline of a job running for 60 s can never fire: {plan.status}"


class _LaggingCaches(_Caches):
    """A cache read just before the informer delivers the ADDED event of a pod created earlier."""

    def __init__(self, job: dict[str, Any], expectations: Expectations, key: str, arriving: str) -> None:
        super().__init__(job)
        self.expectations, self.key, self.arriving = expectations, key, arriving
        self.pods: list[dict[str, Any]] = []

    def pods_of(self, job_uid: str) -> list[dict[str, Any]]:
        seen = list(self.pods)
        if self.arriving:  # the event lands right after this read: the handler lowers the expectation
            self.expectations.creation_observed(self.key, self.arriving)
            self.arriving = ""
        return seen


def test_a_pod_the_cache_had_not_shown_yet_does_not_block_its_slot_once_it_is_gone() -> None:
    """Fault 5 (pod churn, full size) evidence: `churn-worker-4` was deleted and never recreated
    (60 s; the operator idle). Reproduced in-process with the controller's own expectations traced:
    a reconcile read the cache just before the ADDED event of `churn-worker-5`, which the previous
    reconcile had created; by the time it reached `_create_pods` (after the status write and the
    deletes) that event had lowered the expectation, so it POSTed `churn-worker-5` again, got
    `409 AlreadyExists` for its own pod, and *kept* a fresh creation expectation for it ("the cache
    was behind; the informer will show it") — but that pod's ADDED had already been seen. When the
    pod later failed and was deleted, the slot stayed empty: `_create_pods` skips names with a
    pending creation until the expectation's TTL (300 s).

    Cause: `controller/reconciler.py` read `pending_creations` in `_create_pods`, after the plan
    was made from the cache (client-go reads the expectations *before* the cache), and kept the
    expectation on AlreadyExists-ours. Fix: the expectations are read before the cache, and an
    AlreadyExists of our own pod lowers its expectation."""
    job = make_job(worker=1)
    job["metadata"]["resourceVersion"] = "1"
    key = "ns/j"
    memory = JobMemory()
    expectations = memory.expectations
    expectations.expect_creations(key, ["j-worker-0"])  # created by the previous reconcile
    caches = _LaggingCaches(job, expectations, key, arriving="j-worker-0")
    ours = build_pods(job, "", (), TENSORFLOWJOB)[0]
    ours["metadata"]["uid"] = "pod-uid-0"
    kube = Mock(spec=Kube)
    kube.create.side_effect = lambda path, body: (_ for _ in ()).throw(
        ApiError(409, "AlreadyExists", "pods j-worker-0 already exists")) if path.endswith("/pods") else body
    kube.get.return_value = ours
    kube.patch.side_effect = lambda path, body, **_: {**job, "status": body["status"]}
    reconciler = Reconciler(kube, caches, memory=memory, clock=FakeClock(wall=NOW))
    with contextlib.suppress(RequeueError):
        reconciler.reconcile(key)
    # Later the pod fails and is deleted; the cache shows the slot empty, and nothing is pending.
    kube.create.reset_mock()
    kube.create.side_effect = lambda path, body: body
    with contextlib.suppress(RequeueError):
        reconciler.reconcile(key)

    posted = [c.args[1]["metadata"]["name"] for c in kube.create.call_args_list if c.args[0].endswith("/pods")]
    assert posted == ["j-worker-0"], f"the empty slot was not refilled (pending: {expectations.pending_creations(key)})"
