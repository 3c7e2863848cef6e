"""Answers from outside the control plane are read to a size limit and an overall deadline: a local
server plays a hostile pod (an endless body with or without a length, bytes that trickle in), and the
pool and the client give up at the limit, holding no more than it, and at the deadline, however
often a byte arrives."""

from __future__ import annotations

import contextlib
import http.server
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from kube import ApiError, Kube
from kube.transport import AnswerTooLarge, ConnectionPool, DeadlineExceeded

LIMIT = 4096


class Hostile:
    """A local HTTP/1.1 server answering every GET as `behaviour` says; counts the bytes it sent."""

    def __init__(self, behaviour: str) -> None:
        self.behaviour = behaviour
        self.sent = 0
        self.stop = threading.Event()
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                with contextlib.suppress(OSError):
                    owner.answer(self)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def answer(self, handler: http.server.BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        if self.behaviour == "small":
            body = b'{"step": 5}'
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            handler.wfile.write(body)
            return
        if self.behaviour == "huge":  # says how much is coming: 500 MB
            handler.send_header("Content-Length", str(500 * 2**20))
        elif self.behaviour in ("endless", "trickle"):
            handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        piece = b"1" * (65536 if self.behaviour != "trickle" else 1)
        while not self.stop.is_set():
            if self.behaviour in ("endless", "trickle"):
                handler.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            else:
                handler.wfile.write(piece)
            handler.wfile.flush()
            self.sent += len(piece)
            if self.behaviour == "trickle":
                time.sleep(0.1)

    def close(self) -> None:
        self.stop.set()
        self.server.shutdown()
        self.server.server_close()


@contextlib.contextmanager
def hostile(behaviour: str) -> Iterator[Hostile]:
    server = Hostile(behaviour)
    try:
        yield server
    finally:
        server.close()


def bounded_get(pool: ConnectionPool, deadline: float = 5.0) -> bytes:
    return pool.request("GET", "/progress", body=None, headers={}, read_timeout=30.0, max_body=LIMIT,
                        deadline=deadline).body


def test_a_small_answer_is_read_whole_within_the_bounds() -> None:
    with hostile("small") as server:
        pool = ConnectionPool(server.url)
        assert bounded_get(pool) == b'{"step": 5}'
        assert len(pool._idle) == 1  # kept alive as any other answer
        pool.close()


def test_an_answer_announcing_more_than_the_limit_is_refused_before_its_body_is_read() -> None:
    with hostile("huge") as server:
        pool = ConnectionPool(server.url)
        with pytest.raises(AnswerTooLarge, match="larger than 4096 bytes"):
            bounded_get(pool)
        assert pool._idle == []  # the rest of the body is never read: the connection goes
        pool.close()


def test_an_endless_answer_without_a_length_is_cut_just_past_the_limit() -> None:
    with hostile("endless") as server:
        pool = ConnectionPool(server.url)
        with pytest.raises(AnswerTooLarge):
            bounded_get(pool)
        assert pool._idle == []
        pool.close()


def test_an_answer_that_trickles_in_ends_at_the_deadline_though_every_wait_is_short() -> None:
    with hostile("trickle") as server:
        pool = ConnectionPool(server.url)
        started = time.monotonic()
        with pytest.raises(DeadlineExceeded, match=r"within 0\.5 s"):
            bounded_get(pool, deadline=0.5)
        took = time.monotonic() - started
        assert server.sent >= 2  # bytes kept coming: no single wait timed out
        assert took < 5  # the read timeout (30 s) never came into it
        pool.close()


def test_the_client_names_a_too_large_answer_and_reads_no_more_than_the_limit() -> None:
    with hostile("endless") as server, Kube.for_host(server.url) as kube:
        with pytest.raises(ApiError) as raised:
            kube.request("GET", "/progress", max_bytes=LIMIT, deadline=5.0)
        assert (raised.value.status, raised.value.reason) == (0, "AnswerTooLarge")
        assert "larger than 4096 bytes" in raised.value.message


def test_the_client_gives_up_on_a_trickling_answer_at_the_deadline() -> None:
    with hostile("trickle") as server, Kube.for_host(server.url) as kube:
        with pytest.raises(ApiError) as raised:
            kube.request("GET", "/progress", max_bytes=LIMIT, deadline=0.5)
        assert (raised.value.status, raised.value.reason) == (0, "ReadTimeoutError")


def test_an_unbounded_request_still_reads_the_whole_answer() -> None:
    with hostile("small") as server, Kube.for_host(server.url) as kube:
        assert kube.request("GET", "/progress") == {"step": 5}


def test_a_connection_that_served_a_bounded_read_serves_the_next_request() -> None:
    with hostile("small") as server:
        pool = ConnectionPool(server.url)
        assert bounded_get(pool) == b'{"step": 5}'
        assert pool.request("GET", "/api", body=None, headers={}, read_timeout=5.0).body == b'{"step": 5}'
        assert bounded_get(pool) == b'{"step": 5}'
        assert pool.connections_made == 1
        pool.close()
