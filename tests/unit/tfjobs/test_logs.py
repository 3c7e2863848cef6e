"""Unit tests of `tfjobs.logs`: timestamps, prefixes and merging (pure), and one pod's reader
reopening its stream without losing or repeating a line (scripted streams in place of the API).
The whole follower against the local cluster is in tests/integration/controller/test_user_tools.py.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import Any

from tests.support.jobs import make_job, pods_for
from tfjobs.errors import ClusterApiError
from tfjobs.logs import (
    LogLine,
    _Reader,
    _ReaderDone,
    format_line,
    has_started,
    line_prefix,
    merge,
    pod_selector,
    split_timestamp,
    timestamp_key,
)


def line(prefix: str, text: str, timestamp: str) -> LogLine:
    return LogLine(prefix, f"j-{prefix}", "tensorflow", text, timestamp)


def test_the_servers_timestamp_is_split_from_the_text() -> None:
    assert split_timestamp("2030-01-01T00:00:05.123456789Z epoch 1 loss=0.5") == (
        "2030-01-01T00:00:05.123456789Z", "epoch 1 loss=0.5")
    assert split_timestamp("no timestamp here") == ("", "no timestamp here")


def test_timestamps_sort_by_time_whatever_their_precision() -> None:
    shorter, longer = "2030-01-01T00:00:05.5Z", "2030-01-01T00:00:05.25Z"

    assert timestamp_key(longer) < timestamp_key(shorter)
    assert timestamp_key("2030-01-01T00:00:05Z") < timestamp_key(longer)


def test_a_line_is_prefixed_with_its_slot() -> None:
    item = line("worker-1", "epoch 3", "2030-01-01T00:00:05Z")

    assert format_line(item) == "[worker-1] epoch 3"
    assert format_line(item, timestamps=True) == "[worker-1] 2030-01-01T00:00:05Z epoch 3"
    assert format_line(item, prefix=False) == "epoch 3"


def test_the_logs_of_several_pods_are_merged_in_time_order() -> None:
    chief = [line("chief-0", "a", "2030-01-01T00:00:01Z"), line("chief-0", "d", "2030-01-01T00:00:04Z")]
    worker = [line("worker-0", "b", "2030-01-01T00:00:02.5Z"), line("worker-0", "c", "2030-01-01T00:00:02.75Z")]

    assert [x.text for x in merge([chief, worker])] == ["a", "b", "c", "d"]


def test_the_selector_narrows_to_a_role_and_an_index() -> None:
    assert pod_selector("mnist", "worker", 1) == ("tensorflowjob.kubeflow.org/job-name=mnist,"
                                                  "tensorflowjob.kubeflow.org/replica-type=worker,"
                                                  "tensorflowjob.kubeflow.org/replica-index=1")


def test_the_prefix_names_the_slot_and_a_container_other_than_tensorflow() -> None:
    pod = pods_for(make_job(worker=2))[1]

    assert line_prefix(pod, "tensorflow") == "worker-1"
    assert line_prefix(pod, "sidecar") == "worker-1/sidecar"


def test_a_container_has_a_log_once_it_ran() -> None:
    pod = pods_for(make_job(worker=1))[0]
    assert not has_started(pod, "tensorflow")

    pod["status"]["containerStatuses"] = [{"name": "tensorflow", "state": {"running": {}}}]
    assert has_started(pod, "tensorflow")


# --- one reader, with scripted streams ---------------------------------------------------------------


class Stream:
    """A log stream that yields its lines, optionally calls `then` at its end, or blocks until closed."""

    def __init__(self, lines: list[str], then: Any = None, block: bool = False) -> None:
        self.lines, self.then, self.block = lines, then, block
        self.closed = threading.Event()

    def __iter__(self) -> Iterator[str]:
        yield from self.lines
        if self.block:
            self.closed.wait(10)
        if self.then is not None:
            self.then()

    def close(self) -> None:
        self.closed.set()


class Connection:
    """Answers `pod_log` from a script (a stream or a ClusterApiError per call) and records the calls."""

    def __init__(self) -> None:
        self.script: list[Any] = []
        self.calls: list[dict[str, Any]] = []

    def pod_log(self, namespace: str, name: str, **options: Any) -> Any:
        self.calls.append(options)
        answer = self.script.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


class Follower:
    """What a reader needs of its LogFollower."""

    def __init__(self) -> None:
        self.connection = Connection()
        self.namespace = "ns"
        self.since_seconds: int | None = None
        self.tail_lines: int | None = 5
        self.reopen_pause = 0.0
        self.out: queue.Queue[Any] = queue.Queue()
        self.errors: list[str] = []

    def _put(self, item: Any) -> None:
        self.out.put(item)

    def _error(self, message: str) -> None:
        self.errors.append(message)

    def drain(self) -> list[str]:
        """The texts the reader gave out, once it is done."""
        texts = []
        while True:
            item = self.out.get(timeout=10)
            if isinstance(item, _ReaderDone):
                return texts
            texts.append(item.text)


T1, T2, T3, T4 = (f"2030-01-01T00:00:0{i}.000000001Z" for i in (1, 2, 3, 4))


def reader_for(follower: Follower, *, initial: bool = True) -> _Reader:
    pod = pods_for(make_job(worker=1))[0]
    return _Reader(follower, pod, "tensorflow", initial=initial)  # type: ignore[arg-type]


def test_a_reopened_stream_gives_out_only_the_lines_not_given_yet() -> None:
    follower = Follower()
    reader = reader_for(follower)
    follower.connection.script = [
        Stream([f"{T1} one", f"{T2} two", f"{T2} two again"]),  # the server ends the follow stream
        Stream([f"{T2} two", f"{T2} two again", f"{T3} three"], then=lambda: reader.finish(0.0)),
        Stream([f"{T3} three", f"{T4} four"]),  # the final read, without follow
    ]

    reader.start()

    assert follower.drain() == ["one", "two", "two again", "three", "four"]
    first, second, last = follower.connection.calls
    assert first["follow"] and first["tail_lines"] == 5 and "since_time" not in first
    assert second["follow"] and second["since_time"] == "2030-01-01T00:00:02Z"
    assert not last["follow"] and last["since_time"] == "2030-01-01T00:00:03Z"


def test_a_pod_that_came_later_is_read_from_its_first_line() -> None:
    follower = Follower()
    reader = reader_for(follower, initial=False)
    follower.connection.script = [Stream([f"{T1} one"], then=lambda: reader.finish(0.0)), Stream([])]

    reader.start()

    assert follower.drain() == ["one"]
    assert "tail_lines" not in follower.connection.calls[0]


def test_a_log_not_ready_yet_is_retried() -> None:
    follower = Follower()
    reader = reader_for(follower)
    follower.connection.script = [ClusterApiError(400, "BadRequest", "container is waiting to start"),
                            Stream([f"{T1} one"], then=lambda: reader.finish(0.0)), Stream([])]

    reader.start()

    assert follower.drain() == ["one"]
    assert len(follower.connection.calls) == 3


def test_a_gone_pod_ends_its_reader_quietly() -> None:
    follower = Follower()
    follower.connection.script = [ClusterApiError(404, "NotFound", "pods \"j-worker-0\" not found")]

    reader_for(follower).start()

    assert follower.drain() == [] and follower.errors == []


def test_stop_closes_a_blocked_follow_stream_and_reads_nothing_more() -> None:
    follower = Follower()
    reader = reader_for(follower)
    blocked = Stream([f"{T1} one"], block=True)
    follower.connection.script = [blocked]
    reader.start()
    assert follower.out.get(timeout=10).text == "one"

    reader.stop()

    assert follower.drain() == []
    assert blocked.closed.is_set() and len(follower.connection.calls) == 1


def test_finish_closes_the_follow_stream_after_the_drain_and_reads_the_rest() -> None:
    follower = Follower()
    reader = reader_for(follower)
    blocked = Stream([f"{T1} one"], block=True)
    follower.connection.script = [blocked, Stream([f"{T1} one", f"{T2} exited with code 0"])]
    reader.start()
    assert follower.out.get(timeout=10).text == "one"

    reader.finish(0.0)

    assert follower.drain() == ["exited with code 0"]
    assert blocked.closed.is_set() and not follower.connection.calls[1]["follow"]
