"""Unit tests for the pure helpers of bench/_measure.py: statistics, metrics parsing, write counting, verdicts.

The benchmarks themselves need a cluster and are never timed by tests; these only check the arithmetic
and the parsing that turn raw measurements into the numbers the benchmarks print.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import pytest

# bench/ is not an installed package (it is run from the checkout), so load the module by path.
_PATH = Path(__file__).resolve().parents[2] / "bench" / "_measure.py"
_SPEC = importlib.util.spec_from_file_location("bench_measure_under_test", _PATH)
assert _SPEC is not None and _SPEC.loader is not None
harness = importlib.util.module_from_spec(_SPEC)
sys.modules[_SPEC.name] = harness  # dataclasses resolve annotations through sys.modules
_SPEC.loader.exec_module(harness)

apiserver_requests = harness.apiserver_requests
delta = harness.delta
fit_line = harness.fit_line
markdown_table = harness.markdown_table
metric_value = harness.metric_value
operator_requests = harness.operator_requests
parse_prometheus = harness.parse_prometheus
percentile = harness.percentile
verdict = harness.verdict
writes = harness.writes

APISERVER_METRICS = """\
# HELP apiserver_request_total [STABLE] Counter of apiserver requests
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 10
apiserver_request_total{code="409",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 2
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="binding",verb="POST",version="v1"} 12
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="status",verb="PATCH",version="v1"} 30
apiserver_request_total{code="200",component="apiserver",dry_run="",group="kubeflow.org",resource="tensorflowjobs",scope="resource",subresource="status",verb="PATCH",version="v1"} 3
apiserver_request_total{code="201",component="apiserver",dry_run="",group="events.k8s.io",resource="events",scope="resource",subresource="",verb="POST",version="v1"} 7
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="events",scope="resource",subresource="",verb="POST",version="v1"} 4
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1"} 5
apiserver_request_total{code="200",component="apiserver",dry_run="",group="coordination.k8s.io",resource="leases",scope="resource",subresource="",verb="PUT",version="v1"} 99
apiserver_request_duration_seconds_bucket{le="0.1",verb="POST"} 1
"""

OPERATOR_METRICS = """\
# HELP tfjob_api_requests_total Kubernetes API requests
# TYPE tfjob_api_requests_total counter
tfjob_api_requests_total{code="201",resource="pods",verb="create"} 5.0
tfjob_api_requests_total{code="409",resource="pods",verb="create"} 1.0
tfjob_api_requests_total{code="200",resource="tensorflowjobs/status",verb="patch"} 3.0
tfjob_api_requests_total{code="200",resource="pods",verb="list"} 1.0
tfjob_api_requests_total{code="200",resource="pods",verb="watch"} 1.0
tfjob_api_requests_total{code="404",resource="/apis/kueue.x-k8s.io/v1beta2",verb="get"} 1.0
workqueue_depth{name="tensorflowjobs"} 2.0
workqueue_depth{name="other"} 5.0
"""


class TestPercentile:
    def test_linear_interpolation_between_closest_ranks(self) -> None:
        values = [1.0, 2.0, 3.0, 4.0]
        assert percentile(values, 0) == 1.0
        assert percentile(values, 100) == 4.0
        assert percentile(values, 50) == 2.5
        assert percentile(values, 99) == pytest.approx(3.97)

    def test_order_of_input_does_not_matter(self) -> None:
        assert percentile([5.0, 1.0, 3.0], 50) == 3.0

    def test_one_value_is_every_percentile(self) -> None:
        assert percentile([0.2], 99) == 0.2

    def test_empty_is_nan(self) -> None:
        assert math.isnan(percentile([], 50))

    def test_q_out_of_range(self) -> None:
        with pytest.raises(ValueError):
            percentile([1.0], 101)


class TestFitLine:
    def test_exact_line(self) -> None:
        intercept, slope = fit_line([100, 300, 1000], [3.0 + 0.05 * n for n in (100, 300, 1000)])
        assert intercept == pytest.approx(3.0)
        assert slope == pytest.approx(0.05)

    def test_least_squares_of_noisy_points(self) -> None:
        intercept, slope = fit_line([0, 1, 2, 3], [0.0, 1.0, 1.0, 3.0])
        assert slope == pytest.approx(0.9)
        assert intercept == pytest.approx(-0.1)

    @pytest.mark.parametrize(("xs", "ys"), [([1], [1.0]), ([1, 1], [1.0, 2.0]), ([1, 2], [1.0])])
    def test_needs_two_distinct_points(self, xs: list[float], ys: list[float]) -> None:
        with pytest.raises(ValueError):
            fit_line(xs, ys)


class TestPrometheus:
    def test_parse_names_labels_values_and_skips_comments(self) -> None:
        samples = parse_prometheus('# HELP x y\nfoo_total{a="1",b="x\\"y"} 3\nbar 2.5\n\nbad line\n')
        assert [(s.name, dict(s.labels), s.value) for s in samples] == [
            ("foo_total", {"a": "1", "b": 'x"y'}, 3.0), ("bar", {}, 2.5)]

    def test_prefix_filters_lines(self) -> None:
        assert [s.name for s in parse_prometheus("a_total 1\nb_total 2\n", "b_")] == ["b_total"]

    def test_apiserver_requests_sum_over_code_and_other_labels(self) -> None:
        counts = apiserver_requests(APISERVER_METRICS)
        assert counts[("POST", "", "pods", "")] == 12
        assert counts[("POST", "", "pods", "binding")] == 12
        assert counts[("PATCH", "kubeflow.org", "tensorflowjobs", "status")] == 3
        assert ("POST", "", "", "") not in counts  # the histogram line is not a request count

    def test_operator_requests_split_subresource(self) -> None:
        counts = operator_requests(OPERATOR_METRICS)
        assert counts[("create", "", "pods", "")] == 6
        assert counts[("patch", "", "tensorflowjobs", "status")] == 3

    def test_metric_value_matches_labels(self) -> None:
        assert metric_value(OPERATOR_METRICS, "workqueue_depth", {"name": "tensorflowjobs"}) == 2
        assert metric_value(OPERATOR_METRICS, "workqueue_depth") == 7
        assert metric_value(OPERATOR_METRICS, "missing_metric") == 0


class TestWrites:
    def test_apiserver_writes_keep_only_what_the_operator_writes(self) -> None:
        # pods/binding (scheduler), pods/status (KWOK), events.k8s.io (scheduler) and leases are not ours.
        assert writes(apiserver_requests(APISERVER_METRICS)) == {
            "patch tensorflowjobs/status": 3, "post events": 4, "post pods": 12}

    def test_apiserver_writes_unfiltered(self) -> None:
        result = writes(apiserver_requests(APISERVER_METRICS), operator_only=False)
        assert result["put leases"] == 99
        assert result["post pods/binding"] == 12
        assert "list pods" not in result

    def test_operator_writes_drop_reads(self) -> None:
        assert writes(operator_requests(OPERATOR_METRICS)) == {"create pods": 6, "patch tensorflowjobs/status": 3}

    def test_delta_keeps_changed_keys_only(self) -> None:
        before = {("POST", "", "pods", ""): 3.0, ("GET", "", "pods", ""): 1.0}
        after = {("POST", "", "pods", ""): 5.0, ("GET", "", "pods", ""): 1.0, ("DELETE", "", "pods", ""): 2.0}
        assert delta(before, after) == {("POST", "", "pods", ""): 2.0, ("DELETE", "", "pods", ""): 2.0}


class TestVerdicts:
    @pytest.mark.parametrize(("value", "limit", "at_least", "expected"), [
        (0.9, 0.85, True, "pass"), (0.85, 0.85, True, "pass"), (0.5, 0.85, True, "FAIL"),
        (150.0, 200.0, False, "pass"), (1200.0, 1000.0, False, "FAIL"), (0, 0, False, "pass"),
        (None, 1.0, False, "n/a"), (float("nan"), 1.0, True, "n/a"),
    ])
    def test_verdict(self, value: float | None, limit: float, at_least: bool, expected: str) -> None:
        assert verdict(value, limit, at_least=at_least) == expected

    def test_markdown_table_formats_numbers(self) -> None:
        table = markdown_table(["a", "b"], [[1234, 0.12345], ["x", None], [float("nan"), 1500.4]])
        assert table.splitlines() == ["| a | b |", "|---|---|", "| 1,234 | 0.12 |", "| x | - |", "| - | 1,500 |"]


HISTOGRAM = """# TYPE tfjob_reconcile_duration_seconds histogram
tfjob_reconcile_duration_seconds_bucket{result="success",le="0.01"} 50
tfjob_reconcile_duration_seconds_bucket{result="success",le="0.1"} 90
tfjob_reconcile_duration_seconds_bucket{result="success",le="1.0"} 100
tfjob_reconcile_duration_seconds_bucket{result="success",le="+Inf"} 100
tfjob_reconcile_duration_seconds_bucket{result="error",le="0.01"} 0
tfjob_reconcile_duration_seconds_bucket{result="error",le="0.1"} 0
tfjob_reconcile_duration_seconds_bucket{result="error",le="1.0"} 0
tfjob_reconcile_duration_seconds_bucket{result="error",le="+Inf"} 100
tfjob_reconcile_duration_seconds_count{result="success"} 100
"""


def test_histogram_quantile_interpolates_inside_the_bucket_like_promql() -> None:
    only_success = "\n".join(line for line in HISTOGRAM.splitlines() if 'result="error"' not in line)
    assert harness.histogram_quantile(only_success, "tfjob_reconcile_duration_seconds", 0.5) == pytest.approx(0.01)
    assert harness.histogram_quantile(only_success, "tfjob_reconcile_duration_seconds", 0.7) == pytest.approx(0.055)
    assert harness.histogram_quantile(only_success, "tfjob_reconcile_duration_seconds", 0.95) == pytest.approx(0.55)


def test_histogram_quantile_sums_labels_and_stops_at_the_highest_finite_bound() -> None:
    # 200 observations: 100 errors slower than 1 s, so the p99 lies in the +Inf bucket.
    assert harness.histogram_quantile(HISTOGRAM, "tfjob_reconcile_duration_seconds", 0.99) == pytest.approx(1.0)


def test_histogram_quantile_of_an_empty_histogram_is_nan() -> None:
    assert math.isnan(harness.histogram_quantile("", "tfjob_reconcile_duration_seconds", 0.99))
