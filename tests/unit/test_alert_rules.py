"""The alert rules (manifests/monitoring/tfjob-operator.rules.yaml), unit-tested with the real
`promtool test rules`: every alert once firing and once not, on made-up series, one scenario per
test. The PrometheusRule (kustomize and chart) must carry exactly the same groups.

promtool comes from devcluster/install-prometheus.sh (Debian's package unpacked into
~/.cache/tfjob-operator/, seconds cold). Each scenario is one promtool test file written to a
temporary folder: the series, the evaluation time, and the alerts expected there with their labels
and annotations (the rule's own annotations with their template values filled in).
"""

from __future__ import annotations

import pathlib
import subprocess
from typing import Any

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
MONITORING = ROOT / "manifests" / "monitoring"
RULES = MONITORING / "tfjob-operator.rules.yaml"
JOB = 'job="tfjob-operator-metrics"'


@pytest.fixture(scope="module")
def promtool() -> str:
    done = subprocess.run(["bash", str(ROOT / "devcluster" / "install-prometheus.sh"), "dir"],
                          capture_output=True, text=True)
    assert done.returncode == 0, f"devcluster/install-prometheus.sh: {done.stderr}"
    return str(pathlib.Path(done.stdout.strip()) / "promtool")


def rules() -> dict[str, dict[str, Any]]:
    """Every alerting rule of the rules file, by alert name."""
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return {rule["alert"]: rule for group in groups for rule in group["rules"] if "alert" in rule}


def rendered_annotations(alert: str, value: str = "", **labels: str) -> dict[str, str]:
    """The alert's annotations as Prometheus renders them for `value` and `labels` (the templates
    these rules use: $value, $value | humanizePercentage, $labels.<name>)."""
    rendered = {}
    for key, text in rules()[alert]["annotations"].items():
        text = text.replace("{{ $value | humanizePercentage }}", value).replace("{{ $value }}", value)
        for name, label in labels.items():
            text = text.replace("{{ $labels." + name + " }}", label)
        rendered[key] = text
    return rendered


def run_promtool(promtool: str, tmp_path: pathlib.Path, series: dict[str, str], alert: str, at: str,
                 expected: list[dict[str, Any]]) -> subprocess.CompletedProcess[str]:
    test = {
        "rule_files": [str(RULES)],
        "evaluation_interval": "1m",
        "tests": [{
            "interval": "1m",
            "input_series": [{"series": s, "values": v} for s, v in series.items()],
            "alert_rule_test": [{"eval_time": at, "alertname": alert, "exp_alerts": expected}],
        }],
    }
    path = tmp_path / "test.yaml"
    path.write_text(yaml.safe_dump(test, sort_keys=False))
    return subprocess.run([promtool, "test", "rules", str(path)], capture_output=True, text=True)


def assert_fires(promtool: str, tmp_path: pathlib.Path, series: dict[str, str], alert: str, at: str,
                 labels: dict[str, str], annotation_values: dict[str, str]) -> None:
    severity = rules()[alert]["labels"]["severity"]
    expected = [{"exp_labels": {**labels, "severity": severity},
                 "exp_annotations": rendered_annotations(alert, **annotation_values)}]
    done = run_promtool(promtool, tmp_path, series, alert, at, expected)
    assert done.returncode == 0, done.stdout + done.stderr


def assert_silent(promtool: str, tmp_path: pathlib.Path, series: dict[str, str], alert: str, at: str) -> None:
    done = run_promtool(promtool, tmp_path, series, alert, at, [])
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_rules_file_is_valid_for_promtool(promtool: str) -> None:
    done = subprocess.run([promtool, "check", "rules", str(RULES)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_alert_has_a_severity_a_summary_and_a_description() -> None:
    for name, rule in rules().items():
        assert rule["labels"]["severity"] in {"critical", "warning"}, name
        assert rule["annotations"].keys() >= {"summary", "description"}, name


def test_the_prometheus_rule_carries_exactly_the_rules_files_groups() -> None:
    [rule] = [o for o in yaml.safe_load_all((MONITORING / "prometheusrule.yaml").read_text())
              if o and o["kind"] == "PrometheusRule"]
    assert rule["spec"] == yaml.safe_load(RULES.read_text())


# ---- the operator down --------------------------------------------------------------------------


def test_operator_down_fires_when_no_replica_answers_for_five_minutes(promtool: str, tmp_path: pathlib.Path) -> None:
    series = {f'up{{{JOB}, instance="a"}}': "1 1 0x10", f'up{{{JOB}, instance="b"}}': "0x12"}
    assert_fires(promtool, tmp_path, series, "TFJobOperatorDown", "9m", {}, {})


def test_operator_down_fires_when_the_targets_are_gone(promtool: str, tmp_path: pathlib.Path) -> None:
    series = {'up{job="something-else", instance="x"}': "1x12"}
    assert_fires(promtool, tmp_path, series, "TFJobOperatorDown", "9m", {}, {})


def test_operator_down_stays_silent_while_one_replica_is_up(promtool: str, tmp_path: pathlib.Path) -> None:
    series = {f'up{{{JOB}, instance="a"}}': "1x12", f'up{{{JOB}, instance="b"}}': "0x12"}
    assert_silent(promtool, tmp_path, series, "TFJobOperatorDown", "10m")


# ---- no leader --------------------------------------------------------------------------------------


def test_no_leader_fires_when_every_replica_stands_by_for_two_minutes(promtool: str, tmp_path: pathlib.Path) -> None:
    series = {f'tfjob_leader{{{JOB}, instance="a"}}': "1 0x6", f'tfjob_leader{{{JOB}, instance="b"}}': "0x7"}
    assert_fires(promtool, tmp_path, series, "TFJobOperatorNoLeader", "5m", {}, {"value": "0"})


def test_no_leader_stays_silent_through_a_hand_over_within_the_lease(promtool: str, tmp_path: pathlib.Path) -> None:
    series = {f'tfjob_leader{{{JOB}, instance="a"}}': "1 1 0 0 0 0",
              f'tfjob_leader{{{JOB}, instance="b"}}': "0 0 0 1 1 1"}
    assert_silent(promtool, tmp_path, series, "TFJobOperatorNoLeader", "5m")


# ---- jobs failing -----------------------------------------------------------------------------------


def test_jobs_failing_fires_when_most_finished_jobs_failed(promtool: str, tmp_path: pathlib.Path) -> None:
    # Every minute 3 jobs fail and 1 succeeds.
    series = {f'tfjob_jobs_failed_total{{{JOB}, reason="BackoffLimitExceeded"}}': "0+3x60",
              f'tfjob_jobs_succeeded_total{{{JOB}}}': "0+1x60"}
    assert_fires(promtool, tmp_path, series, "TFJobsFailingHighRate", "50m", {}, {"value": "75%"})


def test_jobs_failing_stays_silent_when_few_jobs_fail_among_many(promtool: str, tmp_path: pathlib.Path) -> None:
    # Over 30 minutes: 3 failed, 60 succeeded.
    series = {f'tfjob_jobs_failed_total{{{JOB}, reason="BackoffLimitExceeded"}}': "0+0.1x60",
              f'tfjob_jobs_succeeded_total{{{JOB}}}': "0+2x60"}
    assert_silent(promtool, tmp_path, series, "TFJobsFailingHighRate", "50m")


def test_jobs_failing_stays_silent_for_two_failures_and_nothing_else(promtool: str, tmp_path: pathlib.Path) -> None:
    series = {f'tfjob_jobs_failed_total{{{JOB}, reason="DeadlineExceeded"}}': "0x10 1x10 2x40"}
    assert_silent(promtool, tmp_path, series, "TFJobsFailingHighRate", "50m")


# ---- reconcile errors -------------------------------------------------------------------------------


def test_reconcile_errors_fire_when_a_fifth_of_reconciles_fail_for_fifteen_minutes(
        promtool: str, tmp_path: pathlib.Path) -> None:
    series = {f'tfjob_reconcile_duration_seconds_count{{{JOB}, result="success"}}': "0+48x30",
              f'tfjob_reconcile_duration_seconds_count{{{JOB}, result="error"}}': "0+12x30"}
    assert_fires(promtool, tmp_path, series, "TFJobOperatorReconcileErrors", "25m", {}, {"value": "20%"})


def test_reconcile_errors_stay_silent_for_requeues_and_rare_errors(promtool: str, tmp_path: pathlib.Path) -> None:
    series = {f'tfjob_reconcile_duration_seconds_count{{{JOB}, result="success"}}': "0+50x30",
              f'tfjob_reconcile_duration_seconds_count{{{JOB}, result="requeue"}}': "0+30x30",
              f'tfjob_reconcile_duration_seconds_count{{{JOB}, result="error"}}': "0+1x30"}
    assert_silent(promtool, tmp_path, series, "TFJobOperatorReconcileErrors", "25m")


# ---- work queue -------------------------------------------------------------------------------------


def test_work_queue_backing_up_fires_on_a_deep_queue_for_fifteen_minutes(promtool: str, tmp_path: pathlib.Path) -> None:
    series = {f'workqueue_depth{{{JOB}, name="tensorflowjobs"}}': "0 0 500x25"}
    assert_fires(promtool, tmp_path, series, "TFJobOperatorWorkQueueBackingUp", "20m", {}, {})


def test_work_queue_backing_up_fires_when_keys_wait_long(promtool: str, tmp_path: pathlib.Path) -> None:
    # Every key waits between 60 s and 120 s; the queue itself stays short.
    bucket = f'workqueue_queue_duration_seconds_bucket{{{JOB}, name="tensorflowjobs", le="%s"}}'
    series = {bucket % "10": "0x30", bucket % "100": "0+5x30", bucket % "+Inf": "0+10x30",
              f'workqueue_depth{{{JOB}, name="tensorflowjobs"}}': "5x30"}
    assert_fires(promtool, tmp_path, series, "TFJobOperatorWorkQueueBackingUp", "25m", {}, {})


def test_work_queue_backing_up_stays_silent_for_a_short_burst(promtool: str, tmp_path: pathlib.Path) -> None:
    series = {f'workqueue_depth{{{JOB}, name="tensorflowjobs"}}': "0 500x5 0x20"}
    assert_silent(promtool, tmp_path, series, "TFJobOperatorWorkQueueBackingUp", "20m")


# ---- watch restarts ---------------------------------------------------------------------------------


def test_watch_restarts_looping_fires_for_the_resource_that_keeps_relisting(
        promtool: str, tmp_path: pathlib.Path) -> None:
    series = {f'tfjob_informer_relists_total{{{JOB}, resource="pods"}}': "0+1x40",
              f'tfjob_informer_relists_total{{{JOB}, resource="tensorflowjobs"}}': "0x40"}
    assert_fires(promtool, tmp_path, series, "TFJobOperatorWatchRestartsLooping", "35m", {"resource": "pods"},
                 {"value": "15", "resource": "pods"})


def test_watch_restarts_looping_stays_silent_for_an_occasional_relist(promtool: str, tmp_path: pathlib.Path) -> None:
    series = {f'tfjob_informer_relists_total{{{JOB}, resource="pods"}}': "0x10 1x10 2x20"}
    assert_silent(promtool, tmp_path, series, "TFJobOperatorWatchRestartsLooping", "35m")
