"""Unit tests of the client's connection (`tfjobs.connection`, `tfjobs.errors`): paths, the query it
sends, errors read from the official client's ApiException and from watch events, and streams split
into lines and ended from another thread. Requests against a server: tests/integration."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any
from unittest.mock import MagicMock

import pytest
from kubernetes.client.exceptions import ApiException

from tfjobs.connection import Connection, Events, Lines, api_path
from tfjobs.errors import ClusterApiError


class Response:
    """A streamed urllib3 response: the chunks given, then (unless ended) a read that blocks until shutdown."""

    def __init__(self, chunks: list[bytes], *, ends: bool = True) -> None:
        self.chunks = chunks
        self.ends = ends
        self.shut = threading.Event()
        self.released = False

    def stream(self, amt: Any = None, decode_content: bool = True) -> Iterator[bytes]:
        yield from self.chunks
        if not self.ends:
            self.shut.wait(10)
            raise OSError("connection shut down")

    def shutdown(self) -> None:
        self.shut.set()

    def close(self) -> None:
        pass

    def release_conn(self) -> None:
        self.released = True


def test_paths_of_core_and_group_resources() -> None:
    assert api_path("", "v1", "pods", "ns", "p", "log") == "/api/v1/namespaces/ns/pods/p/log"
    assert api_path("kubeflow.org", "v1", "tfjobs") == "/apis/kubeflow.org/v1/tfjobs"


def test_a_request_sends_camel_case_query_and_raw_json_through_call_api() -> None:
    api_client = MagicMock()
    api_client.call_api.return_value = MagicMock(data=b'{"items": []}', status=200)

    answer = Connection(api_client).list("/api/v1/namespaces/ns/pods", label_selector="a=b", watch=False, limit=None)

    assert answer == {"items": []}
    path, method = api_client.call_api.call_args.args
    options = api_client.call_api.call_args.kwargs
    assert (path, method) == ("/api/v1/namespaces/ns/pods", "GET")
    assert options["query_params"] == [("labelSelector", "a=b"), ("watch", "false")]
    assert options["_preload_content"] is False and options["auth_settings"] == ["BearerToken"]


def test_an_api_exception_becomes_an_api_error_with_the_status_reason_and_message() -> None:
    api_client = MagicMock()
    body = json.dumps({"kind": "Status", "reason": "AlreadyExists", "message": 'tensorflowjobs "m" already exists'})
    api_client.call_api.side_effect = ApiException(status=409, reason="Conflict")
    api_client.call_api.side_effect.body = body

    with pytest.raises(ClusterApiError) as raised:
        Connection(api_client).create("/apis/kubeflow.org/v1/namespaces/ns/tensorflowjobs", {"kind": "TensorFlowJob"})

    assert (raised.value.status, raised.value.reason) == (409, "AlreadyExists")
    assert raised.value.already_exists and not raised.value.conflict
    assert raised.value.message == 'tensorflowjobs "m" already exists'


def test_a_refused_connection_is_an_api_error_with_status_zero() -> None:
    api_client = MagicMock()
    api_client.call_api.side_effect = ConnectionRefusedError("refused")

    with pytest.raises(ClusterApiError) as raised:
        Connection(api_client).get("/api/v1/namespaces/ns/pods/p")

    assert raised.value.status == 0 and raised.value.reason == "ConnectionRefusedError"


def test_a_transport_failure_the_official_client_hides_behind_an_attribute_error_is_status_zero() -> None:
    def call_api(*args: Any, **kwargs: Any) -> Any:
        try:  # what call_api does with its REST client's ApiException(status=0) for a TLS EOF
            raise ApiException(status=0, reason="SSLError: EOF occurred in violation of protocol")
        except ApiException as failure:
            failure.body = failure.body.decode("utf-8")  # type: ignore[union-attr]
    api_client = MagicMock()
    api_client.call_api.side_effect = call_api

    with pytest.raises(ClusterApiError) as raised:
        Connection(api_client).pod_log("ns", "p", follow=True)

    assert raised.value.status == 0 and "EOF occurred" in raised.value.reason


def test_lines_are_split_across_chunks_and_keep_blank_lines() -> None:
    lines = Lines(Response([b"one\ntw", b"o\n\nthree"]))

    assert list(lines) == ["one", "two", "", "three"]


def test_closing_lines_from_another_thread_ends_a_blocked_read_quietly() -> None:
    response = Response([b"first\n"], ends=False)
    lines = Lines(response)
    seen: list[str] = []
    reader = threading.Thread(target=lambda: seen.extend(lines))
    reader.start()

    lines.close()
    reader.join(10)

    assert not reader.is_alive() and seen == ["first"] and response.released


def test_a_broken_stream_raises_an_api_error_with_status_zero() -> None:
    response = Response([b"first\n"], ends=False)
    response.shut.set()  # the read fails at once, and nobody closed the stream

    with pytest.raises(ClusterApiError) as raised:
        list(Lines(response))

    assert raised.value.status == 0


def test_a_watch_error_event_raises_gone_for_a_relist() -> None:
    expired = {"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"}}
    events = Events(Response([b'{"type": "ADDED", "object": {"metadata": {"name": "a"}}}\n',
                              json.dumps(expired).encode() + b"\n"]))
    seen = []

    with pytest.raises(ClusterApiError) as raised:
        for event in events.events():
            seen.append(event["type"])

    assert seen == ["ADDED"] and raised.value.gone
