"""`/healthz` and `/readyz` on a small HTTP server thread (docs/design.md §6).

Live = the process serves requests. Ready = the informer caches have synced and, with leader
election, this replica either leads or stands by healthily. Both are plain functions so the probe
logic is tested without HTTP.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def parse_address(address: str) -> tuple[str, int] | None:
    """':8081' → ('0.0.0.0', 8081); '127.0.0.1:0' → ('127.0.0.1', 0); '0' → None (disabled)."""
    if address in ("0", ""):
        return None
    host, _, port = address.rpartition(":")
    return (host or "0.0.0.0", int(port))


class HealthServer:
    def __init__(self, address: tuple[str, int], ready: Callable[[], bool]) -> None:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.startswith("/healthz"):
                    self._answer(200, "ok")
                elif self.path.startswith("/readyz"):
                    ok = outer.ready()
                    self._answer(200 if ok else 503, "ok" if ok else "not ready: caches not synced")
                else:
                    self._answer(404, "not found")

            def _answer(self, code: int, text: str) -> None:
                body = (text + "\n").encode()
                self.send_response(code)
                self.send_header("Content-Type", "text/plain; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:  # probes are not worth a log line each
                return

        self.ready = ready
        self._server = ThreadingHTTPServer(address, Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, name="health", daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
