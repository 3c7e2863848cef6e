"""Kept-alive HTTP/1.1 connections to the API server, on the standard library's `http.client`.

Ordinary requests (get, list, create, patch, delete) go through this pool; watches and log streams
stay on the `kubernetes` client's urllib3 pool, which streams and is used rarely. The reason is CPU:
measured against the local API server, one create costs about 1.4 ms of CPU through
`ApiClient.call_api` and urllib3 and about 0.7 ms through `http.client` on the same kept-alive TLS
connection. The difference is Python bookkeeping — the generic client walks every body to sanitise
it, urllib3 builds header containers, parses the URL and keys its pools on every call — and the
operator makes thousands of requests in a burst (see bench/RESULTS.md).

What it keeps of urllib3's behaviour, deliberately:

* a LIFO pool: at most `max_idle` idle connections are kept, extra ones are closed after use, so a
  burst of threads never waits for a connection;
* a reused connection is checked before use: an idle socket that is readable has been closed by the
  server (or holds junk), so it is dropped and another one taken. An idempotent request that still
  finds its reused connection closed under it is sent once more on a new connection; a POST or a
  PATCH never is, since the server may have acted on it (the caller's retry decides);
* connect and read timeouts (the read timeout bounds each wait for bytes), TCP_NODELAY (http.client
  sets it), TLS verification with the configured CA, client certificate and server name.

What it adds, for answers that come from outside the control plane (a trainer's `/progress` through
the pod proxy): a limit on the body's size, read a piece at a time so no more than the limit is ever
held, and a deadline on the whole exchange, since the proxy forwards every few hundred milliseconds
and a per-read timeout alone lets a pod that trickles bytes hold a read forever.

It knows nothing of Kubernetes: `kube/client.py` builds it from the client's configuration and turns
its answers and errors into `ApiError`s.
"""

from __future__ import annotations

import http.client
import select
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["AnswerTooLarge", "ConnectFailed", "ConnectionPool", "DeadlineExceeded", "Response", "read_pieces",
           "tls_context"]

IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})
_CLOSED_UNDER_US = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError, ConnectionAbortedError)


class ConnectFailed(OSError):
    """A new connection could not be made (refused, unreachable, timed out, TLS handshake refused).

    Nothing was sent, so any request may be retried. `cause` is the original error."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


class AnswerTooLarge(http.client.HTTPException):
    """The answer's body is longer than the caller allowed; it was not read further."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the answer is larger than {limit} bytes")
        self.limit = limit


class DeadlineExceeded(TimeoutError):
    """The whole exchange took longer than the caller allowed (each wait for bytes may have been short)."""


@dataclass(frozen=True)
class _Limits:
    max_body: int | None
    deadline_at: float | None  # time.monotonic()
    deadline: float | None

    def none(self) -> bool:
        return self.max_body is None and self.deadline_at is None

    def within(self, timeout: float | None) -> float | None:
        """`timeout`, shortened to what is left before the deadline; DeadlineExceeded when nothing is."""
        if self.deadline_at is None:
            return timeout
        left = self.deadline_at - time.monotonic()
        if left <= 0:
            raise DeadlineExceeded(f"no complete answer within {self.deadline:g} s")
        return left if timeout is None else min(timeout, left)


def _read_bounded(answer: http.client.HTTPResponse, sock: socket.socket, read_timeout: float | None,
                  limits: _Limits) -> bytes:
    """The body, a piece at a time: never more than `max_body` + 1 bytes held, and every wait for
    bytes bounded by what is left of the deadline (a trickle of one byte a second cannot hold it)."""
    limit = limits.max_body
    if limit is not None and answer.length is not None and answer.length > limit:
        raise AnswerTooLarge(limit)
    pieces: list[bytes] = []
    size = 0
    while True:
        sock.settimeout(limits.within(read_timeout))
        try:
            piece = answer.read1(65536 if limit is None else limit + 1 - size)
        except TimeoutError:
            limits.within(read_timeout)  # DeadlineExceeded when it was the deadline's wait that ran out
            raise
        if not piece:
            # read1 leaves an answer whose Content-Length is used up open; read() closes it, or the
            # kept-alive connection would refuse its next request (ResponseNotReady)
            answer.read()
            return b"".join(pieces)
        pieces.append(piece)
        size += len(piece)
        if limit is not None and size > limit:
            raise AnswerTooLarge(limit)


def read_pieces(response: Any, max_body: int | None, deadline: float | None, started: float) -> bytes:
    """`_read_bounded` for a response that only offers `read1` (urllib3's, behind an HTTP proxy): a
    piece at a time, the deadline (seconds since `started`, on time.monotonic()) checked between
    pieces, each wait for bytes bounded by the caller's read timeout."""
    pieces: list[bytes] = []
    size = 0
    while True:
        if deadline is not None and time.monotonic() - started > deadline:
            raise DeadlineExceeded(f"no complete answer within {deadline:g} s")
        piece = response.read1(65536 if max_body is None else max_body + 1 - size)
        if not piece:
            return b"".join(pieces)
        pieces.append(piece)
        size += len(piece)
        if max_body is not None and size > max_body:
            raise AnswerTooLarge(max_body)


@dataclass(frozen=True)
class Response:
    status: int
    reason: str
    headers: Mapping[str, str] | http.client.HTTPMessage  # the latter case-insensitive
    body: bytes


def tls_context(*, verify: bool, ca_file: str | None, cert_file: str | None, key_file: str | None,
                check_hostname: bool = True) -> ssl.SSLContext:
    """The TLS settings of a kubeconfig or a service account: CA, client certificate, verification."""
    context = ssl.create_default_context(cafile=ca_file) if verify else ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if not verify or not check_hostname:
        context.check_hostname = False
    if not verify:
        context.verify_mode = ssl.CERT_NONE
    if cert_file:
        context.load_cert_chain(cert_file, key_file)
    return context


class _HTTPConnection(http.client.HTTPConnection):
    def connect(self) -> None:
        try:
            super().connect()
        except OSError as error:
            raise ConnectFailed(error) from error


class _HTTPSConnection(http.client.HTTPSConnection):
    """TLS with an explicit server name (a kubeconfig's `tls-server-name` may differ from the host)."""

    def __init__(self, host: str, port: int | None, *, timeout: float, context: ssl.SSLContext,
                 server_name: str | None) -> None:
        super().__init__(host, port, timeout=timeout, context=context)
        self._tls = context
        self._server_name = server_name or host

    def connect(self) -> None:
        try:
            http.client.HTTPConnection.connect(self)
            self.sock = self._tls.wrap_socket(self.sock, server_hostname=self._server_name)
        except OSError as error:  # ssl.SSLError is an OSError too
            if self.sock is not None:
                self.sock.close()
                self.sock = None
            raise ConnectFailed(error) from error


class ConnectionPool:
    """Thread-safe: each request takes a connection of its own for its duration."""

    def __init__(self, url: str, *, context: Callable[[], ssl.SSLContext] | None = None,
                 server_name: str | None = None, max_idle: int = 32, connect_timeout: float = 10.0) -> None:
        """`context` builds the TLS context for an https URL, once, when the first connection is made
        (so a bad CA or key file fails a request as urllib3 would, not the construction)."""
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port
        self._prefix = parts.path.rstrip("/")  # a server behind a path (https://proxy/k8s/clusters/c1)
        self._make_context = context or ssl.create_default_context
        self._context: ssl.SSLContext | None = None
        self._server_name = server_name
        self._max_idle = max_idle
        self._connect_timeout = connect_timeout
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()
        self._closed = False
        self.connections_made = 0  # for tests and benchmarks: how often a connection was opened

    def request(self, method: str, target: str, *, body: bytes | None, headers: Mapping[str, str],
                read_timeout: float | None, connect_timeout: float | None = None,
                max_body: int | None = None, deadline: float | None = None) -> Response:
        """Send one request (`target`: path and query) and read the whole answer.

        For an answer from outside the control plane (a pod, through the API server's proxy),
        `max_body` bounds its body in bytes (AnswerTooLarge past it, read no further) and `deadline`
        the seconds the whole exchange may take (DeadlineExceeded), however the bytes trickle in.

        Raises ConnectFailed when no connection could be made, and the socket's or http.client's
        own errors (TimeoutError, ConnectionResetError, RemoteDisconnected, ssl.SSLError, ...) when
        the exchange broke; the connection is then closed, never reused."""
        connect_timeout = self._connect_timeout if connect_timeout is None else connect_timeout
        limits = _Limits(max_body, None if deadline is None else time.monotonic() + deadline, deadline)
        connection, reused = self._take()
        try:
            return self._exchange(connection, method, target, body, headers, read_timeout, connect_timeout, limits)
        except _CLOSED_UNDER_US:
            if not (reused and method in IDEMPOTENT):
                raise
        # The server closed a kept-alive connection as we used it: once more, on a new one.
        return self._exchange(self._new(), method, target, body, headers, read_timeout, connect_timeout, limits)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    def _exchange(self, connection: http.client.HTTPConnection, method: str, target: str, body: bytes | None,
                  headers: Mapping[str, str], read_timeout: float | None, connect_timeout: float,
                  limits: _Limits) -> Response:
        try:
            if connection.sock is None:
                connection.timeout = limits.within(connect_timeout)
                connection.connect()
                with self._lock:
                    self.connections_made += 1
            sock = connection.sock  # kept: getresponse() drops it from a connection that will close
            sock.settimeout(limits.within(read_timeout))
            connection.request(method, self._prefix + target, body=body, headers=headers)
            answer = connection.getresponse()
            data = answer.read() if limits.none() else _read_bounded(answer, sock, read_timeout, limits)
        except BaseException:
            connection.close()
            raise
        if answer.will_close:
            connection.close()
        else:
            self._give(connection)
        return Response(answer.status, answer.reason, answer.headers, data)

    def _take(self) -> tuple[http.client.HTTPConnection, bool]:
        while True:
            with self._lock:
                connection = self._idle.pop() if self._idle else None
            if connection is None:
                return self._new(), False
            if not _dropped(connection):
                return connection, True
            connection.close()

    def _tls_context(self) -> ssl.SSLContext:
        with self._lock:
            if self._context is None:
                try:
                    self._context = self._make_context()
                except (OSError, ValueError) as error:  # an unreadable CA, certificate or key file
                    raise ConnectFailed(error) from error
            return self._context

    def _give(self, connection: http.client.HTTPConnection) -> None:
        with self._lock:
            if not self._closed and len(self._idle) < self._max_idle:
                self._idle.append(connection)
                return
        connection.close()

    def _new(self) -> http.client.HTTPConnection:
        if self._https:
            return _HTTPSConnection(self._host, self._port, timeout=self._connect_timeout,
                                    context=self._tls_context(), server_name=self._server_name)
        return _HTTPConnection(self._host, self._port, timeout=self._connect_timeout)


def _dropped(connection: http.client.HTTPConnection) -> bool:
    """Whether an idle connection's socket was closed by the server: readable while no answer is due."""
    sock = connection.sock
    if sock is None:
        return True
    if isinstance(sock, ssl.SSLSocket) and sock.pending():
        return True  # bytes nobody asked for
    poller = select.poll()
    try:
        poller.register(sock, select.POLLIN | select.POLLPRI)
        return bool(poller.poll(0))
    except (OSError, ValueError):
        return True
