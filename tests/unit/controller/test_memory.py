"""Job memory: one owner of what the controller remembers per job, forgotten by one call."""

from __future__ import annotations

from typing import Any

from controller.memory import JobMemory


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
