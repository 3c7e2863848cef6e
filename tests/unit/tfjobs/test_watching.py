"""Unit tests of the client's list+watch mirror (`tfjobs.watching`): events after the list, a watch
resumed from the last resourceVersion when the server ends it, a relist after 410 Gone, and stop ending
a watch that waits for events. Against a server: tests/integration/controller/test_user_tools.py."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import Any

from tests.support.polling import wait_for
from tfjobs.errors import ClusterApiError
from tfjobs.kinds import TENSORFLOWJOB, TFJOB
from tfjobs.watching import JobWatch


def job(name: str, version: str, state: str = "") -> dict[str, Any]:
    return {"metadata": {"name": name, "resourceVersion": version}, "status": {"state": state} if state else {}}


class Watch:
    """One scripted watch: its events, then either the end of the response or (open) a wait for close()."""

    def __init__(self, events: list[Any], *, stays_open: bool = False) -> None:
        self.scripted = events
        self.stays_open = stays_open
        self.closed = threading.Event()

    def events(self) -> Iterator[dict[str, Any]]:
        for event in self.scripted:
            if isinstance(event, Exception):
                raise event
            yield event
        if self.stays_open:
            self.closed.wait(10)

    def close(self) -> None:
        self.closed.set()


class Connection:
    """Answers the job collection's lists and watches from scripts, and records the versions asked for."""

    def __init__(self, lists: list[dict[str, Any]], watches: list[Watch]) -> None:
        self.lists = lists
        self.watches = watches
        self.asked: queue.Queue[tuple[str, str]] = queue.Queue()

    def list(self, path: str, **query: Any) -> dict[str, Any]:
        self.asked.put(("list", path))
        return self.lists.pop(0)

    def watch(self, path: str, *, resource_version: str, timeout_seconds: int, **query: Any) -> Watch:
        self.asked.put(("watch", resource_version))
        if not self.watches:
            return Watch([], stays_open=True)
        return self.watches.pop(0)


def listed(*jobs: dict[str, Any], version: str) -> dict[str, Any]:
    return {"items": list(jobs), "metadata": {"resourceVersion": version}}


def test_the_watch_starts_at_the_lists_version_and_its_events_update_the_job() -> None:
    connection = Connection([listed(job("mnist", "5"), version="7")],
                            [Watch([{"type": "MODIFIED", "object": job("mnist", "9", "Running")}], stays_open=True)])

    with JobWatch(connection, "ns", "mnist", pods=False, kind=TENSORFLOWJOB).start() as watch:
        assert watch.wait(lambda: (watch.job() or {}).get("status", {}).get("state") == "Running", 10)

    assert connection.asked.get_nowait() == ("list", "/apis/kubeflow.org/v1/namespaces/ns/tensorflowjobs")
    assert connection.asked.get_nowait() == ("watch", "7")


def test_a_watch_the_server_ends_is_resumed_from_the_last_version_seen() -> None:
    bookmark = {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "12"}}}
    connection = Connection([listed(job("mnist", "5"), version="7")],
                            [Watch([{"type": "MODIFIED", "object": job("mnist", "9")}, bookmark])])

    with JobWatch(connection, "ns", "mnist", pods=False, kind=TENSORFLOWJOB).start():
        asked = [connection.asked.get(timeout=10) for _ in range(3)]

    assert asked[1:] == [("watch", "7"), ("watch", "12")]


def test_a_watch_too_old_for_the_server_lists_again_and_a_job_gone_meanwhile_is_deleted() -> None:
    gone = ClusterApiError(410, "Expired", "too old resource version")
    connection = Connection([listed(job("mnist", "5"), version="7"), listed(version="20")], [Watch([gone])])

    with JobWatch(connection, "ns", "mnist", pods=False, kind=TENSORFLOWJOB).start() as watch:
        wait_for(lambda: watch.job() is None, 10, "the relist to drop the job")

    asked = [connection.asked.get(timeout=10) for _ in range(4)]
    assert [kind for kind, _ in asked] == ["list", "watch", "list", "watch"] and asked[3] == ("watch", "20")


def test_stop_ends_a_watch_that_waits_for_events() -> None:
    waiting = Watch([], stays_open=True)
    connection = Connection([listed(job("mnist", "5"), version="7")], [waiting])
    watch = JobWatch(connection, "ns", "mnist", pods=False, kind=TENSORFLOWJOB).start()
    assert connection.asked.get(timeout=10)[0] == "list" and connection.asked.get(timeout=10)[0] == "watch"

    watch.stop()

    assert waiting.closed.is_set()


def test_a_tfjob_is_watched_at_its_kinds_path_and_read_as_the_job_model() -> None:
    tfjob = {"kind": "TFJob", "metadata": {"name": "mnist", "resourceVersion": "5"},
             "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 2}}},
             "status": {"conditions": [{"type": "Running", "status": "True"}]}}
    connection = Connection([listed(tfjob, version="7")], [])

    with JobWatch(connection, "ns", "mnist", pods=False, kind=TFJOB).start() as watch:
        model = watch.model()

    assert connection.asked.get_nowait() == ("list", "/apis/kubeflow.org/v1/namespaces/ns/tfjobs")
    assert model is not None and model["spec"]["worker"]["replicas"] == 2 and model["status"]["state"] == "Running"
