"""A tiny JSON-over-HTTPS client for the devcluster's own API calls (health, nodes, leases).

The project lets exactly one module (kube/client.py) import the `kubernetes` package, so
the devcluster talks to the API server with the standard library. It needs only a handful of
calls, all of them simple: GET/POST/PATCH/DELETE a path with a JSON body, authenticated by the
admin client certificate. Proxies from the environment are ignored: the cluster is local.
"""

from __future__ import annotations

import http.client
import json
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .state import ClusterState, Layout


class ApiError(RuntimeError):
    """A non-2xx answer; status and the decoded body are kept for callers that care."""

    def __init__(self, method: str, path: str, status: int, body: Any) -> None:
        message = body.get("message") if isinstance(body, dict) else body
        super().__init__(f"{method} {path} -> {status}: {message}")
        self.status = status
        self.body = body


@dataclass
class ApiClient:
    """Calls the API server at url, trusting ca_cert and presenting the given client cert.

    Each request opens its own connection, unless `keep_alive`: then one connection is kept and
    reused (a long-lived caller making many calls, such as the pod-logs agent, saves a TLS
    handshake per call); a kept connection the server has closed meanwhile is replaced once.
    """

    url: str
    ca_cert: Path
    client_cert: Path
    client_key: Path
    keep_alive: bool = False
    _ssl: ssl.SSLContext | None = field(default=None, init=False, repr=False, compare=False)
    _kept: http.client.HTTPSConnection | None = field(default=None, init=False, repr=False, compare=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False, compare=False)

    def _context(self) -> ssl.SSLContext:
        if self._ssl is None:
            context = ssl.create_default_context(cafile=str(self.ca_cert))
            context.load_cert_chain(str(self.client_cert), str(self.client_key))
            self._ssl = context
        return self._ssl

    def _connect(self, timeout: float) -> http.client.HTTPSConnection:
        parts = urlsplit(self.url)
        return http.client.HTTPSConnection(parts.hostname or "127.0.0.1", parts.port, context=self._context(),
                                           timeout=timeout)

    def _exchange(self, connection: http.client.HTTPSConnection, method: str, path: str, data: bytes | None,
                  headers: dict[str, str]) -> tuple[int, str, bool]:
        connection.request(method, path, body=data, headers=headers)
        response = connection.getresponse()
        raw = response.read().decode(errors="replace")
        return response.status, raw, response.will_close

    def request(self, method: str, path: str, body: Any = None, *,
                content_type: str = "application/json", timeout: float = 10.0) -> Any:
        """Send one request; return the decoded JSON (or text) body; raise ApiError unless 2xx."""
        data = None if body is None else json.dumps(body).encode()
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = content_type
        if not self.keep_alive:
            connection = self._connect(timeout)
            try:
                status, raw, _ = self._exchange(connection, method, path, data, headers)
            finally:
                connection.close()
        else:
            with self._lock:
                reused = self._kept is not None
                connection = self._kept or self._connect(timeout)
                connection.timeout = timeout
                if connection.sock is not None:
                    connection.sock.settimeout(timeout)
                try:
                    status, raw, closing = self._exchange(connection, method, path, data, headers)
                except (http.client.RemoteDisconnected, http.client.CannotSendRequest, ConnectionError):
                    connection.close()
                    self._kept = None
                    if not reused:
                        raise
                    connection = self._connect(timeout)  # the server closed the idle connection: once more
                    status, raw, closing = self._exchange(connection, method, path, data, headers)
                except BaseException:
                    connection.close()
                    self._kept = None
                    raise
                self._kept = None if closing else connection
                if closing:
                    connection.close()
        try:
            decoded: Any = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            decoded = raw
        if not 200 <= status < 300:
            raise ApiError(method, path, status, decoded)
        return decoded

    def stream(self, path: str, *, timeout: float = 330.0) -> Iterator[dict[str, Any]]:
        """GET a watch path and yield its events (one JSON object per line) until the server ends
        the response; raise ApiError unless 2xx, OSError (or ValueError) when the stream breaks."""
        connection = self._connect(timeout)
        try:
            connection.request("GET", path, headers={"Accept": "application/json"})
            response = connection.getresponse()
            if not 200 <= response.status < 300:
                raw = response.read().decode(errors="replace")
                try:
                    body: Any = json.loads(raw)
                except json.JSONDecodeError:
                    body = raw
                raise ApiError("GET", path, response.status, body)
            while True:
                line = response.readline()
                if not line:
                    return
                if line.strip():
                    yield json.loads(line)
        except http.client.HTTPException as error:
            raise OSError(f"GET {path}: {error!r}") from error
        finally:
            connection.close()

    def get(self, path: str, **kwargs: Any) -> Any:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, body: Any, **kwargs: Any) -> Any:
        return self.request("POST", path, body, **kwargs)

    def merge_patch(self, path: str, body: Any, **kwargs: Any) -> Any:
        return self.request("PATCH", path, body, content_type="application/merge-patch+json", **kwargs)

    def delete(self, path: str, **kwargs: Any) -> Any:
        return self.request("DELETE", path, **kwargs)

    def healthy(self, path: str = "/readyz") -> bool:
        """True when path answers 200 (any error, refused connection included, is False)."""
        try:
            self.get(path, timeout=5.0)
        except (OSError, ApiError, http.client.HTTPException):
            return False
        return True


def admin_client(layout: Layout, state: ClusterState) -> ApiClient:
    """A client of a cluster folder's API server, authenticated as its admin (system:masters)."""
    pki = layout.pki
    return ApiClient(f"https://127.0.0.1:{state.ports['kube-apiserver']}", pki / "ca.crt", pki / "admin.crt",
                     pki / "admin.key")


def probe_https(url: str, timeout: float = 5.0) -> bool:
    """True when an HTTPS health endpoint (self-signed, e.g. the scheduler's /healthz) answers 200."""
    parts = urlsplit(url)
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    connection = http.client.HTTPSConnection(parts.hostname or "127.0.0.1", parts.port,
                                             context=context, timeout=timeout)
    try:
        connection.request("GET", parts.path or "/")
        return connection.getresponse().status == 200
    except (OSError, http.client.HTTPException):
        return False
    finally:
        connection.close()


def etcd_call(client_url: str, path: str, body: dict[str, Any] | None = None, timeout: float = 10.0) -> Any:
    """POST (or GET when body is None) to etcd's JSON gateway, e.g. /v3/kv/range or /health."""
    parts = urlsplit(client_url)
    connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=timeout)
    try:
        if body is None:
            connection.request("GET", path)
        else:
            connection.request("POST", path, body=json.dumps(body).encode(),
                               headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        raw = response.read().decode(errors="replace")
    finally:
        connection.close()
    if response.status != 200:
        raise RuntimeError(f"etcd {path} -> {response.status}: {raw}")
    return json.loads(raw)
