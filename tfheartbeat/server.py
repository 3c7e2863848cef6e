"""The HTTP form of the heartbeat (`stall: {heartbeat: http, port: ...}`): an endpoint answering 200
while the last beat is at most `timeout` seconds old, and 503 before the first beat or after a stall.

It runs on a daemon thread of the training process. Because it answers from the beat's age, and
not merely from being alive, a training loop that hangs while this thread keeps serving still
fails the liveness probe.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tfheartbeat.heart import Heartbeat


def _handler(heartbeat: Heartbeat, path: str, timeout: float) -> type[BaseHTTPRequestHandler]:
    class Health(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?", 1)[0] != path:
                self._answer(404, "not found\n")
                return
            age = heartbeat.age()
            if age is None:
                self._answer(503, "no heartbeat yet\n")
            elif age > timeout:
                self._answer(503, f"stalled: last heartbeat {age:.0f}s ago (limit {timeout:.0f}s)\n")
            else:
                self._answer(200, f"ok: last heartbeat {age:.0f}s ago\n")

        def _answer(self, code: int, text: str) -> None:
            body = text.encode()
            self.send_response(code)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            """Probes every few seconds would flood the training log."""

    return Health


def serve(heartbeat: Heartbeat, port: int, path: str = "/healthz", timeout: float = 600.0,
          host: str = "") -> ThreadingHTTPServer:
    """Start the endpoint on a daemon thread and return the server (`.shutdown()` stops it;
    `.server_address[1]` is the port when 0 was asked for)."""
    server = ThreadingHTTPServer((host, port), _handler(heartbeat, path, timeout))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="tfheartbeat-http", daemon=True).start()
    return server
