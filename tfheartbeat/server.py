"""The HTTP endpoint of a training process: the heartbeat (`stall: {heartbeat: http, port: ...}`) and
the progress report (`spec.progress`), on one port or two.

The heartbeat path answers 200 while the last beat is at most `timeout` seconds old, and 503 before
the first beat or after a stall. Because it answers from the beat's age, and not merely from being
alive, a training loop that hangs while this thread keeps serving still fails the liveness probe.

`/progress` answers the latest report as JSON (`tfheartbeat.progress`; `{}` before the first), read by
the operator through the API server's pod proxy. Nothing else is served.

It runs on a daemon thread of the training process.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tfheartbeat.heart import Heartbeat
from tfheartbeat.progress import PROGRESS_PATH, ProgressReport


def _handler(heartbeat: Heartbeat | None, path: str, timeout: float,
             progress: ProgressReport | None) -> type[BaseHTTPRequestHandler]:
    class Endpoint(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            requested = self.path.split("?", 1)[0]
            if heartbeat is not None and requested == path:
                self._health(heartbeat)
            elif progress is not None and requested == PROGRESS_PATH:
                self._answer(200, json.dumps(progress.document(), allow_nan=False) + "\n", "application/json")
            else:
                self._answer(404, "not found\n")

        def _health(self, heartbeat: Heartbeat) -> None:
            age = heartbeat.age()
            if age is None:
                self._answer(503, "no heartbeat yet\n")
            elif age > timeout:
                self._answer(503, f"stalled: last heartbeat {age:.0f}s ago (limit {timeout:.0f}s)\n")
            else:
                self._answer(200, f"ok: last heartbeat {age:.0f}s ago\n")

        def _answer(self, code: int, text: str, content_type: str = "text/plain; charset=utf-8") -> None:
            body = text.encode()
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            """Probes every few seconds would flood the training log."""

    return Endpoint


def serve(heartbeat: Heartbeat | None, port: int, path: str = "/healthz", timeout: float = 600.0,
          host: str = "", progress: ProgressReport | None = None) -> ThreadingHTTPServer:
    """Start the endpoint on a daemon thread and return the server (`.shutdown()` stops it;
    `.server_address[1]` is the port when 0 was asked for). It serves the heartbeat at `path` when
    `heartbeat` is given, and `/progress` when `progress` is."""
    server = ThreadingHTTPServer((host, port), _handler(heartbeat, path, timeout, progress))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="tfheartbeat-http", daemon=True).start()
    return server
