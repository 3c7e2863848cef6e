"""The reflector's state machine, driven by scripted lists and watch streams.

Each test scripts what the API answers, runs `Reflector.run()` in the test thread until the script
is used up (the fake stops the reflector when it hands out its idle watch), and checks what reached
the sink, which requests were made, and how long it would have slept. Nothing sleeps for real.
"""

from __future__ import annotations

import random
import threading

import pytest

from informers.backoff import Backoff
from informers.reflector import Reflector
from informers.testing import (
    FakeListerWatcher,
    FakeWatch,
    RecordingSink,
    added,
    bookmark,
    deleted,
    error_event,
    modified,
    page,
    pod,
    wait_until,
)
from kube import ApiError
from kube.clock import FakeClock


def run(lw: FakeListerWatcher, *, time: FakeClock | None = None, **options: object) -> tuple[Reflector, RecordingSink, FakeClock]:
    sink = RecordingSink()
    time = time or FakeClock(start=1000.0)
    reflector = Reflector(lw, sink, clock=time, rand=random.Random(1), **options)  # type: ignore[arg-type]
    lw.when_exhausted = reflector.stop
    reflector.run()
    return reflector, sink, time


def test_lists_then_watches_from_the_list_resource_version() -> None:
    lw = FakeListerWatcher(
        lists=[page([pod("a", "5"), pod("b", "7")], "10")],
        watches=[FakeWatch([added(pod("c", "11")), modified(pod("a", "12")), deleted(pod("b", "13"))])],
    )
    reflector, sink, time = run(lw)
    assert sink.calls == [
        ("replace", ["a", "b"], None, "10"),
        ("ADDED", "c", "11"),
        ("MODIFIED", "a", "12"),
        ("DELETED", "b", "13"),
    ]
    assert lw.watch_versions() == ["10", "13"]
    assert reflector.resource_version == "13"
    assert reflector.has_synced
    assert time.sleeps == []


def test_list_is_paginated_with_limit_and_continue() -> None:
    lw = FakeListerWatcher(lists=[[page([pod("a", "1")], cont="t1"), page([pod("b", "2")], cont="t2"), page([pod("c", "3")], "30")]])
    _, sink, _ = run(lw, page_size=1)
    assert [c for c in lw.calls if c[0] == "list"] == [("list", None, 1), ("list", "t1", 1), ("list", "t2", 1)]
    assert sink.calls[0] == ("replace", ["a", "b", "c"], None, "30")
    assert lw.watch_versions()[0] == "30"


def test_a_410_on_a_continue_token_restarts_the_list_from_scratch() -> None:
    expired = ApiError(410, "Expired", "The provided continue parameter is too old")
    lw = FakeListerWatcher(lists=[[page([pod("a", "1")], cont="t1"), expired, page([pod("a", "1"), pod("b", "2")], "40")]])
    _, sink, time = run(lw)
    assert [c[1] for c in lw.calls if c[0] == "list"] == [None, "t1", None]
    assert sink.calls[0] == ("replace", ["a", "b"], None, "40")
    assert time.sleeps == []


def test_list_items_get_kind_and_api_version_from_the_list() -> None:
    lw = FakeListerWatcher(lists=[page([pod("a", "1")], "2")])
    items: list[dict[str, object]] = []

    class Sink(RecordingSink):
        def on_replace(self, listed: list[dict[str, object]], *, namespace: str | None, resource_version: str) -> None:
            items.extend(listed)

    reflector = Reflector(lw, Sink(), clock=FakeClock())
    lw.when_exhausted = reflector.stop
    reflector.run()
    assert (items[0]["kind"], items[0]["apiVersion"]) == ("Pod", "v1")


def test_a_sink_that_prepares_items_gets_each_page_prepared_before_the_next_is_listed() -> None:
    lw = FakeListerWatcher(lists=[[page([pod("a", "1")], cont="t1"), page([pod("b", "2")], "20")]])
    seen: list[str] = []

    class Sink(RecordingSink):
        def prepare(self, obj: dict[str, object]) -> dict[str, object]:
            seen.append(f"prepare {obj['metadata']['name']} after {lw.count('list')} list(s)")  # type: ignore[index]
            return {**obj, "prepared": True}

        def on_replace(self, listed: list[dict[str, object]], *, namespace: str | None, resource_version: str) -> None:
            seen.append("replace " + ",".join(str(o.get("prepared")) for o in listed))

    reflector = Reflector(lw, Sink(), page_size=1, clock=FakeClock())
    lw.when_exhausted = reflector.stop
    reflector.run()
    assert seen == ["prepare a after 1 list(s)", "prepare b after 2 list(s)", "replace True,True"]


def test_bookmark_moves_the_resource_version_without_an_event() -> None:
    lw = FakeListerWatcher(lists=[page([pod("a", "1")], "10")], watches=[FakeWatch([bookmark("25")])])
    reflector, sink, _ = run(lw)
    assert sink.calls == [("replace", ["a"], None, "10")]
    assert lw.watch_versions() == ["10", "25"]
    assert reflector.resource_version == "25"


def test_stream_end_rewatches_from_the_last_resource_version_without_relisting() -> None:
    lw = FakeListerWatcher(
        lists=[page([], "10")],
        watches=[
            FakeWatch([added(pod("a", "11"))]),
            FakeWatch([modified(pod("a", "12"))]),
        ],
    )
    reflector, sink, time = run(lw)
    assert lw.count("list") == 1
    assert lw.watch_versions() == ["10", "11", "12"]
    assert [c[0] for c in sink.calls] == ["replace", "ADDED", "MODIFIED"]  # no duplicate ADDED
    assert reflector.relist_count == 0 and time.sleeps == []


def test_410_error_event_relists_and_watches_from_the_new_list() -> None:
    relists: list[str] = []
    lw = FakeListerWatcher(
        lists=[page([pod("a", "1"), pod("b", "2")], "10"), page([pod("a", "1")], "50")],
        watches=[FakeWatch([added(pod("c", "11")), error_event(410, "Expired", "too old resource version: 11 (40)")])],
    )
    reflector, sink, time = run(lw, on_relist=relists.append)
    assert sink.calls == [
        ("replace", ["a", "b"], None, "10"),
        ("ADDED", "c", "11"),
        ("replace", ["a"], None, "50"),
    ]
    assert lw.watch_versions() == ["10", "50"]
    assert reflector.relist_count == 1 and relists == ["fake pods"]
    assert time.sleeps == []  # progress was made since the last list: relist at once


def test_gone_reason_without_code_also_relists() -> None:
    lw = FakeListerWatcher(
        lists=[page([], "10"), page([], "60")],
        watches=[FakeWatch([added(pod("a", "11")), {"type": "ERROR", "object": {"kind": "Status", "reason": "Gone"}}])],
    )
    reflector, _, _ = run(lw)
    assert reflector.relist_count == 1


def test_http_410_when_opening_the_watch_relists() -> None:
    lw = FakeListerWatcher(
        lists=[page([], "10"), page([pod("a", "1")], "70")],
        watches=[ApiError(410, "Expired")],
    )
    _, sink, time = run(lw)
    assert sink.calls[-1] == ("replace", ["a"], None, "70")
    assert lw.watch_versions() == ["10", "70"]
    assert len(time.sleeps) == 1  # 410 straight after a list: back off once before relisting


def test_a_relist_needing_several_list_attempts_counts_once() -> None:
    relists: list[str] = []
    lw = FakeListerWatcher(
        lists=[page([], "10"), ApiError(503), ApiError(503), page([pod("a", "1")], "60")],
        watches=[FakeWatch([added(pod("b", "11")), error_event(410, "Expired")])],
    )
    reflector, sink, time = run(lw, on_relist=relists.append)
    assert reflector.relist_count == 1 and relists == ["fake pods"]
    assert sink.calls[-1] == ("replace", ["a"], None, "60")
    assert len(time.sleeps) == 2


def test_too_large_resource_version_relists() -> None:
    too_large = ApiError(504, "Timeout", "Too large resource version: 99, current: 10")
    lw = FakeListerWatcher(lists=[page([], "10"), page([], "12")], watches=[too_large])
    reflector, _, _ = run(lw)
    assert reflector.relist_count == 1


@pytest.mark.parametrize(
    "error",
    [
        ApiError(0, "ProtocolError", "Connection refused"),
        ApiError(429, "TooManyRequests"),
        ApiError(500, "InternalError"),
        ApiError(503, "ServiceUnavailable"),
    ],
    ids=["connection", "429", "500", "503"],
)
def test_connection_errors_429_and_5xx_back_off_then_rewatch_from_the_same_version(error: ApiError) -> None:
    lw = FakeListerWatcher(
        lists=[page([], "10")],
        watches=[error, error, FakeWatch([added(pod("a", "11"))])],
    )
    reflector, sink, time = run(lw)
    assert lw.count("list") == 1
    assert lw.watch_versions() == ["10", "10", "10", "11"]
    assert len(time.sleeps) == 2
    assert 0.8 <= time.sleeps[0] < 1.6 and 1.6 <= time.sleeps[1] < 3.2
    assert sink.calls[-1] == ("ADDED", "a", "11")
    assert reflector.relist_count == 0


def test_a_broken_stream_backs_off_and_resumes_after_the_last_event() -> None:
    lw = FakeListerWatcher(
        lists=[page([], "10")],
        watches=[
            FakeWatch([added(pod("a", "11"))], then=ApiError(0, "ProtocolError", "Connection broken")),
            FakeWatch([modified(pod("a", "12"))]),
        ],
    )
    _, sink, time = run(lw)
    assert lw.watch_versions() == ["10", "11", "12"]
    assert [c[0] for c in sink.calls] == ["replace", "ADDED", "MODIFIED"]
    assert len(time.sleeps) == 1


def test_an_error_event_other_than_410_backs_off_without_relisting() -> None:
    lw = FakeListerWatcher(
        lists=[page([], "10")],
        watches=[FakeWatch([added(pod("a", "11")), error_event(500, "InternalError", "etcd leader changed")])],
    )
    reflector, _, time = run(lw)
    assert reflector.relist_count == 0
    assert lw.watch_versions() == ["10", "11"]
    assert len(time.sleeps) == 1


def test_a_watch_that_closes_at_once_with_no_events_backs_off() -> None:
    lw = FakeListerWatcher(lists=[page([], "10")], watches=[FakeWatch([]), FakeWatch([])])
    _, _, time = run(lw)
    assert len(time.sleeps) == 2
    assert lw.watch_versions() == ["10", "10", "10"]


def test_a_long_quiet_watch_ending_normally_rewatches_without_back_off() -> None:
    time = FakeClock(start=1000.0)

    class QuietWatch(FakeWatch):
        def __iter__(self):
            time.step(300)  # the server timeout elapsed without events
            yield from ()

    lw = FakeListerWatcher(lists=[page([], "10")], watches=[QuietWatch([])])
    run(lw, time=time)
    assert time.sleeps == []
    assert lw.watch_versions() == ["10", "10"]


def test_list_errors_back_off_and_retry_the_list() -> None:
    lw = FakeListerWatcher(lists=[ApiError(503), ApiError(0, "NewConnectionError"), page([pod("a", "1")], "10")])
    reflector, sink, time = run(lw)
    assert lw.count("list") == 3
    assert len(time.sleeps) == 2
    assert sink.calls == [("replace", ["a"], None, "10")]
    assert reflector.relist_count == 0  # the first successful list is not a relist


def test_the_watch_asks_for_a_random_server_timeout_and_a_read_timeout() -> None:
    lw = FakeListerWatcher(lists=[page([], "10")], watches=[FakeWatch([added(pod(f"p{i}", str(11 + i)))]) for i in range(30)])
    run(lw, read_timeout=90.0)
    watches = [c for c in lw.calls if c[0] == "watch"]
    timeouts = {c[2] for c in watches}
    assert all(300 <= t <= 600 for t in timeouts) and len(timeouts) > 1
    assert {c[3] for c in watches} == {90.0}


def test_unknown_event_types_and_objectless_events_are_skipped() -> None:
    lw = FakeListerWatcher(
        lists=[page([], "10")],
        watches=[FakeWatch([{"type": "SURPRISE", "object": pod("x", "99")}, {"type": "ADDED"}, added(pod("a", "11"))])],
    )
    reflector, sink, _ = run(lw)
    assert sink.calls[1:] == [("ADDED", "a", "11")]
    assert reflector.resource_version == "11"


def test_a_sink_failure_relists() -> None:
    class FailingOnce(RecordingSink):
        failed = False

        def on_event(self, event_type: str, obj: dict[str, object]) -> None:
            if not self.failed:
                self.failed = True
                raise RuntimeError("handler bug")
            super().on_event(event_type, obj)

    lw = FakeListerWatcher(lists=[page([], "10"), page([pod("a", "11")], "11")], watches=[FakeWatch([added(pod("a", "11"))])])
    time = FakeClock(start=1000.0)
    sink = FailingOnce()
    reflector = Reflector(lw, sink, clock=time)
    lw.when_exhausted = reflector.stop
    reflector.run()
    assert reflector.relist_count == 1
    assert sink.calls[-1] == ("replace", ["a"], None, "11")
    assert len(time.sleeps) == 1


def test_stop_closes_the_open_watch_and_run_returns() -> None:
    lw = FakeListerWatcher(lists=[page([], "10")])
    reflector = Reflector(lw, RecordingSink())
    thread = threading.Thread(target=reflector.run)
    thread.start()
    assert lw.exhausted.wait(10)
    reflector.stop()
    thread.join(10)
    assert not thread.is_alive()
    assert lw.idle[0].closed.is_set()


def test_stop_ends_a_back_off_wait_at_once() -> None:
    lw = FakeListerWatcher(lists=[ApiError(503)] * 1)
    reflector = Reflector(lw, RecordingSink(), backoff=Backoff(initial=3600, maximum=3600))
    thread = threading.Thread(target=reflector.run)
    thread.start()
    assert wait_until(lambda: lw.count("list") == 1)
    reflector.stop()
    thread.join(10)
    assert not thread.is_alive()


# --- back-off ----------------------------------------------------------------------------------------


def test_backoff_doubles_from_0_8_to_30_seconds_with_jitter() -> None:
    time = FakeClock(start=1000.0)
    backoff = Backoff(clock=time, rand=lambda: 0.0)
    assert [backoff.next_delay() for _ in range(8)] == pytest.approx([0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0])
    jittered = Backoff(clock=time, rand=lambda: 0.5)
    assert jittered.next_delay() == pytest.approx(1.2)


def test_backoff_resets_after_two_minutes_without_failures() -> None:
    time = FakeClock(start=1000.0)
    backoff = Backoff(clock=time, rand=lambda: 0.0)
    backoff.next_delay()
    backoff.next_delay()
    time.step(121)
    assert backoff.next_delay() == pytest.approx(0.8)


def test_a_429_with_retry_after_waits_at_least_that_long_for_watches_and_lists() -> None:
    lw = FakeListerWatcher(
        lists=[ApiError(429, "TooManyRequests", retry_after=7.0), page([], "10")],
        watches=[ApiError(429, "TooManyRequests", retry_after=12.0), FakeWatch([added(pod("a", "11"))])],
    )
    _, sink, time = run(lw)
    assert time.sleeps[0] >= 7.0 and time.sleeps[1] >= 12.0
    assert sink.calls[-1] == ("ADDED", "a", "11")
