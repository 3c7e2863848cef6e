"""A real Prometheus scrapes a real operator on the local cluster while jobs run: every query of the
Grafana dashboard (manifests/monitoring/tfjob-operator-dashboard.json) returns data there, and the
alert rules (tfjob-operator.rules.yaml) load and evaluate on the operator's real series.

Prometheus comes from devcluster/install-prometheus.sh (Debian's package unpacked into
~/.cache/tfjob-operator/, seconds cold). It scrapes the out-of-cluster operator's /metrics every
second under the scrape job the rules select (tfjob-operator-metrics, what a ServiceMonitor on the
metrics Service yields). Dashboard variables are filled in as Grafana would: $job with that job,
$__rate_interval with 1m.
"""

from __future__ import annotations

import json
import pathlib
import re
import subprocess
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import yaml

from devcluster.ports import free_port, lost_port_race, release
from tests.support.jobs import devcluster_role
from tests.support.polling import wait_for

from .conftest import ROOT, Operator, TfJobs

pytestmark = pytest.mark.usefixtures("no_session_operator")

MONITORING = ROOT / "manifests" / "monitoring"
DASHBOARD = MONITORING / "tfjob-operator-dashboard.json"
RULES = MONITORING / "tfjob-operator.rules.yaml"
SCRAPE_JOB = "tfjob-operator-metrics"
STARTS = 3
ELECTION = ["--leader-elect", "--lease-duration", "4", "--renew-deadline", "3", "--retry-period", "0.5"]


class Prometheus:
    """A Prometheus server scraping one operator, its HTTP API on a free local port."""

    def __init__(self, binary: pathlib.Path, folder: pathlib.Path, target_port: int) -> None:
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(RULES)],
            "scrape_configs": [{"job_name": SCRAPE_JOB,
                                "static_configs": [{"targets": [f"127.0.0.1:{target_port}"]}]}],
        }
        (folder / "prometheus.yml").write_text(yaml.safe_dump(config))
        self.log = folder / "prometheus.log"
        for attempt in range(1, STARTS + 1):  # a port picked free may be taken before Prometheus binds it
            self.port = free_port()
            with open(self.log, "wb") as log:
                self.process = subprocess.Popen(
                    [str(binary), f"--config.file={folder / 'prometheus.yml'}", f"--storage.tsdb.path={folder / 'data'}",
                     f"--web.listen-address=127.0.0.1:{self.port}"], stdout=log, stderr=subprocess.STDOUT)
            try:
                wait_for(self.ready, 60, "Prometheus to be ready")
                return
            except AssertionError:
                release([self.port])
                if attempt == STARTS or not lost_port_race(self.log.read_text(errors="replace")):
                    raise

    def ready(self) -> bool:
        if self.process.poll() is not None:
            raise AssertionError(f"prometheus exited with {self.process.returncode}:\n{self.log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=2) as answer:
                return int(answer.status) == 200
        except OSError:
            return False

    def api(self, path: str, **params: str) -> Any:
        url = f"http://127.0.0.1:{self.port}/api/v1/{path}?{urllib.parse.urlencode(params)}"
        with urllib.request.urlopen(url, timeout=10) as answer:
            body = json.load(answer)
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self.api("query", query=expr)["result"]
        return result

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
        release([self.port])


@pytest.fixture(scope="module")
def prometheus_binary() -> pathlib.Path:
    done = subprocess.run(["bash", str(ROOT / "devcluster" / "install-prometheus.sh"), "dir"],
                          capture_output=True, text=True)
    assert done.returncode == 0, f"devcluster/install-prometheus.sh: {done.stderr}"
    return pathlib.Path(done.stdout.strip()) / "prometheus"


@pytest.fixture
def scraped_operator(start_operator: Callable[..., Operator], prometheus_binary: pathlib.Path, namespace: str,
                     tmp_path: pathlib.Path) -> Iterator[tuple[Operator, Prometheus]]:
    """A leader-elected operator (its Lease in the test's namespace) and a Prometheus scraping it."""
    operator = start_operator([*ELECTION, "--leader-election-namespace", namespace])
    prometheus = Prometheus(prometheus_binary, tmp_path, operator.metrics_port)
    try:
        wait_for(lambda: prometheus.query(f'tfjob_leader{{job="{SCRAPE_JOB}"}} == 1'), 60,
                 "Prometheus to scrape the operator as leader")
        yield operator, prometheus
    finally:
        prometheus.stop()


def panels() -> list[dict[str, Any]]:
    return [p for p in json.loads(DASHBOARD.read_text())["panels"] if p["type"] != "row"]


def as_grafana_runs_it(expr: str) -> str:
    return expr.replace("$__rate_interval", "1m").replace("$job", SCRAPE_JOB)


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads (identifiers followed by a label matcher)."""
    return set(re.findall(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\{", expr))


def run_jobs_to_every_outcome(tfjobs: TfJobs) -> None:
    """One job succeeds; one restarts a worker and then succeeds; one fails (its other pods deleted)."""
    tfjobs.create("ok", worker=devcluster_role(2, exit_code=0, exit_after="2s"))
    tfjobs.create("again", worker=devcluster_role(1))
    tfjobs.create("bad", worker=devcluster_role(2, policy="Never"))
    tfjobs.wait_pods("again", 1)
    tfjobs.exit_pod("again-worker-0", 1)
    tfjobs.wait_pods("bad", 2)
    tfjobs.exit_pod("bad-worker-1", 1)
    tfjobs.wait_condition("ok", "Succeeded", timeout=60)
    tfjobs.wait_condition("bad", "Failed", timeout=60)
    tfjobs.wait_for(lambda: tfjobs.status("again").get("restartCount") == 1, 60, "a counted restart")


def test_every_dashboard_panel_shows_data_while_jobs_run(scraped_operator: tuple[Operator, Prometheus],
                                                         tfjobs_no_operator: TfJobs) -> None:
    _, prometheus = scraped_operator
    run_jobs_to_every_outcome(tfjobs_no_operator)
    # Every outcome scraped twice at least, so rate() and increase() over 1m have two samples: the
    # last counters to appear are the failure's and the restart's.
    for counter in ("tfjob_jobs_failed_total", "tfjob_jobs_restarted_total"):
        wait_for(lambda counter=counter: prometheus.query(f'count_over_time({counter}{{job="{SCRAPE_JOB}"}}[1m]) > 1'),
                 30, f"Prometheus to scrape {counter} twice")
    empty = []
    for panel in panels():
        for target in panel["targets"]:
            expr = as_grafana_runs_it(target["expr"])
            unscraped = [n for n in sorted(metric_names(expr)) if not prometheus.query(f'{n}{{job="{SCRAPE_JOB}"}}')]
            if unscraped or not prometheus.query(expr):
                empty.append(f"{panel['title']} [{target['refId']}]: {expr} (no series: {unscraped})")
    assert not empty, "panels without data:\n" + "\n".join(empty)


def test_the_alert_rules_evaluate_on_the_operators_series_and_stay_silent_while_it_is_healthy(
        scraped_operator: tuple[Operator, Prometheus]) -> None:
    _, prometheus = scraped_operator

    def rules() -> list[dict[str, Any]]:
        return [r for g in prometheus.api("rules")["groups"] for r in g["rules"]]

    def active_alerts() -> list[str]:
        return [a["labels"]["alertname"] for r in rules() for a in r.get("alerts", [])]

    names = {r["alert"] for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"]}
    assert {r["name"] for r in rules()} == names
    # Rules evaluated before the first scrape may hold a pending TFJobOperatorDown for one round.
    wait_for(lambda: not active_alerts(), 30, "no alert pending or firing once the operator is scraped")
    assert [(r["name"], r.get("lastError")) for r in rules() if r["health"] != "ok"] == []
