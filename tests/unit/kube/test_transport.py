"""Unit tests of the http.client connection pool (`kube/transport.py`) against small local servers.

Each server counts the connections it accepts and can misbehave on purpose: close a kept-alive
connection while it is idle, or after reading a request without answering it. TLS is tested with
certificates made by the devcluster's own PKI code (the openssl CLI).
"""

from __future__ import annotations

import contextlib
import http.client
import http.server
import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devcluster.pki import Pki, make_pki
from kube.transport import ConnectFailed, ConnectionPool, tls_context


class Server:
    """A local HTTP/1.1 server; `behaviour` decides, per request, how it answers."""

    def __init__(self, behaviour: str = "keep-alive", context: ssl.SSLContext | None = None,
                 together: int = 1) -> None:
        self.behaviour = behaviour
        self.connections = 0
        self.closed = 0
        self.changed = threading.Condition()
        self.requests: list[tuple[str, str, bytes]] = []
        self.release = threading.Event()  # "never-answer" requests wait for it
        self.arrived = threading.Barrier(together)  # "together" answers once this many requests are in
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def setup(self) -> None:
                super().setup()
                owner.connections += 1
                self.served = 0

            def handle_one(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                owner.requests.append((self.command, self.path, body))
                self.served += 1
                if owner.behaviour == "drop-second" and self.served == 2:
                    self.close_connection = True  # read the request, never answer: as if the server went away
                    return
                if owner.behaviour == "never-answer":
                    owner.release.wait(30)
                    return
                if owner.behaviour == "together":
                    owner.arrived.wait(30)
                payload = b'{"ok":true}'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
                if owner.behaviour == "close-after-answer":
                    self.close_connection = True  # closed without saying so: the client finds out when idle

            do_GET = do_POST = do_DELETE = handle_one

        class Counting(http.server.ThreadingHTTPServer):
            def shutdown_request(self, request: Any) -> None:
                super().shutdown_request(request)
                with owner.changed:
                    owner.closed += 1
                    owner.changed.notify_all()

        self.server = Counting(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        if context is not None:
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()
        scheme = "https" if context is not None else "http"
        self.url = f"{scheme}://127.0.0.1:{self.server.server_address[1]}"

    def wait_closed(self, count: int) -> None:
        """Until the server has closed `count` connections on its side."""
        with self.changed:
            assert self.changed.wait_for(lambda: self.closed >= count, timeout=10)

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)


@contextlib.contextmanager
def serving(behaviour: str = "keep-alive", context: ssl.SSLContext | None = None,
            together: int = 1) -> Iterator[Server]:
    server = Server(behaviour, context, together)
    try:
        yield server
    finally:
        server.close()


def get(pool: ConnectionPool, target: str = "/api", method: str = "GET", body: bytes | None = None) -> Any:
    return pool.request(method, target, body=body, headers={"Accept": "application/json"}, read_timeout=5.0)


def test_sequential_requests_share_one_kept_alive_connection() -> None:
    with serving() as server:
        pool = ConnectionPool(server.url)
        answers = [get(pool, f"/api/{i}") for i in range(5)]
        pool.close()
    assert [a.status for a in answers] == [200] * 5 and answers[0].body == b'{"ok":true}'
    assert (server.connections, pool.connections_made) == (1, 1)
    assert [path for _, path, _ in server.requests] == [f"/api/{i}" for i in range(5)]


def test_a_connection_the_server_closed_while_idle_is_replaced_even_for_a_post() -> None:
    with serving("close-after-answer") as server:
        pool = ConnectionPool(server.url)
        get(pool)
        server.wait_closed(1)
        answer = get(pool, "/api/v1/namespaces/a/pods", method="POST", body=b'{"kind":"Pod"}')
        pool.close()
    assert answer.status == 200
    assert server.connections == 2
    assert server.requests[-1] == ("POST", "/api/v1/namespaces/a/pods", b'{"kind":"Pod"}')


def test_an_idempotent_request_whose_reused_connection_dies_is_sent_once_more() -> None:
    with serving("drop-second") as server:
        pool = ConnectionPool(server.url)
        get(pool)
        answer = get(pool, "/api/again")
        pool.close()
    assert answer.status == 200
    assert [path for _, path, _ in server.requests] == ["/api", "/api/again", "/api/again"]
    assert server.connections == 2


def test_a_post_whose_reused_connection_dies_is_not_resent() -> None:
    with serving("drop-second") as server:
        pool = ConnectionPool(server.url)
        get(pool)
        with pytest.raises(http.client.RemoteDisconnected):
            get(pool, "/api/v1/namespaces/a/pods", method="POST", body=b"{}")
        pool.close()
    assert [method for method, _, _ in server.requests] == ["GET", "POST"]


def test_at_most_max_idle_connections_are_kept_after_a_burst() -> None:
    with serving("together", together=5) as server:
        pool = ConnectionPool(server.url, max_idle=2)
        threads = [threading.Thread(target=get, args=(pool,)) for _ in range(5)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        idle = len(pool._idle)
        pool.close()
    assert server.connections == 5 and idle == 2


def test_a_refused_connection_raises_connect_failed() -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    pool = ConnectionPool(f"http://127.0.0.1:{port}")
    with pytest.raises(ConnectFailed) as info:
        get(pool)
    assert isinstance(info.value.cause, ConnectionRefusedError)


def test_a_read_timeout_raises_and_the_connection_is_not_reused() -> None:
    with serving("never-answer") as server:
        pool = ConnectionPool(server.url)
        with pytest.raises(TimeoutError):
            pool.request("GET", "/api", body=None, headers={}, read_timeout=0.2)
        assert pool._idle == []
        pool.close()


def test_a_path_prefix_in_the_server_url_is_kept() -> None:
    with serving() as server:
        pool = ConnectionPool(server.url + "/k8s/clusters/c1/")
        get(pool, "/api/v1/pods?limit=1")
        pool.close()
    assert server.requests[0][1] == "/k8s/clusters/c1/api/v1/pods?limit=1"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"), ["127.0.0.1"])


def server_tls(pki: Pki, require_client_cert: bool = True) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki.serving_cert, pki.serving_key)
    if require_client_cert:
        context.load_verify_locations(pki.ca_cert)
        context.verify_mode = ssl.CERT_REQUIRED
    return context


def client_tls(pki: Pki, ca: Path | None = None) -> Any:
    admin = pki.clients["admin"]
    return lambda: tls_context(verify=True, ca_file=str(ca or pki.ca_cert), cert_file=str(admin.cert),
                               key_file=str(admin.key))


def test_tls_verifies_the_server_and_presents_the_client_certificate(pki: Pki) -> None:
    with serving(context=server_tls(pki)) as server:
        pool = ConnectionPool(server.url, context=client_tls(pki))
        assert get(pool).status == 200 and get(pool).status == 200
        pool.close()
    assert server.connections == 1


def test_tls_with_a_server_name_other_than_the_host_verifies_that_name(pki: Pki) -> None:
    with serving(context=server_tls(pki)) as server:
        pool = ConnectionPool(server.url, context=client_tls(pki), server_name="kubernetes.default.svc")
        assert get(pool).status == 200
        pool.close()
        wrong = ConnectionPool(server.url, context=client_tls(pki), server_name="elsewhere.example")
        with pytest.raises(ConnectFailed) as info:
            get(wrong)
    assert isinstance(info.value.cause, ssl.SSLCertVerificationError)


def test_a_server_signed_by_another_ca_is_refused(pki: Pki, tmp_path: Path) -> None:
    other = make_pki(tmp_path / "other", ["127.0.0.1"])
    with serving(context=server_tls(pki, require_client_cert=False)) as server:
        pool = ConnectionPool(server.url, context=client_tls(pki, ca=other.ca_cert))
        with pytest.raises(ConnectFailed) as info:
            get(pool)
    assert isinstance(info.value.cause, ssl.SSLCertVerificationError)


def test_an_unreadable_ca_file_fails_the_request_not_the_pool(tmp_path: Path) -> None:
    broken = tmp_path / "ca.crt"
    broken.write_text("-----BEGIN CERTIFICATE-----\n")
    pool = ConnectionPool("https://127.0.0.1:9", context=lambda: tls_context(
        verify=True, ca_file=str(broken), cert_file=None, key_file=None))
    with pytest.raises(ConnectFailed) as info:
        get(pool)
    assert isinstance(info.value.cause, ssl.SSLError)
