"""The reconciler's exact API-call sequences, with the client mocked (the rules are in test_plan)."""

from __future__ import annotations

import copy
import threading
from datetime import UTC, datetime, timedelta
from typing import Any
from unittest.mock import Mock

import pytest
from pytest_mock import MockerFixture

from controller.job.builders import build_service
from controller.job.kinds import TENSORFLOWJOB
from controller.reconciler import SLOW_START_INITIAL_BATCH, STALE_CACHE_WAIT, Reconciler, RequeueError
from kube import ApiError
from kube.clock import FakeClock
from tests.support.caches import FakeCaches
from tests.support.jobs import pods_for, role, tfjob
from tests.support.mock_kube import status_patching_kube
from tfjob_api.defaults import apply_defaults
from tfjob_api.timeutil import format_time

NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)
LATER = NOW + timedelta(seconds=2)
JOB_PATH = "/apis/kubeflow.org/v1/namespaces/ns/tensorflowjobs/j"


def make_job(workers: int = 2, **spec: Any) -> dict[str, Any]:
    return tfjob("j", {"worker": role(workers), **spec}, namespace="ns", uid="job-uid", resourceVersion="10",
                 generation=1)


def running_pods(job: dict[str, Any]) -> list[dict[str, Any]]:
    return pods_for(apply_defaults(job), node=None)


def owned_service(job: dict[str, Any]) -> dict[str, Any]:
    service = build_service(apply_defaults(job), TENSORFLOWJOB)
    service["metadata"]["uid"] = "svc-uid"
    return service


@pytest.fixture
def kube(mocker: MockerFixture) -> Mock:
    return status_patching_kube(mocker, make_job)


def reconciler(kube: Mock, caches: FakeCaches, now: datetime = NOW) -> Reconciler:
    return Reconciler(kube, caches, clock=FakeClock(wall=now))


def test_new_job_creates_service_and_pods_and_leaves_the_status_to_the_next_reconcile(kube: Mock) -> None:
    outcome = reconciler(kube, FakeCaches(make_job(workers=3))).reconcile("ns/j")
    calls = kube.create.call_args_list
    [service_call] = [c for c in calls if c.args[0] == "/api/v1/namespaces/ns/services"]
    pod_calls = [c for c in calls if c is not service_call]
    assert sorted(c.args[1]["metadata"]["name"] for c in pod_calls) == ["j-worker-0", "j-worker-1", "j-worker-2"]
    assert all(c.args[0] == "/api/v1/namespaces/ns/pods" for c in pod_calls)
    assert not kube.patch.called
    assert outcome.status_deferred and not outcome.status_written and len(outcome.created) == 4


def created_then_two_seconds_later(kube: Mock, caches: FakeCaches) -> Reconciler:
    """A reconciler that created the job's pods at NOW and whose clock now reads NOW + 2 s."""
    clock = FakeClock(wall=NOW)
    rec = Reconciler(kube, caches, clock=clock)
    rec.reconcile("ns/j")
    clock.step((LATER - NOW).total_seconds())
    return rec


def test_the_reconcile_after_the_creates_writes_the_deferred_status_with_its_first_timestamps(kube: Mock) -> None:
    caches = FakeCaches(make_job(workers=3))
    rec = created_then_two_seconds_later(kube, caches)
    caches.service = owned_service(make_job(workers=3))
    outcome = rec.reconcile("ns/j")  # brought by the pods' ADDED events (still pending in the cache)
    path, body = kube.patch.call_args.args
    assert path == JOB_PATH + "/status"
    assert body["metadata"] == {"resourceVersion": "10"}
    assert body["status"]["startTime"] == format_time(NOW)
    created = next(c for c in body["status"]["conditions"] if c["type"] == "Created")
    assert created["lastTransitionTime"] == format_time(NOW)
    assert body["status"]["replicaStatuses"]["worker"]["active"] == 3
    assert outcome.status_written and kube.create.call_count == 4


def test_a_deferred_status_is_planned_afresh_when_the_job_changed_meanwhile(kube: Mock) -> None:
    caches = FakeCaches(make_job(workers=1))
    rec = created_then_two_seconds_later(kube, caches)
    caches.job = {**make_job(workers=1), "metadata": {**make_job()["metadata"], "resourceVersion": "12"}}
    rec.reconcile("ns/j")
    assert kube.patch.call_args.args[1]["status"]["startTime"] == format_time(LATER)


def test_service_is_created_alongside_the_first_pod_batch_not_before_it(kube: Mock) -> None:
    first_pod_sent = threading.Event()

    def create(path: str, body: dict[str, Any]) -> dict[str, Any]:
        if path.endswith("/services"):
            # Sequential creates would wait here for a pod create that only starts afterwards.
            assert first_pod_sent.wait(timeout=5), "the Service create held up the pods"
        else:
            first_pod_sent.set()
        return body

    kube.create.side_effect = create
    outcome = reconciler(kube, FakeCaches(make_job(workers=3))).reconcile("ns/j")
    assert "service/j" in outcome.created and len(outcome.created) == 4


def test_steady_running_job_makes_no_calls_the_second_time(kube: Mock) -> None:
    job = make_job()
    caches = FakeCaches(job, running_pods(job), owned_service(job))
    rec = reconciler(kube, caches)
    rec.reconcile("ns/j")
    caches.job = {**job, "status": kube.patch.call_args.args[1]["status"],
                  "metadata": {**job["metadata"], "resourceVersion": "11"}}
    kube.reset_mock()
    rec.reconcile("ns/j")
    assert kube.method_calls == []


def test_stale_cache_after_status_write_uses_the_written_status(kube: Mock) -> None:
    job = make_job()
    caches = FakeCaches(job, running_pods(job), owned_service(job))
    rec = reconciler(kube, caches)
    rec.reconcile("ns/j")
    kube.reset_mock()
    rec.reconcile("ns/j")  # the cache still holds resourceVersion 10
    assert kube.patch.call_count == 0


def test_failed_pod_is_deleted_with_its_uid_as_precondition(kube: Mock) -> None:
    job = make_job()
    pods = running_pods(job)
    pods[1]["status"] = {"phase": "Failed"}
    reconciler(kube, FakeCaches(job, pods, owned_service(job))).reconcile("ns/j")
    kube.delete.assert_called_once_with("/api/v1/namespaces/ns/pods/j-worker-1", uid="uid-j-worker-1", grace_seconds=None)
    assert kube.patch.call_args.args[1]["status"]["restartCount"] == 1


def test_delete_of_an_already_gone_pod_is_success_but_not_counted_as_a_deletion(kube: Mock) -> None:
    job = make_job()
    pods = running_pods(job)
    pods[1]["status"] = {"phase": "Failed"}
    kube.delete.side_effect = ApiError(404)
    outcome = reconciler(kube, FakeCaches(job, pods, owned_service(job))).reconcile("ns/j")
    assert outcome.deleted == [] and outcome.errors == []


def test_rejected_template_fails_the_job_with_invalid_pod_template(kube: Mock) -> None:
    kube.create.side_effect = lambda path, body: (_ for _ in ()).throw(
        ApiError(422, "Invalid", 'Pod "j-worker-0" is invalid: spec.containers[0].image: Required value')
    ) if body["kind"] == "Pod" else body
    reconciler(kube, FakeCaches(make_job(workers=20))).reconcile("ns/j")
    status = kube.patch.call_args.args[1]["status"]
    failed = next(c for c in status["conditions"] if c["type"] == "Failed")
    assert failed["reason"] == "InvalidPodTemplate"
    assert "spec.containers[0].image: Required value" in failed["message"]
    assert status["state"] == "Failed"
    pod_creates = [c for c in kube.create.call_args_list if c.args[1]["kind"] == "Pod"]
    assert len(pod_creates) == SLOW_START_INITIAL_BATCH  # the first batch failed; the other 12 were not tried


def test_a_job_failed_by_a_rejected_create_is_cleaned_up_and_requeued_for_its_ttl(kube: Mock) -> None:
    job = make_job(workers=3, ttlSecondsAfterFinished=60)
    pods = running_pods(job)[1:]  # worker 0 is gone; the server rejects the pod that replaces it
    kube.create.side_effect = ApiError(422, "Invalid", 'Pod "j-worker-0" is invalid: spec: Forbidden')
    outcome = reconciler(kube, FakeCaches(job, pods, owned_service(job))).reconcile("ns/j")
    assert sorted(outcome.deleted) == ["j-worker-1", "j-worker-2"]  # the failed job's cleanup
    assert outcome.requeue_after == 60  # the TTL fires on time, as for a job the planner fails
    status = kube.patch.call_args.args[1]["status"]
    assert status["state"] == "Failed"
    assert status["replicaStatuses"]["worker"]["active"] == 0


def test_a_small_job_has_all_its_pods_created_in_one_concurrent_batch(kube: Mock) -> None:
    all_five_sent = threading.Barrier(5, timeout=5)

    def create(path: str, body: dict[str, Any]) -> dict[str, Any]:
        if body["kind"] == "Pod":
            all_five_sent.wait()  # breaks if any pod create waits for another one to finish first
        return body

    kube.create.side_effect = create
    rec = Reconciler(kube, FakeCaches(make_job(workers=5)), clock=FakeClock(wall=NOW))
    outcome = rec.reconcile("ns/j")
    assert sorted(outcome.created) == ["j-worker-0", "j-worker-1", "j-worker-2", "j-worker-3", "j-worker-4",
                                       "service/j"]


def test_foreign_pod_holding_a_name_is_a_conflict_and_left_alone(kube: Mock) -> None:
    def create(path: str, body: dict[str, Any]) -> dict[str, Any]:
        if body["metadata"]["name"] == "j-worker-0":
            raise ApiError(409, "AlreadyExists", "pods j-worker-0 already exists")
        return body
    kube.create.side_effect = create
    kube.get.return_value = {"metadata": {"name": "j-worker-0", "uid": "someone-else"}}
    with pytest.raises(RequeueError):
        reconciler(kube, FakeCaches(make_job(workers=1))).reconcile("ns/j")
    running = next(c for c in kube.patch.call_args.args[1]["status"]["conditions"] if c["type"] == "Running")
    assert running["reason"] == "NameConflict"
    kube.delete.assert_not_called()


def test_foreign_service_with_the_jobs_name_is_never_deleted(kube: Mock) -> None:
    job = make_job(workers=1)
    foreign = {"metadata": {"name": "j", "namespace": "ns", "uid": "other", "ownerReferences": []}}
    with pytest.raises(RequeueError, match="Service j"):
        reconciler(kube, FakeCaches(job, [], foreign)).reconcile("ns/j")
    assert all(c.args[1]["kind"] == "Pod" for c in kube.create.call_args_list)
    kube.delete.assert_not_called()


def test_quota_refusal_is_reported_and_requeued(kube: Mock) -> None:
    def create(path: str, body: dict[str, Any]) -> dict[str, Any]:
        if body["kind"] == "Pod":
            raise ApiError(403, "Forbidden", 'pods "j-worker-0" is forbidden: exceeded quota: q, requested: pods=1')
        return body
    kube.create.side_effect = create
    with pytest.raises(RequeueError, match="quota"):
        reconciler(kube, FakeCaches(make_job())).reconcile("ns/j")
    running = next(c for c in kube.patch.call_args.args[1]["status"]["conditions"] if c["type"] == "Running")
    assert running["reason"] == "QuotaExceeded"


def test_creates_refused_because_the_namespace_is_terminating_are_dropped_quietly(kube: Mock) -> None:
    terminating = ApiError(403, "Forbidden", "unable to create new content in namespace ns because it is being "
                           "terminated", body={"details": {"causes": [{"reason": "NamespaceTerminating"}]}})
    kube.create.side_effect = terminating
    recorder = Mock()
    Reconciler(kube, FakeCaches(make_job()), clock=FakeClock(wall=NOW), recorder=recorder).reconcile("ns/j")
    assert kube.create.call_count >= 1
    assert not [c for c in recorder.method_calls if "FailedCreate" in str(c)]


def test_creates_already_expected_are_not_sent_again(kube: Mock) -> None:
    rec = reconciler(kube, FakeCaches(make_job(workers=2)))
    rec.reconcile("ns/j")
    kube.reset_mock()
    rec.reconcile("ns/j")  # the informer has not shown the pods yet
    assert [c for c in kube.create.call_args_list if c.args[1]["kind"] == "Pod"] == []


def test_expired_ttl_deletes_the_job_by_uid(kube: Mock) -> None:
    job = make_job(workers=1, ttlSecondsAfterFinished=3)
    job["status"] = {"conditions": [{"type": "Succeeded", "status": "True", "reason": "JobSucceeded", "message": "",
                                     "lastTransitionTime": "x", "lastUpdateTime": "x"}],
                     "completionTime": format_time(NOW - timedelta(seconds=5))}
    outcome = reconciler(kube, FakeCaches(job, [], owned_service(job))).reconcile("ns/j")
    kube.delete.assert_called_once_with(JOB_PATH, uid="job-uid", propagation="Background")
    assert outcome.job_deleted


def test_vanished_job_makes_no_calls(kube: Mock) -> None:
    reconciler(kube, FakeCaches(None)).reconcile("ns/j")
    assert kube.method_calls == []


def test_resume_sends_null_to_clear_start_time(kube: Mock) -> None:
    job = make_job(workers=1)
    job["status"] = {"startTime": "2026-01-01T00:00:00Z", "completionTime": "2026-01-01T00:00:00Z",
                     "conditions": [{"type": "Suspended", "status": "True", "reason": "Suspended", "message": "",
                                     "lastTransitionTime": "x", "lastUpdateTime": "x"}]}
    rec = reconciler(kube, FakeCaches(copy.deepcopy(job)))
    rec.reconcile("ns/j")  # creates the pod
    rec.reconcile("ns/j")  # writes the status
    status_patch = kube.patch.call_args.args[1]["status"]
    assert status_patch["startTime"] == format_time(NOW)
    assert status_patch["completionTime"] is None


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def record(self, job: Any, kind: str, reason: str, message: str) -> None:
        self.events.append((kind, reason, message))


def created_condition(job: dict[str, Any]) -> dict[str, Any]:
    job["status"] = {"conditions": [{"type": "Created", "status": "True", "reason": "JobCreated",
                                     "message": "TensorFlowJob j is created.", "lastTransitionTime": format_time(NOW),
                                     "lastUpdateTime": format_time(NOW)}]}
    return job


def test_a_jobs_first_creates_are_told_by_its_created_condition_not_by_an_event(kube: Mock) -> None:
    recorder = Recorder()
    rec = Reconciler(kube, FakeCaches(make_job(workers=12)), clock=FakeClock(wall=NOW), recorder=recorder)  # type: ignore[arg-type]
    outcome = rec.reconcile("ns/j")
    assert len(outcome.created) == 13 and recorder.events == []


def test_creates_for_a_job_already_created_are_one_summary_event(kube: Mock) -> None:
    recorder = Recorder()
    job = created_condition(make_job(workers=12))
    rec = Reconciler(kube, FakeCaches(job), clock=FakeClock(wall=NOW), recorder=recorder)  # type: ignore[arg-type]
    rec.reconcile("ns/j")
    reasons = [reason for _, reason, _ in recorder.events]
    assert reasons == ["SuccessfulCreate"]
    message = recorder.events[0][2]
    assert message.startswith("Created 13 object(s): j-worker-0, j-worker-1,")
    assert message.endswith("and 3 more")


def test_a_jobs_first_creates_get_their_event_when_one_was_refused(kube: Mock) -> None:
    def create(path: str, body: dict[str, Any]) -> dict[str, Any]:
        if body["metadata"]["name"] == "j-worker-1":
            raise ApiError(403, "Forbidden", 'pods "j-worker-1" is forbidden: exceeded quota: q, requested: pods=1')
        return body
    kube.create.side_effect = create
    recorder = Recorder()
    rec = Reconciler(kube, FakeCaches(make_job()), clock=FakeClock(wall=NOW), recorder=recorder)  # type: ignore[arg-type]
    with pytest.raises(RequeueError, match="quota"):
        rec.reconcile("ns/j")
    created = [message for _, reason, message in recorder.events if reason == "SuccessfulCreate"]
    assert created == ["Created 2 object(s): j-worker-0, service/j"]


def test_unreadable_owner_of_an_existing_pod_is_retried_not_called_a_conflict(kube: Mock) -> None:
    def create(path: str, body: dict[str, Any]) -> dict[str, Any]:
        if body["kind"] == "Pod":
            raise ApiError(409, "AlreadyExists", "exists")
        return body
    kube.create.side_effect = create
    kube.get.side_effect = ApiError(403, "Forbidden", "no")
    with pytest.raises(RequeueError, match="owner could not be read"):
        reconciler(kube, FakeCaches(make_job(workers=1))).reconcile("ns/j")
    conditions = kube.patch.call_args.args[1]["status"]["conditions"]
    assert all(c.get("reason") != "NameConflict" for c in conditions)


def test_service_already_ours_but_missing_from_the_cache_is_not_a_conflict(kube: Mock) -> None:
    job = make_job(workers=1)
    def create(path: str, body: dict[str, Any]) -> dict[str, Any]:
        if body["kind"] == "Service":
            raise ApiError(409, "AlreadyExists", "exists")
        return body
    kube.create.side_effect = create
    kube.get.return_value = owned_service(job) | {"metadata": {**owned_service(job)["metadata"]}}
    kube.get.return_value["metadata"]["ownerReferences"][0]["uid"] = "job-uid"
    rec = reconciler(kube, FakeCaches(job))
    rec.reconcile("ns/j")
    rec.reconcile("ns/j")
    conditions = kube.patch.call_args.args[1]["status"]["conditions"]
    assert all(c.get("reason") != "NameConflict" for c in conditions)


def test_a_counted_failure_is_written_before_the_failed_pod_is_deleted(kube: Mock, mocker: MockerFixture) -> None:
    job = make_job()
    pods = running_pods(job)
    pods[1]["status"] = {"phase": "Failed"}
    order = mocker.Mock()
    order.attach_mock(kube.patch, "patch")
    order.attach_mock(kube.delete, "delete")
    reconciler(kube, FakeCaches(job, pods, owned_service(job))).reconcile("ns/j")
    calls = [name for name, _, _ in order.mock_calls]
    assert calls.index("patch") < calls.index("delete")
    assert order.mock_calls[0].args[1]["status"]["restartCount"] == 1


def conflict_once(kube: Mock) -> None:
    answer = kube.patch.side_effect
    calls = {"n": 0}

    def patch(path: str, body: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        calls["n"] += 1
        if calls["n"] == 1:
            raise ApiError(409, "Conflict", "the object has been modified")
        return answer(path, body, **kwargs)
    kube.patch.side_effect = patch


def test_status_conflict_reads_the_job_once_and_retries_against_the_servers_version(kube: Mock) -> None:
    job = make_job()
    caches = FakeCaches(job, running_pods(job), owned_service(job))
    conflict_once(kube)
    kube.get.return_value = {**job, "metadata": {**job["metadata"], "resourceVersion": "12"}}
    rec = reconciler(kube, caches)
    with pytest.raises(RequeueError, match="409"):
        rec.reconcile("ns/j")
    kube.get.assert_called_once_with(JOB_PATH)
    rec.reconcile("ns/j")  # the cache still holds resourceVersion 10
    assert kube.patch.call_args.args[1]["metadata"] == {"resourceVersion": "12"}
    assert kube.get.call_count == 1


def test_status_conflict_whose_write_already_landed_sends_nothing_more(kube: Mock) -> None:
    job = make_job()
    caches = FakeCaches(job, running_pods(job), owned_service(job))
    conflict_once(kube)
    kube.get.side_effect = lambda path: {**job, "status": kube.patch.call_args.args[1]["status"],
                                         "metadata": {**job["metadata"], "resourceVersion": "12"}}
    rec = reconciler(kube, caches)
    with pytest.raises(RequeueError):
        rec.reconcile("ns/j")  # the 409 answers a write of ours whose answer was lost
    rec.reconcile("ns/j")
    assert kube.patch.call_count == 1


def test_status_conflict_with_an_unreadable_job_waits_for_the_watch(kube: Mock) -> None:
    job = make_job()
    conflict_once(kube)
    kube.get.side_effect = ApiError(403, "Forbidden", "cannot get tensorflowjobs")
    with pytest.raises(RequeueError) as raised:
        reconciler(kube, FakeCaches(job, running_pods(job), owned_service(job))).reconcile("ns/j")
    assert raised.value.retry_after == STALE_CACHE_WAIT


def test_pods_just_created_count_as_active_so_their_arrival_in_the_cache_writes_nothing(kube: Mock) -> None:
    job = make_job()
    caches = FakeCaches(job)
    rec = reconciler(kube, caches)
    rec.reconcile("ns/j")
    rec.reconcile("ns/j")  # before the ADDED events arrive
    assert kube.patch.call_args.args[1]["status"]["replicaStatuses"]["worker"]["active"] == 2
    caches.service = owned_service(job)
    caches.pods = [{**pod, "status": {"phase": "Pending"}} for pod in running_pods(job)]
    kube.reset_mock(return_value=False, side_effect=False)
    rec.reconcile("ns/j")  # the ADDED events arrived; the cached job still holds the old status
    assert kube.patch.call_count == 0


def test_a_service_create_the_server_throttles_is_requeued_no_sooner_than_its_retry_after(kube: Mock) -> None:
    def create(path: str, body: dict[str, Any]) -> dict[str, Any]:
        if body["kind"] == "Service":
            raise ApiError(429, "TooManyRequests", "slow down", retry_after=30.0)
        return body
    kube.create.side_effect = create
    with pytest.raises(RequeueError) as raised:
        reconciler(kube, FakeCaches(make_job())).reconcile("ns/j")
    assert raised.value.retry_after == 30.0
