"""What a hostile `/progress` answer costs one read: peak memory and time of the operator's bounded read
against an unbounded read of the same answer, measured in the same run (`python -m bench.progress_hostile`).

A local server on the loopback address plays the pod: a 50 MB answer with its length, an endless stream
without one, and a byte every 0.5 s. Each read runs in a fresh Python process (the client the operator
uses, `kube.Kube.request`), which reports its peak RSS growth and the read's wall time, so the numbers
are not skewed by what earlier reads left in the allocator. The unbounded read of the endless stream and
of the trickle is stopped by a 10 s read budget of its own (it would never end); the bounded one stops
at the operator's 4 096 bytes and 5 s. The real-node test (tests/real/test_hostile_progress.py) checks
the same through the API server's pod proxy; this isolates the read itself.
"""

from __future__ import annotations

import http.server
import json
import subprocess
import sys
import threading
import time
from typing import Any

ANSWERS = ("length-50MB", "endless", "trickle")
CHILD = r"""
import json, resource, sys, time
from kube import ApiError, Kube
url, bounded = sys.argv[1], sys.argv[2] == "bounded"
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started = time.monotonic()
outcome = "read"
with Kube.for_host(url) as kube:
    try:
        if bounded:
            kube.request("GET", "/progress", max_bytes=4096, deadline=5.0, timeout=5.0)
        else:
            kube.request("GET", "/progress", deadline=10.0, timeout=10.0)
    except ApiError as error:
        outcome = error.reason
took = time.monotonic() - started
grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(json.dumps({"outcome": outcome, "seconds": round(took, 2), "rss_growth_mb": round(grew / 1024, 1)}))
"""


class Pod(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        what = self.path.strip("/").split("/")[0]
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        try:
            if what == "length-50MB":
                self.send_header("Content-Length", str(50 * 2**20))
                self.end_headers()
                for _ in range(50):
                    self.wfile.write(b"0" * 2**20)
                return
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            piece, pause = (b"1" * 2**20, 0.02) if what == "endless" else (b" ", 0.5)  # 50 MB/s, 2 B/s
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.flush()
                time.sleep(pause)
        except OSError:
            pass  # the reader hung up


def read(url: str, mode: str) -> dict[str, Any]:
    output = subprocess.run([sys.executable, "-c", CHILD, url, mode], capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(output.stdout)
    return result


def main() -> int:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Pod)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    print(f"{'answer':<12} {'read':<10} {'outcome':<18} {'seconds':>8} {'RSS growth MB':>14}")
    results = {}
    for answer in ANSWERS:
        for mode in ("unbounded", "bounded"):
            result = read(f"{base}/{answer}", mode)
            results[(answer, mode)] = result
            print(f"{answer:<12} {mode:<10} {result['outcome']:<18} {result['seconds']:>8} "
                  f"{result['rss_growth_mb']:>14}")
    for answer in ANSWERS:
        plain, bounded = results[(answer, "unbounded")], results[(answer, "bounded")]
        print(f"{answer}: memory {plain['rss_growth_mb']} -> {bounded['rss_growth_mb']} MB, "
              f"time {plain['seconds']} -> {bounded['seconds']} s")
    server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
