"""Job memory: one owner of what the controller remembers per job (expectations, the written status,
the deferred status, the validation memo), forgotten by one call."""

from __future__ import annotations

from typing import Any

from pytest_mock import MockerFixture

from controller.job import validation
from controller.job.validation import Problem, validate_job
from controller.memory import JobMemory
from tests.support.jobs import role, tfjob


def job(resource_version: str) -> dict[str, Any]:
    return {"metadata": {"name": "j", "namespace": "ns", "resourceVersion": resource_version}, "status": {}}


def test_forget_drops_expectations_the_written_overlay_and_the_deferred_status() -> None:
    memory = JobMemory()
    memory.expectations.expect_creations("ns/j", ["j-worker-0"])
    memory.remember_written("ns/j", "10", job("11"))
    memory.defer("ns/j", job("11"), {"state": "Created"})
    memory.forget("ns/j")
    assert memory.expectations.satisfied("ns/j")
    assert not memory.wrote("ns/j", "11")
    assert memory.freshest("ns/j", job("10")) == job("10")
    assert memory.take_deferred("ns/j", job("11")) is None


def test_forget_leaves_other_jobs_alone() -> None:
    memory = JobMemory()
    memory.remember_written("ns/a", "1", job("2"))
    memory.forget("ns/b")
    assert memory.wrote("ns/a", "2")


def test_the_written_job_stands_in_for_the_cache_until_the_cache_moves_past_its_base() -> None:
    memory = JobMemory()
    written = job("11")
    memory.remember_written("ns/j", "10", written)
    assert memory.freshest("ns/j", job("10")) is written
    newer = job("12")
    assert memory.freshest("ns/j", newer) is newer
    assert not memory.wrote("ns/j", "11"), "the overlay is dropped once the cache has moved on"


def test_a_deferred_status_is_taken_once_and_only_for_the_same_version() -> None:
    memory = JobMemory()
    memory.defer("ns/j", job("5"), {"state": "Created"})
    assert memory.take_deferred("ns/j", job("6")) is None
    memory.defer("ns/j", job("5"), {"state": "Created"})
    assert memory.take_deferred("ns/j", job("5")) == {"state": "Created"}
    assert memory.take_deferred("ns/j", job("5")) is None


def test_a_failed_write_forgets_only_the_overlay() -> None:
    memory = JobMemory()
    memory.remember_written("ns/j", "10", job("11"))
    memory.defer("ns/j", job("11"), {"state": "Created"})
    memory.forget_written("ns/j")
    assert not memory.wrote("ns/j", "11")
    assert memory.take_deferred("ns/j", job("11")) == {"state": "Created"}


def test_the_echo_of_our_write_lets_the_overlay_go_as_the_cache_now_holds_it() -> None:
    memory = JobMemory()
    memory.remember_written("ns/j", "10", job("11"))
    assert memory.wrote("ns/j", "11")
    echoed = job("11")
    assert memory.freshest("ns/j", echoed) is echoed
    assert not memory.wrote("ns/j", "11"), "nothing is kept once the cache has the written version"


def test_the_written_job_is_kept_without_its_managed_fields() -> None:
    memory = JobMemory()
    answer = job("11")
    answer["metadata"]["managedFields"] = [{"manager": "tfjob-operator", "fieldsV1": {"f:status": {}}}]
    memory.remember_written("ns/j", "10", answer)
    assert "managedFields" not in memory.freshest("ns/j", job("10"))["metadata"]


# ---- the validation memo --------------------------------------------------------------------------

def a_valid_job(name: str) -> dict[str, Any]:
    return tfjob(name, {"chief": role(1), "worker": role(2)}, namespace="ns", uid=f"uid-{name}")


def test_a_status_change_neither_revalidates_the_job_nor_makes_it_invalid(mocker: MockerFixture) -> None:
    check = mocker.spy(validation, "_check_schema")
    memory, job = JobMemory(), a_valid_job("j")
    assert memory.validated("ns/j", {**job, "status": {"conditions": [{"type": "Created", "status": "True"}]}},
                            validate_job) == []
    assert memory.validated("ns/j", {**job, "status": {"state": "Running", "unexpected": ["anything"]}},
                            validate_job) == []
    assert check.call_count == 1


def test_an_unchanged_job_is_schema_checked_once_however_often_it_is_validated(mocker: MockerFixture) -> None:
    check = mocker.spy(validation, "_check_schema")
    memory, job = JobMemory(), a_valid_job("j")
    job["metadata"]["resourceVersion"] = "1"
    first = memory.validated("ns/j", job, validate_job)
    job["metadata"]["resourceVersion"] = "2"  # not validated: still the same document
    assert memory.validated("ns/j", job, validate_job) == first
    assert check.call_count == 1
    job["spec"]["worker"]["replicas"] = -1
    assert memory.validated("ns/j", job, validate_job) != first
    assert check.call_count == 2


def test_every_live_job_is_checked_once_however_many_there_are() -> None:
    checked: list[str] = []

    def check(document: Any) -> list[Problem]:
        checked.append(document["metadata"]["uid"])
        return []

    memory = JobMemory()
    jobs = [{"metadata": {"name": f"job-{i}", "uid": f"uid-{i}"}, "spec": {"n": i}} for i in range(6000)]
    for _ in range(3):  # three resync passes over every job, in the same order each time
        for job in jobs:
            assert memory.validated(f"ns/{job['metadata']['name']}", job, check) == []
    assert len(checked) == len(jobs)


def test_a_changed_job_is_checked_again_and_only_its_latest_document_is_remembered() -> None:
    checked: list[int] = []

    def check(document: Any) -> list[Problem]:
        checked.append(document["spec"]["replicas"])
        return [Problem("spec.replicas", "odd")] if document["spec"]["replicas"] % 2 else []

    memory = JobMemory()
    job = {"metadata": {"name": "j", "uid": "uid-changing"}, "spec": {"replicas": 1}}
    assert memory.validated("ns/j", job, check) == [Problem("spec.replicas", "odd")]
    changed = {**job, "spec": {"replicas": 2}}
    assert memory.validated("ns/j", changed, check) == []
    assert memory.validated("ns/j", job, check) == [Problem("spec.replicas", "odd")]
    assert checked == [1, 2, 1]


def test_one_document_checked_two_ways_gets_each_checks_own_answer() -> None:
    memory = JobMemory()
    job = {"metadata": {"name": "j", "uid": "uid-two-checks"}, "spec": {}}
    assert memory.validated("ns/j", job, lambda _doc: [Problem("", "first")]) == [Problem("", "first")]
    assert memory.validated("ns/j", job, lambda _doc: []) == []


def test_a_job_deleted_and_created_again_under_its_name_is_checked_afresh() -> None:
    checked: list[str] = []

    def check(document: Any) -> list[Problem]:
        checked.append(document["metadata"]["uid"])
        return []

    memory = JobMemory()
    memory.validated("ns/j", {"metadata": {"name": "j", "uid": "uid-1"}, "spec": {}}, check)
    memory.validated("ns/j", {"metadata": {"name": "j", "uid": "uid-2"}, "spec": {}}, check)
    assert checked == ["uid-1", "uid-2"]


def test_forget_drops_the_validation_memo_too() -> None:
    checked: list[str] = []

    def check(document: Any) -> list[Problem]:
        checked.append(document["metadata"]["name"])
        return []

    memory = JobMemory()
    job = {"metadata": {"name": "j", "uid": "uid-1"}, "spec": {}}
    memory.validated("ns/j", job, check)
    memory.forget("ns/j")
    memory.validated("ns/j", job, check)
    assert checked == ["j", "j"]


def test_the_first_change_after_a_guarded_status_write_in_flight_is_its_echo() -> None:
    memory = JobMemory()
    with memory.writing("ns/j", "10"):
        assert memory.wrote("ns/j", "11", before="10")
        assert not memory.wrote("ns/j", "12", before="11")  # a later change is someone's
        assert not memory.wrote("ns/k", "11", before="10")
    assert not memory.wrote("ns/j", "11", before="10")  # the write answered: back to the written overlay
