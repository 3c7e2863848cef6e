"""Unit tests of streamed text from the API (`Kube.stream_text`, `Kube.pod_log`, `TextStream`).

The request handed to the generic `ApiClient.call_api` is checked with a mock (path, query,
timeouts, the pool it uses); the line splitting on fake responses; and `close()` from another
thread against a tiny local HTTP server that holds a log stream open, as a follow does.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
import urllib3
from pytest_mock import MockerFixture

from kube import ApiError, Kube
from kube import client as kube
from kube.client import CONNECT_TIMEOUT, TextStream
from tests.support.held_open import held_open_server


class FakeResponse:
    """Enough of urllib3.HTTPResponse for TextStream."""

    def __init__(self, chunks: list[bytes], status: int = 200, error: Exception | None = None) -> None:
        self.status = status
        self.chunks = chunks
        self.error = error
        self.closed = False
        self.released = False

    def stream(self, amt: int | None = None, decode_content: bool | None = None) -> Iterator[bytes]:
        yield from self.chunks
        if self.error is not None:
            raise self.error

    def close(self) -> None:
        self.closed = True

    def release_conn(self) -> None:
        self.released = True


@pytest.fixture
def client() -> Iterator[Kube]:
    k = Kube.for_host("http://127.0.0.1:9")
    yield k
    k.close()


def test_pod_log_asks_for_the_log_subresource_with_the_options_given(client: Kube, mocker: MockerFixture) -> None:
    call = mocker.patch.object(client._watch_api, "call_api", return_value=FakeResponse([]))

    client.pod_log("ns", "p", container="tensorflow", follow=True, timestamps=True, tail_lines=10, since_seconds=60,
                   read_timeout=None)

    args, kwargs = call.call_args
    assert args == ("/api/v1/namespaces/ns/pods/p/log", "GET")
    assert sorted(kwargs["query_params"]) == [("container", "tensorflow"), ("follow", "true"), ("sinceSeconds", "60"),
                                              ("tailLines", "10"), ("timestamps", "true")]
    assert kwargs["_preload_content"] is False
    assert kwargs["_request_timeout"] == (CONNECT_TIMEOUT, None)


def test_pod_log_leaves_out_the_options_not_given(client: Kube, mocker: MockerFixture) -> None:
    call = mocker.patch.object(client._watch_api, "call_api", return_value=FakeResponse([]))

    client.pod_log("ns", "p")

    assert call.call_args.kwargs["query_params"] == []


def test_a_log_is_read_line_by_line_across_chunks() -> None:
    stream = TextStream(FakeResponse([b"first li", b"ne\nsecond\n", b"\nlast without newline"]))

    assert list(stream) == ["first line", "second", "", "last without newline"]


def test_bytes_that_are_not_utf8_are_replaced() -> None:
    assert list(TextStream(FakeResponse([b"caf\xe9\n"]))) == ["caf\ufffd"]


def test_a_refused_log_request_raises_api_error_at_once(client: Kube, mocker: MockerFixture) -> None:
    refused = kube.ApiException(status=400, reason="Bad Request")
    refused.body = b'{"kind":"Status","code":400,"reason":"BadRequest","message":"container is waiting to start"}'
    refused.headers = None
    mocker.patch.object(client._watch_api, "call_api", side_effect=refused)

    with pytest.raises(ApiError) as info:
        client.pod_log("ns", "p")

    assert info.value.status == 400 and "waiting to start" in info.value.message


def test_a_broken_stream_raises_a_transient_api_error() -> None:
    stream = TextStream(FakeResponse([b"one\n"], error=urllib3.exceptions.ProtocolError("reset")))

    assert next(stream) == "one"
    with pytest.raises(ApiError) as info:
        next(stream)
    assert info.value.status == 0 and info.value.transient


def test_the_stream_releases_its_connection_when_read_to_the_end() -> None:
    response = FakeResponse([b"a\n"])

    assert list(TextStream(response)) == ["a"]
    assert response.closed and response.released


def test_qps_throttles_log_requests(mocker: MockerFixture) -> None:
    k = Kube.for_host("http://127.0.0.1:9", qps=5)
    acquire = mocker.patch.object(k._limiter, "acquire", return_value=0.0)
    mocker.patch.object(k._watch_api, "call_api", return_value=FakeResponse([]))

    k.pod_log("ns", "p")

    acquire.assert_called_once()
    k.close()


def test_kube_close_closes_open_log_streams(mocker: MockerFixture) -> None:
    k = Kube.for_host("http://127.0.0.1:9")
    response = FakeResponse([])
    mocker.patch.object(k._watch_api, "call_api", return_value=response)
    stream = k.pod_log("ns", "p", follow=True)

    k.close()

    assert stream.closed and response.released


@pytest.fixture
def follow_server() -> Iterator[str]:
    with held_open_server("text/plain", b"epoch 1\n") as url:
        yield url


def test_close_from_another_thread_ends_a_followed_log(follow_server: str, eventually: Any) -> None:
    k = Kube.for_host(follow_server)
    stream = k.pod_log("ns", "p", follow=True, read_timeout=None)
    seen: list[str] = []
    ended = threading.Event()

    def read() -> None:
        seen.extend(stream)
        ended.set()

    reader = threading.Thread(target=read)
    reader.start()
    assert eventually(lambda: seen == ["epoch 1"]), "the first line never arrived"

    stream.close()

    assert ended.wait(5), "close() did not unblock the reader"
    reader.join(5)
    assert seen == ["epoch 1"]
    k.close()
