"""A fault-injecting HTTPS proxy in front of the API server, for the chaos tests.

The operator is given a kubeconfig that points at the proxy (bearer token, the proxy's own CA); the
proxy terminates TLS on 127.0.0.1 only, so it can answer for the API server, and forwards everything
else to the real API server over TLS (verified with the cluster's CA), streaming watch responses.

While `faults` are set, each request (watches included) draws one fate from the proxy's seeded
random source: answered after a delay; refused with `429 Too Many Requests` and a `Retry-After`
(header and `details.retryAfterSeconds`, as the API server's priority and fairness does); failed
with `500`; dropped (the connection closed before forwarding); or lost (forwarded, so it takes
effect, but the connection is closed before the answer: the nastiest case for a create). `cut()`
closes every open watch stream; `throttle_watches(n, seconds)` refuses the next n watch requests
with 429 (so a test can count on a throttled watch). `faults = None` turns the random faults off.

Every request is logged as an `Exchange` (arrival and answer times, its identity `key`, fate and
status) so tests can check how the client behaved, e.g. that no request followed a 429 sooner than
its Retry-After. Nothing here sleeps for synchronisation; delays are the injected faults.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import random
import socket
import ssl
import subprocess
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
                        "transfer-encoding", "upgrade", "content-length", "host", "date", "server"})
CHUNK = 65536


@dataclass(frozen=True)
class Faults:
    """Probabilities of each fate per request (the rest pass untouched) and their parameters."""

    delay: float = 0.0
    max_delay: float = 1.0
    throttle: float = 0.0
    retry_after: tuple[int, int] = (1, 3)
    error: float = 0.0
    drop: float = 0.0
    lose: float = 0.0
    first: tuple[str, ...] = ()  # fates given, in order, to the first requests (so each surely happens)


@dataclass
class Exchange:
    """One request through the proxy."""

    at: float  # monotonic arrival
    method: str
    path: str
    query: str
    key: str  # what identifies a retry of the same request
    watch: bool
    fate: str = ""  # "", delay, throttle, error, drop, lose
    status: int = 0  # 0: no answer
    retry_after: int | None = None
    answered_at: float | None = None


def request_key(method: str, path: str, query: dict[str, list[str]], body: bytes) -> str:
    """Method, path, selectors, watch flag, and for a create the new object's name."""
    name = ""
    if method == "POST" and body:
        try:
            meta = json.loads(body).get("metadata") or {}
            name = meta.get("name") or meta.get("generateName") or ""
        except (ValueError, AttributeError):
            name = ""
    selectors = ",".join(f"{k}={v[0]}" for k, v in sorted(query.items()) if k in ("labelSelector", "fieldSelector"))
    watch = " watch" if query.get("watch", [""])[0] in ("true", "1") else ""
    return f"{method} {path} {name} {selectors}{watch}".strip()


def make_certificate(folder: Path) -> tuple[Path, Path, Path]:
    """A CA and a serving certificate for 127.0.0.1 signed by it (openssl CLI); (ca, cert, key)."""
    folder.mkdir(parents=True, exist_ok=True)
    ca, ca_key = folder / "proxy-ca.crt", folder / "proxy-ca.key"
    cert, key, csr = folder / "proxy.crt", folder / "proxy.key", folder / "proxy.csr"
    ext = folder / "proxy.ext"
    ext.write_text("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n")
    config = folder / "openssl.cnf"
    config.write_text("[req]\ndistinguished_name = dn\nprompt = no\n[dn]\nCN = unused\n")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    for argv in (
        ["req", "-x509", "-config", str(config), *ec, "-keyout", str(ca_key), "-out", str(ca), "-days", "2",
         "-subj", "/CN=chaos-fault-proxy-ca", "-addext", "basicConstraints=critical,CA:TRUE",
         "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature"],
        ["req", "-new", "-config", str(config), *ec, "-keyout", str(key), "-out", str(csr), "-subj", "/CN=127.0.0.1"],
        ["x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key), "-CAcreateserial", "-days", "2",
         "-sha256", "-extfile", str(ext), "-out", str(cert)],
    ):
        subprocess.run(["openssl", *argv], check=True, capture_output=True, env={"OPENSSL_CONF": str(config)})
    return ca, cert, key


class FaultProxy:
    """`with FaultProxy(upstream_url, upstream_ca, folder, rng) as proxy:` … `proxy.url`, `proxy.ca`."""

    def __init__(self, upstream: str, upstream_ca: Path, folder: Path, rng: random.Random) -> None:
        parts = urlsplit(upstream)
        if parts.hostname != "127.0.0.1":
            raise ValueError("the fault proxy only fronts a local API server")
        self.upstream_host, self.upstream_port = parts.hostname, parts.port or 443
        self.upstream_context = ssl.create_default_context(cafile=str(upstream_ca))
        self.ca, cert, key = make_certificate(folder)
        self.server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.server_context.load_cert_chain(cert, key)
        self.rng = rng
        self.faults: Faults | None = None
        self.lock = threading.Lock()
        self.exchanges: list[Exchange] = []
        self.streams: set[tuple[socket.socket, http.client.HTTPSConnection]] = set()
        self._watch_throttles: list[int] = []
        self._faults_seen: Faults | None = None
        self._first: list[str] = []
        self.stopping = threading.Event()
        self.server = _Server(("127.0.0.1", 0), _handler_for(self))
        self.url = f"https://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, name="fault proxy", daemon=True)

    def __enter__(self) -> FaultProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def stop(self) -> None:
        self.stopping.set()
        self.faults = None
        self.cut()
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(10)

    # ---- faults ---------------------------------------------------------------------------------

    def throttle_watches(self, count: int, retry_after: int) -> None:
        """Answer the next `count` watch requests with 429 and this Retry-After, whatever the faults."""
        with self.lock:
            self._watch_throttles = [retry_after] * count

    def fate(self, watch: bool = False) -> tuple[str, float]:
        """Draw one request's fate and its parameter (seconds of delay or of Retry-After)."""
        with self.lock:
            if watch and self._watch_throttles:
                return "throttle", float(self._watch_throttles.pop())
            faults = self.faults
            if faults is None:
                return "", 0.0
            if faults is not self._faults_seen:
                self._faults_seen, self._first = faults, list(faults.first)
            chances = {"throttle": faults.throttle, "error": faults.error, "drop": faults.drop,
                       "lose": faults.lose, "delay": faults.delay}
            if self._first and not watch:
                forced = self._first.pop(0)
                chances = {fate: 1.0 if fate == forced else 0.0 for fate in chances}
            draw = self.rng.random()
            for fate, chance in chances.items():
                if draw < chance:
                    if fate == "throttle":
                        return fate, float(self.rng.randint(*faults.retry_after))
                    if fate == "delay":
                        return fate, self.rng.uniform(0.05, faults.max_delay)
                    return fate, 0.0
                draw -= chance
        return "", 0.0

    def cut(self) -> int:
        """Close every open watch stream (client and upstream side); how many were open."""
        with self.lock:
            streams = list(self.streams)
            self.streams.clear()
        for client, upstream in streams:
            for sock in (client, upstream.sock):
                if sock is not None:
                    with contextlib.suppress(OSError):
                        sock.shutdown(socket.SHUT_RDWR)
        return len(streams)

    def record(self, exchange: Exchange) -> None:
        with self.lock:
            self.exchanges.append(exchange)

    def log(self) -> list[Exchange]:
        with self.lock:
            return list(self.exchanges)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that goes away mid-request is part of the game


def _handler_for(proxy: FaultProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(_ProxyHandler):
        pass

    Handler.proxy = proxy
    return Handler


class _ProxyHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    proxy: FaultProxy
    upstream: http.client.HTTPSConnection | None = None

    def setup(self) -> None:
        self.request.settimeout(120)
        self.request = self.proxy.server_context.wrap_socket(self.request, server_side=True)
        super().setup()

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            if self.upstream is not None:
                self.upstream.close()

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._serve()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_GET

    # ---- one request -----------------------------------------------------------------------------

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        parts = urlsplit(self.path)
        query = parse_qs(parts.query)
        exchange = Exchange(time.monotonic(), self.command, parts.path, parts.query,
                            request_key(self.command, parts.path, query, body),
                            query.get("watch", [""])[0] in ("true", "1"))
        fate, amount = self.proxy.fate(exchange.watch)
        exchange.fate = fate
        self.proxy.record(exchange)
        if fate == "drop":
            self._hang_up()
        elif fate == "throttle":
            exchange.retry_after = int(amount)
            self._answer(exchange, 429, "TooManyRequests", "the fault proxy throttles you",
                         {"retryAfterSeconds": int(amount)}, {"Retry-After": str(int(amount))})
        elif fate == "error":
            self._answer(exchange, 500, "InternalError", "the fault proxy failed on purpose")
        else:
            if fate == "delay":
                self.proxy.stopping.wait(amount)
            self._forward(exchange, body, lose=fate == "lose")

    def _hang_up(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def _answer(self, exchange: Exchange, code: int, reason: str, message: str,
                details: dict[str, Any] | None = None, headers: dict[str, str] | None = None) -> None:
        status = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
                  "reason": reason, "code": code, **({"details": details} if details else {})}
        data = json.dumps(status).encode()
        self.send_response(code)
        for name, value in {"Content-Type": "application/json", "Content-Length": str(len(data)),
                            **(headers or {})}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()
        exchange.status, exchange.answered_at = code, time.monotonic()

    def _connection(self) -> http.client.HTTPSConnection:
        if self.upstream is None:
            self.upstream = http.client.HTTPSConnection(self.proxy.upstream_host, self.proxy.upstream_port,
                                                        context=self.proxy.upstream_context, timeout=300)
        return self.upstream

    def _forward(self, exchange: Exchange, body: bytes, lose: bool) -> None:
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        try:
            upstream = self._connection()
            upstream.request(self.command, self.path, body=body or None, headers=headers)
            response = upstream.getresponse()
        except (OSError, http.client.HTTPException) as error:
            if self.upstream is not None:
                self.upstream.close()
            self.upstream = None
            self._answer(exchange, 502, "InternalError", f"the fault proxy could not reach the API server: {error}")
            return
        if lose:  # it took effect upstream; the answer never arrives
            if exchange.watch:
                upstream.close()
                self.upstream = None
            else:
                response.read()
            self._hang_up()
            return
        if exchange.watch:
            with self.proxy.lock:
                self.proxy.streams.add((self.connection, upstream))
        try:
            self._relay(exchange, response)
        except OSError:
            self.close_connection = True
            upstream.close()
            self.upstream = None
        finally:
            with self.proxy.lock:
                self.proxy.streams.discard((self.connection, upstream))
        if response.will_close:
            upstream.close()
            self.upstream = None

    def _relay(self, exchange: Exchange, response: http.client.HTTPResponse) -> None:
        self.send_response(response.status)
        for name, value in response.getheaders():
            if name.lower() not in HOP_BY_HOP:
                self.send_header(name, value)
        chunked = response.length is None
        self.send_header("Transfer-Encoding" if chunked else "Content-Length",
                         "chunked" if chunked else str(response.length))
        self.end_headers()
        self.wfile.flush()
        exchange.status, exchange.answered_at = response.status, time.monotonic()
        while True:
            data = response.read1(CHUNK)
            if not data:
                break
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data) if chunked else data)
            self.wfile.flush()
        response.read()  # marks the response complete, so the upstream connection can be reused
        if chunked:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
