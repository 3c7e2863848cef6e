"""The test operator (tests/support/operator.py) takes its ports when it starts, not once for its life:
a restart whose old port another process now holds comes up on new ones, and a start that loses a port
between the pick and the bind is retried. It also says when it last started (`started_at`), which
fixtures compare with what the operator must have seen at its start.

The operator here is a stand-in with the real one's flags and endpoints (`--metrics-addr`,
`--health-addr`, /readyz), so these run without a cluster.
"""

from __future__ import annotations

import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from devcluster import ports
from tests.support import operator as test_operator
from tests.support.operator import Operator

STAND_IN = '''
import argparse, http.server, threading
parser = argparse.ArgumentParser()
parser.add_argument("verb"); parser.add_argument("--kubeconfig"); parser.add_argument("--metrics-addr")
parser.add_argument("--health-addr")
arguments, _ = parser.parse_known_args()

class Answer(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"ok")

def serve(address):
    host, port = address.rsplit(":", 1)
    return http.server.HTTPServer((host, int(port)), Answer)  # raises "Address already in use" when taken

servers = [serve(arguments.metrics_addr), serve(arguments.health_addr)]
threading.Thread(target=servers[0].serve_forever, daemon=True).start()
servers[1].serve_forever()
'''


@pytest.fixture
def operator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Operator]:
    monkeypatch.setenv("TFJOB_PORT_RESERVATIONS", str(tmp_path / "reservations"))
    monkeypatch.setattr(test_operator, "LOG_DIR", tmp_path)
    script = tmp_path / "stand_in.py"
    script.write_text(STAND_IN)
    process = Operator("unused-kubeconfig", "stand-in", command=[sys.executable, str(script)])
    yield process
    process.stop()


def _hold(port: int) -> socket.socket:
    """Another process's listener on `port` (as far as the operator can tell)."""
    held = socket.socket()
    held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # the old listener's connections linger
    held.bind(("127.0.0.1", port))
    held.listen()
    return held


def test_a_restarted_operator_takes_new_ports_when_its_old_one_is_held(operator: Operator) -> None:
    operator.start()
    old = operator.health_port
    operator.stop()
    with _hold(old):
        operator.start()
        assert operator.health_port != old
        assert operator.ready()


def test_a_start_that_loses_its_port_before_binding_it_retries_on_new_ones(
        operator: Operator, monkeypatch: pytest.MonkeyPatch) -> None:
    taken = ports.free_port()
    picks = iter([{"metrics": ports.free_port(), "health": taken}])
    real_free_ports = ports.free_ports
    monkeypatch.setattr(ports, "free_ports", lambda names, *a, **k: next(picks, None) or real_free_ports(names, *a, **k))
    with _hold(taken):  # taken by someone else after it was picked
        operator.start()
        assert operator.health_port != taken
        assert operator.ready()


def test_a_stopped_operator_gives_its_ports_back(operator: Operator, tmp_path: Path) -> None:
    operator.start()
    held = {operator.metrics_port, operator.health_port}
    operator.stop()
    assert not {int(p.name) for p in (tmp_path / "reservations").iterdir() if p.name.isdigit()} & held


def test_started_at_is_the_wall_time_of_the_last_start(operator: Operator) -> None:
    assert operator.started_at is None
    before = time.time()
    operator.start()
    first = operator.started_at
    assert first is not None and before <= first <= time.time()
    operator.stop()
    operator.start()
    assert operator.started_at is not None and operator.started_at > first
