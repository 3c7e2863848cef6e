"""Measurement helpers of the operator benchmarks: statistics, Prometheus text, API write counts, tables.

Everything here is pure: numbers and metric texts in, numbers and strings out. No cluster, no
process, no clock, so tests/unit/test_bench_harness.py loads this file by path and checks the
arithmetic and the parsing that turn raw measurements into the numbers the benchmarks print.
It was split out of bench/_harness.py (which keeps the live pieces: the cluster, the operator
process, the watches) when that file passed the project's 600-line limit; the line between the
two is the line between computing on measurements and taking them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# Write verbs as the API server labels them in apiserver_request_total.
APISERVER_WRITE_VERBS = frozenset({"POST", "PUT", "PATCH", "DELETE", "DELETECOLLECTION", "APPLY"})
# Write verbs as kube labels them in tfjob_api_requests_total.
OPERATOR_WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})
# What only the operator writes in a benchmark cluster: its pods (not pods/status, KWOK's, nor
# pods/binding, the scheduler's), services, the tensorflowjobs status and core/v1 events (the
# scheduler posts events.k8s.io events, a different group).
OPERATOR_RESOURCES = frozenset({("", "pods", ""), ("", "services", ""), ("kubeflow.org", "tensorflowjobs", ""),
                                ("kubeflow.org", "tensorflowjobs", "status"), ("", "events", "")})


# --- statistics ---------------------------------------------------------------------------------------


def percentile(values: Iterable[float], q: float) -> float:
    """The q-th percentile (0..100) with linear interpolation between closest ranks; nan when empty."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    if not 0 <= q <= 100:
        raise ValueError("q must be within 0..100")
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def fit_line(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float]:
    """Least-squares (intercept, slope) of y = a + b·x; needs two distinct x values."""
    if len(xs) != len(ys) or len(xs) < 2:
        raise ValueError("need at least two (x, y) points")
    mean_x = sum(xs) / len(xs)
    mean_y = sum(ys) / len(ys)
    var_x = sum((x - mean_x) ** 2 for x in xs)
    if var_x == 0:
        raise ValueError("x values must not all be equal")
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / var_x
    return mean_y - slope * mean_x, slope


# --- Prometheus text ----------------------------------------------------------------------------------

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class Sample:
    name: str
    labels: Mapping[str, str]
    value: float


def parse_prometheus(text: str, prefix: str = "") -> list[Sample]:
    """Samples of a Prometheus text exposition (only metric names starting with `prefix`)."""
    samples = []
    for line in text.splitlines():
        if not line or line.startswith("#") or (prefix and not line.startswith(prefix)):
            continue
        match = _SAMPLE.match(line)
        if match is None:
            continue
        name, labels, value = match.groups()
        parsed = {k: v.replace('\\"', '"').replace("\\\\", "\\") for k, v in _LABEL.findall(labels or "")}
        try:
            samples.append(Sample(name, parsed, float(value)))
        except ValueError:
            continue
    return samples


RequestKey = tuple[str, str, str, str]
"""(verb, group, resource, subresource)."""


def apiserver_requests(text: str) -> dict[RequestKey, float]:
    """`apiserver_request_total` summed over code, scope, component, version and dry_run."""
    totals: dict[RequestKey, float] = {}
    for s in parse_prometheus(text, "apiserver_request_total{"):
        key = (s.labels.get("verb", ""), s.labels.get("group", ""), s.labels.get("resource", ""),
               s.labels.get("subresource", ""))
        totals[key] = totals.get(key, 0.0) + s.value
    return totals


def operator_requests(text: str) -> dict[RequestKey, float]:
    """`tfjob_api_requests_total` as (verb, "", resource, subresource), summed over code."""
    totals: dict[RequestKey, float] = {}
    for s in parse_prometheus(text, "tfjob_api_requests_total{"):
        resource, _, sub = s.labels.get("resource", "").partition("/")
        key = (s.labels.get("verb", ""), "", resource, sub)
        totals[key] = totals.get(key, 0.0) + s.value
    return totals


def delta(before: Mapping[RequestKey, float], after: Mapping[RequestKey, float]) -> dict[RequestKey, float]:
    """after - before for every key that changed."""
    keys = set(before) | set(after)
    changed = {k: after.get(k, 0.0) - before.get(k, 0.0) for k in keys}
    return {k: v for k, v in changed.items() if v}


def writes(counts: Mapping[RequestKey, float], *, operator_only: bool = True) -> dict[str, float]:
    """Write requests as `VERB resource[/sub]` → count; from the API server's labels (upper-case verbs)
    restricted to what only the operator writes, or from the operator's own (lower-case verbs)."""
    result: dict[str, float] = {}
    for (verb, group, resource, sub), value in counts.items():
        if verb in APISERVER_WRITE_VERBS:
            if operator_only and (group, resource, sub) not in OPERATOR_RESOURCES:
                continue
        elif verb not in OPERATOR_WRITE_VERBS:
            continue
        name = f"{verb.lower()} {resource}{'/' + sub if sub else ''}"
        result[name] = result.get(name, 0.0) + value
    return dict(sorted(result.items()))


def metric_value(text: str, metric: str, labels: Mapping[str, str] | None = None) -> float:
    """Sum of the samples of `metric` whose labels include `labels` (0 when absent)."""
    wanted = dict(labels or {})
    return sum(s.value for s in parse_prometheus(text, metric) if s.name == metric
               and all(s.labels.get(k) == v for k, v in wanted.items()))


def histogram_quantile(text: str, metric: str, q: float) -> float:
    """The `q` quantile (0..1) of a Prometheus histogram `metric` (its `_bucket` samples, summed over
    every other label), interpolated linearly inside the bucket, as PromQL's histogram_quantile does;
    NaN when it has no observations."""
    buckets: dict[float, float] = {}
    for sample in parse_prometheus(text, metric + "_bucket"):
        if sample.name == metric + "_bucket" and "le" in sample.labels:
            bound = float(sample.labels["le"])
            buckets[bound] = buckets.get(bound, 0.0) + sample.value
    bounds = sorted(buckets)
    if not bounds or buckets[bounds[-1]] <= 0:
        return float("nan")
    rank = q * buckets[bounds[-1]]
    lower_bound, lower_count = 0.0, 0.0
    for bound in bounds:
        count = buckets[bound]
        if count >= rank:
            if bound == float("inf"):
                return lower_bound  # beyond the highest finite bucket: its bound is all we know
            return lower_bound + (bound - lower_bound) * (rank - lower_count) / max(count - lower_count, 1e-12)
        lower_bound, lower_count = bound, count
    return bounds[-1]


# --- verdicts and tables ------------------------------------------------------------------------------


def verdict(value: float | None, limit: float, *, at_least: bool = False) -> str:
    """"pass"/"FAIL" for value ≤ limit (or ≥ with at_least); "n/a" when nothing was measured."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    ok = value >= limit if at_least else value <= limit
    return "pass" if ok else "FAIL"


def fmt(value: Any, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        if abs(value) >= 100:
            return f"{value:,.0f}"
        return f"{value:.{digits}f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(fmt(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)
