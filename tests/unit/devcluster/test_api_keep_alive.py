"""Unit tests of the devcluster JSON client's kept connection (`ApiClient(keep_alive=True)`), used by
the long-running pod-logs agent: one connection for many calls, replaced once when the server
closed it while idle. Connections are scripted fakes (the exact sequence of calls is the point)."""

from __future__ import annotations

import http.client
from pathlib import Path
from typing import Any

import pytest
from pytest_mock import MockerFixture

from devcluster.api import ApiClient, ApiError


class Response:
    def __init__(self, status: int, body: str, will_close: bool = False) -> None:
        self.status, self.body, self.will_close = status, body, will_close

    def read(self) -> bytes:
        return self.body.encode()


class Connection:
    """Answers each request with the next scripted response, or raises the next scripted error."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.requests: list[tuple[str, str]] = []
        self.closed = False
        self.sock = None
        self.timeout = 0.0

    def request(self, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None) -> None:
        self.requests.append((method, path))
        if isinstance(self.answers[0], Exception):
            raise self.answers.pop(0)

    def getresponse(self) -> Response:
        return self.answers.pop(0)

    def close(self) -> None:
        self.closed = True


def client(keep_alive: bool) -> ApiClient:
    return ApiClient("https://127.0.0.1:6443", Path("ca"), Path("crt"), Path("key"), keep_alive=keep_alive)


def test_a_kept_connection_serves_every_request(mocker: MockerFixture) -> None:
    connection = Connection(Response(200, '{"a": 1}'), Response(201, '{"b": 2}'))
    connect = mocker.patch.object(ApiClient, "_connect", return_value=connection)
    api = client(keep_alive=True)

    assert api.get("/x") == {"a": 1}
    assert api.post("/y", {}) == {"b": 2}

    assert connect.call_count == 1 and connection.requests == [("GET", "/x"), ("POST", "/y")]
    assert not connection.closed


def test_a_kept_connection_closed_by_the_server_is_replaced_once(mocker: MockerFixture) -> None:
    stale = Connection(Response(200, "{}"), http.client.RemoteDisconnected("closed"))
    fresh = Connection(Response(200, '{"ok": true}'))
    mocker.patch.object(ApiClient, "_connect", side_effect=[stale, fresh])
    api = client(keep_alive=True)
    api.get("/first")

    assert api.get("/second") == {"ok": True}
    assert stale.closed and fresh.requests == [("GET", "/second")]


def test_a_fresh_connection_that_fails_is_not_retried(mocker: MockerFixture) -> None:
    mocker.patch.object(ApiClient, "_connect", return_value=Connection(ConnectionRefusedError("refused")))

    with pytest.raises(ConnectionRefusedError):
        client(keep_alive=True).get("/x")


def test_an_error_answer_is_raised_and_the_connection_kept(mocker: MockerFixture) -> None:
    connection = Connection(Response(404, '{"message": "not found"}'), Response(200, "{}"))
    connect = mocker.patch.object(ApiClient, "_connect", return_value=connection)
    api = client(keep_alive=True)

    with pytest.raises(ApiError, match="404: not found"):
        api.get("/missing")
    api.get("/there")

    assert connect.call_count == 1


def test_without_keep_alive_each_request_has_its_own_connection(mocker: MockerFixture) -> None:
    first, second = Connection(Response(200, "{}")), Connection(Response(200, "{}"))
    mocker.patch.object(ApiClient, "_connect", side_effect=[first, second])
    api = client(keep_alive=False)

    api.get("/a")
    api.get("/b")

    assert first.closed and second.closed
