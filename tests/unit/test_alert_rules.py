"""The alert rules (manifests/monitoring/tfjob-operator.rules.yaml), unit-tested with the real
`promtool test rules` (tests/support/alert_rules.py): every alert once firing and once not, on
made-up series, one scenario per test. The PrometheusRule of the kustomize install must carry exactly
the same groups (the chart's rendering is tested by tests/unit/test_helm_chart.py).

The series carry the labels a ServiceMonitor gives the operator's targets: the scrape job and the
operator's namespace. Each install alerts on its own, so several scenarios run two namespaced
installs side by side, one healthy. The histogram-based alert is also checked against the buckets
the operator really exports: a quantile never reads above the largest finite bucket.
"""

from __future__ import annotations

import pathlib
import re
import subprocess

import pytest
import yaml
from prometheus_client import CollectorRegistry
from prometheus_client.utils import floatToGoString

from controller.metrics import ControllerMetrics
from tests.support.alert_rules import RuleTests, alerting_rules, promtool_path
from workqueue.metrics import DURATION_BUCKETS, PrometheusMetricsProvider

ROOT = pathlib.Path(__file__).resolve().parents[2]
MONITORING = ROOT / "manifests" / "monitoring"
RULES = MONITORING / "tfjob-operator.rules.yaml"
JOB = "tfjob-operator-metrics"
SYSTEM = {"namespace": "tfjob-system", "job": JOB}
TEAM_A = {"namespace": "team-a", "job": JOB}
TEAM_B = {"namespace": "team-b", "job": JOB}


@pytest.fixture(scope="module")
def promtool() -> str:
    return promtool_path()


@pytest.fixture
def rules(promtool: str, tmp_path: pathlib.Path) -> RuleTests:
    return RuleTests(promtool, RULES, tmp_path)


def series(metric: str, install: dict[str, str], **labels: str) -> str:
    """A series name with the install's labels and these."""
    pairs = {**install, **labels}
    return metric + "{" + ", ".join(f'{k}="{v}"' for k, v in pairs.items()) + "}"


def test_the_rules_file_is_valid_for_promtool(promtool: str) -> None:
    done = subprocess.run([promtool, "check", "rules", str(RULES)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_alert_has_a_severity_a_summary_and_a_description() -> None:
    for name, rule in alerting_rules(yaml.safe_load(RULES.read_text())).items():
        assert rule["labels"]["severity"] in {"critical", "warning"}, name
        assert rule["annotations"].keys() >= {"summary", "description"}, name


def test_every_alert_groups_by_install() -> None:
    for name, rule in alerting_rules(yaml.safe_load(RULES.read_text())).items():
        groupings = re.findall(r"\b(?:by|on) \(([^)]*)\)", rule["expr"])
        assert groupings, f"{name} aggregates over every install"
        for grouping in groupings:
            assert {"namespace", "job"} <= {label.strip() for label in grouping.split(",")}, (name, grouping)


def test_the_prometheus_rule_carries_exactly_the_rules_files_groups() -> None:
    [rule] = [o for o in yaml.safe_load_all((MONITORING / "prometheusrule.yaml").read_text())
              if o and o["kind"] == "PrometheusRule"]
    assert rule["spec"] == yaml.safe_load(RULES.read_text())


# ---- the operator down --------------------------------------------------------------------------


def test_operator_down_fires_when_no_replica_answers_for_five_minutes(rules: RuleTests) -> None:
    rules.assert_fires({series("up", SYSTEM, instance="a"): "1 1 0x10", series("up", SYSTEM, instance="b"): "0x12"},
                       "TFJobOperatorDown", "9m", SYSTEM)


def test_operator_down_fires_when_no_target_was_ever_scraped(rules: RuleTests) -> None:
    rules.assert_fires({'up{job="something-else", instance="x"}': "1x12"}, "TFJobOperatorDown", "9m", {"job": JOB})


def test_operator_down_fires_once_for_an_install_whose_targets_vanished(rules: RuleTests) -> None:
    # The pods are gone (say, unschedulable): their targets leave the Service and their series end.
    gone = {series("up", SYSTEM, instance="a"): "1x3 stale", series("up", SYSTEM, instance="b"): "1x3 stale"}
    rules.assert_fires(gone, "TFJobOperatorDown", "12m", SYSTEM)


def test_operator_down_stays_silent_while_one_replica_is_up(rules: RuleTests) -> None:
    rules.assert_silent({series("up", SYSTEM, instance="a"): "1x12", series("up", SYSTEM, instance="b"): "0x12"},
                        "TFJobOperatorDown", "10m")


def test_operator_down_stays_silent_when_a_replica_is_replaced_by_a_new_pod(rules: RuleTests) -> None:
    # A rolling update: the old pod's target vanishes, the new pod's answers.
    rolled = {series("up", SYSTEM, instance="old"): "1x3 stale", series("up", SYSTEM, instance="new"): "_x2 1x20"}
    rules.assert_silent(rolled, "TFJobOperatorDown", "15m")


def test_operator_down_fires_for_the_namespaced_install_that_is_down_while_another_is_up(rules: RuleTests) -> None:
    two = {series("up", TEAM_A, instance="a1"): "1 0x12", series("up", TEAM_A, instance="a2"): "1 0x12",
           series("up", TEAM_B, instance="b1"): "1x13", series("up", TEAM_B, instance="b2"): "1x13"}
    rules.assert_fires(two, "TFJobOperatorDown", "10m", TEAM_A)


# ---- no leader --------------------------------------------------------------------------------------


def test_no_leader_fires_when_every_replica_stands_by_for_two_minutes(rules: RuleTests) -> None:
    rules.assert_fires({series("tfjob_leader", SYSTEM, instance="a"): "1 0x6",
                        series("tfjob_leader", SYSTEM, instance="b"): "0x7"},
                       "TFJobOperatorNoLeader", "5m", SYSTEM, value="0")


def test_no_leader_stays_silent_through_a_hand_over_within_the_lease(rules: RuleTests) -> None:
    rules.assert_silent({series("tfjob_leader", SYSTEM, instance="a"): "1 1 0 0 0 0",
                         series("tfjob_leader", SYSTEM, instance="b"): "0 0 0 1 1 1"},
                        "TFJobOperatorNoLeader", "5m")


def test_no_leader_stays_silent_for_a_replica_run_without_leader_election(rules: RuleTests) -> None:
    # Such a process is the leader and exports 1 (tests/unit/controller/process/test_app_leader_gauge.py).
    rules.assert_silent({series("tfjob_leader", SYSTEM, instance="only"): "1x10"}, "TFJobOperatorNoLeader", "8m")


def test_no_leader_fires_for_the_namespaced_install_without_one_while_another_leads(rules: RuleTests) -> None:
    two = {series("tfjob_leader", TEAM_A, instance="a1"): "0x7", series("tfjob_leader", TEAM_A, instance="a2"): "0x7",
           series("tfjob_leader", TEAM_B, instance="b1"): "1x7", series("tfjob_leader", TEAM_B, instance="b2"): "0x7"}
    rules.assert_fires(two, "TFJobOperatorNoLeader", "5m", TEAM_A, value="0")


# ---- jobs failing -----------------------------------------------------------------------------------


def test_jobs_failing_fires_when_most_finished_jobs_failed(rules: RuleTests) -> None:
    # Every minute 3 jobs fail and 1 succeeds.
    rules.assert_fires({series("tfjob_jobs_failed_total", SYSTEM, reason="BackoffLimitExceeded"): "0+3x60",
                        series("tfjob_jobs_succeeded_total", SYSTEM): "0+1x60"},
                       "TFJobsFailingHighRate", "50m", SYSTEM, value="75%")


def test_jobs_failing_stays_silent_when_few_jobs_fail_among_many(rules: RuleTests) -> None:
    # Over 30 minutes: 3 failed, 60 succeeded.
    rules.assert_silent({series("tfjob_jobs_failed_total", SYSTEM, reason="BackoffLimitExceeded"): "0+0.1x60",
                         series("tfjob_jobs_succeeded_total", SYSTEM): "0+2x60"},
                        "TFJobsFailingHighRate", "50m")


def test_jobs_failing_stays_silent_for_two_failures_and_nothing_else(rules: RuleTests) -> None:
    rules.assert_silent({series("tfjob_jobs_failed_total", SYSTEM, reason="DeadlineExceeded"): "0x10 1x10 2x40"},
                        "TFJobsFailingHighRate", "50m")


def test_jobs_failing_fires_for_the_install_whose_jobs_only_fail_not_for_the_one_whose_jobs_succeed(
        rules: RuleTests) -> None:
    # team-a has no success series at all; team-b's jobs all succeed.
    two = {series("tfjob_jobs_failed_total", TEAM_A, reason="BackoffLimitExceeded"): "0+1x60",
           series("tfjob_jobs_succeeded_total", TEAM_B): "0+5x60"}
    rules.assert_fires(two, "TFJobsFailingHighRate", "50m", TEAM_A, value="100%")


# ---- reconcile errors -------------------------------------------------------------------------------


def test_reconcile_errors_fire_when_a_fifth_of_reconciles_fail_for_fifteen_minutes(rules: RuleTests) -> None:
    count = "tfjob_reconcile_duration_seconds_count"
    rules.assert_fires({series(count, SYSTEM, result="success"): "0+48x30",
                        series(count, SYSTEM, result="error"): "0+12x30"},
                       "TFJobOperatorReconcileErrors", "25m", SYSTEM, value="20%")


def test_reconcile_errors_stay_silent_for_requeues_and_rare_errors(rules: RuleTests) -> None:
    count = "tfjob_reconcile_duration_seconds_count"
    rules.assert_silent({series(count, SYSTEM, result="success"): "0+50x30",
                         series(count, SYSTEM, result="requeue"): "0+30x30",
                         series(count, SYSTEM, result="error"): "0+1x30"},
                        "TFJobOperatorReconcileErrors", "25m")


def test_reconcile_errors_fire_for_the_failing_install_even_when_a_busy_one_dilutes_them(rules: RuleTests) -> None:
    # Across both installs only 2 % of reconciles fail; in team-a, half of them.
    count = "tfjob_reconcile_duration_seconds_count"
    two = {series(count, TEAM_A, result="success"): "0+5x30", series(count, TEAM_A, result="error"): "0+5x30",
           series(count, TEAM_B, result="success"): "0+490x30"}
    rules.assert_fires(two, "TFJobOperatorReconcileErrors", "25m", TEAM_A, value="50%")


# ---- work queue -------------------------------------------------------------------------------------


def queue_waits(install: dict[str, str], wait: float, keys_per_minute: int, minutes: int) -> dict[str, str]:
    """The queue-latency histogram's series, in the buckets the operator exports, when every key waits
    `wait` seconds; and a short queue."""
    bucket = "workqueue_queue_duration_seconds_bucket"
    waits = {}
    for bound in (*DURATION_BUCKETS, float("inf")):
        per_minute = keys_per_minute if wait <= bound else 0
        waits[series(bucket, install, name="tensorflowjobs", le=floatToGoString(bound))] = f"0+{per_minute}x{minutes}"
    return {**waits, series("workqueue_depth", install, name="tensorflowjobs"): f"5x{minutes}"}


def test_work_queue_backing_up_fires_on_a_deep_queue_for_fifteen_minutes(rules: RuleTests) -> None:
    rules.assert_fires({series("workqueue_depth", SYSTEM, name="tensorflowjobs"): "0 0 500x25"},
                       "TFJobOperatorWorkQueueBackingUp", "20m", SYSTEM)


def test_work_queue_backing_up_fires_when_keys_wait_45_seconds(rules: RuleTests) -> None:
    # Above the 30 s threshold, and above client-go's largest bucket (10 s), which could not tell.
    rules.assert_fires(queue_waits(SYSTEM, 45, 10, 30), "TFJobOperatorWorkQueueBackingUp", "25m", SYSTEM)


def test_work_queue_backing_up_stays_silent_when_keys_wait_25_seconds(rules: RuleTests) -> None:
    rules.assert_silent(queue_waits(SYSTEM, 25, 10, 30), "TFJobOperatorWorkQueueBackingUp", "25m")


def test_work_queue_backing_up_fires_for_the_slow_install_only(rules: RuleTests) -> None:
    two = {**queue_waits(TEAM_A, 90, 10, 30), **queue_waits(TEAM_B, 0.01, 1000, 30)}
    rules.assert_fires(two, "TFJobOperatorWorkQueueBackingUp", "25m", TEAM_A)


def test_work_queue_backing_up_stays_silent_for_a_short_burst(rules: RuleTests) -> None:
    rules.assert_silent({series("workqueue_depth", SYSTEM, name="tensorflowjobs"): "0 500x5 0x20"},
                        "TFJobOperatorWorkQueueBackingUp", "20m")


def exported_buckets() -> dict[str, list[float]]:
    """The finite bucket bounds of every histogram the operator exports, by metric name."""
    registry = CollectorRegistry()
    metrics = ControllerMetrics(registry)
    provider = PrometheusMetricsProvider(registry)
    provider.new_latency_metric("tensorflowjobs").observe(0)
    provider.new_work_duration_metric("tensorflowjobs").observe(0)
    metrics.reconcile_duration.labels("success").observe(0)
    metrics.api_latency.labels("get", "pods").observe(0)
    bounds: dict[str, list[float]] = {}
    for family in registry.collect():
        for sample in family.samples:
            if sample.name.endswith("_bucket") and sample.labels["le"] != "+Inf":
                bounds.setdefault(sample.name, []).append(float(sample.labels["le"]))
    return bounds


def quantile_thresholds(expr: str) -> list[tuple[str, float]]:
    """(histogram, threshold) of every `histogram_quantile(...) > threshold` in a PromQL expression."""
    found = []
    for start in (m.end() for m in re.finditer(r"histogram_quantile\(", expr)):
        depth, end = 1, start
        while depth:
            depth += {"(": 1, ")": -1}.get(expr[end], 0)
            end += 1
        [histogram] = re.findall(r"(\w+_bucket)\{", expr[start:end])
        threshold = re.match(r"\s*>=?\s*([0-9.eE+]+)", expr[end:])
        assert threshold, f"no threshold after {expr[start:end]}"
        found.append((histogram, float(threshold.group(1))))
    return found


def test_every_quantile_threshold_is_a_bucket_bound_below_the_largest_bucket() -> None:
    # histogram_quantile never returns more than the largest finite bucket bound, so a threshold at
    # or above it can never fire; on a bucket bound, the quantile crosses it exactly when that share
    # of the observations does.
    buckets = exported_buckets()
    checked = []
    for name, rule in alerting_rules(yaml.safe_load(RULES.read_text())).items():
        for histogram, threshold in quantile_thresholds(rule["expr"]):
            assert histogram in buckets, f"{name} reads {histogram}, which the operator does not export"
            assert threshold < max(buckets[histogram]), (name, histogram, threshold, max(buckets[histogram]))
            assert threshold in buckets[histogram], (name, histogram, threshold, buckets[histogram])
            checked.append(name)
    assert checked == ["TFJobOperatorWorkQueueBackingUp"]


# ---- watch restarts ---------------------------------------------------------------------------------


def test_watch_restarts_looping_fires_for_the_resource_that_keeps_relisting(rules: RuleTests) -> None:
    relists = "tfjob_informer_relists_total"
    rules.assert_fires({series(relists, SYSTEM, resource="pods"): "0+1x40",
                        series(relists, SYSTEM, resource="tensorflowjobs"): "0x40"},
                       "TFJobOperatorWatchRestartsLooping", "35m", {**SYSTEM, "resource": "pods"}, value="15")


def test_watch_restarts_looping_stays_silent_for_an_occasional_relist(rules: RuleTests) -> None:
    rules.assert_silent({series("tfjob_informer_relists_total", SYSTEM, resource="pods"): "0x10 1x10 2x20"},
                        "TFJobOperatorWatchRestartsLooping", "35m")
