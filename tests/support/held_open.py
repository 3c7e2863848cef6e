"""A local HTTP server that sends one chunk of a chunked response and then holds the connection
open, as a watch or a followed log does: for testing that `close()` from another thread ends a
blocked read."""

from __future__ import annotations

import contextlib
import http.server
import threading
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def held_open_server(content_type: str, first_chunk: bytes) -> Iterator[str]:
    """Serve `first_chunk` on every GET and hold the response open until the block ends; yields the URL."""
    release = threading.Event()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(first_chunk), first_chunk))
            self.wfile.flush()
            release.wait(30)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        release.set()
        server.shutdown()
        server.server_close()
        thread.join(10)
