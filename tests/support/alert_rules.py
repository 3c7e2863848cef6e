"""Unit tests of Prometheus alert rules with the real `promtool test rules`, for the rules file
(tests/unit/test_alert_rules.py) and for the Helm chart's rendering of it (tests/unit/test_helm_chart.py).

promtool comes from devcluster/install-prometheus.sh (Debian's package unpacked into
~/.cache/tfjob-operator/, seconds cold). Each scenario is one promtool test file written to a
temporary folder: the series, the evaluation time, and the alerts expected there with their labels
and annotations. The annotations expected are the rule's own, rendered here as Prometheus renders
the few template forms these rules use: `{{ $value }}`, `{{ $value | humanizePercentage }}`,
`{{ $labels.<name> }}` and `{{ with $labels.<name> }}...{{ . }}...{{ end }}`.
"""

from __future__ import annotations

import pathlib
import re
import subprocess
from typing import Any

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]


def promtool_path() -> str:
    done = subprocess.run(["bash", str(ROOT / "devcluster" / "install-prometheus.sh"), "dir"],
                          capture_output=True, text=True)
    assert done.returncode == 0, f"devcluster/install-prometheus.sh: {done.stderr}"
    return str(pathlib.Path(done.stdout.strip()) / "promtool")


def alerting_rules(groups: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every alerting rule of a rules document ({"groups": [...]}), by alert name."""
    return {rule["alert"]: rule for group in groups["groups"] for rule in group["rules"] if "alert" in rule}


def render(text: str, value: str, labels: dict[str, str]) -> str:
    """An annotation template as Prometheus renders it (missing labels render empty)."""
    def with_label(match: re.Match[str]) -> str:
        label = labels.get(match.group(1), "")
        return match.group(2).replace("{{ . }}", label) if label else ""
    text = re.sub(r"\{\{ with \$labels\.(\w+) \}\}(.*?)\{\{ end \}\}", with_label, text)
    text = text.replace("{{ $value | humanizePercentage }}", value).replace("{{ $value }}", value)
    text = re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels.get(m.group(1), ""), text)
    assert "{{" not in text, f"a template form this helper does not render: {text}"
    return text


class RuleTests:
    """promtool test rules of one rules file, each scenario in a test file of its own in `folder`."""

    def __init__(self, promtool: str, rules_file: pathlib.Path, folder: pathlib.Path) -> None:
        self.promtool, self.rules_file, self.folder = promtool, rules_file, folder
        self.rules = alerting_rules(yaml.safe_load(rules_file.read_text()))

    def expect(self, alert: str, labels: dict[str, str], value: str = "") -> dict[str, Any]:
        """One alert promtool should find: its labels (the rule's own added) and its annotations."""
        rule = self.rules[alert]
        return {"exp_labels": {**labels, **rule["labels"]},
                "exp_annotations": {k: render(v, value, labels) for k, v in rule["annotations"].items()}}

    def run(self, series: dict[str, str], alert: str, at: str,
            expected: list[dict[str, Any]]) -> subprocess.CompletedProcess[str]:
        test = {
            "rule_files": [str(self.rules_file)],
            "evaluation_interval": "1m",
            "tests": [{
                "interval": "1m",
                "input_series": [{"series": s, "values": v} for s, v in series.items()],
                "alert_rule_test": [{"eval_time": at, "alertname": alert, "exp_alerts": expected}],
            }],
        }
        path = self.folder / "test.yaml"
        path.write_text(yaml.safe_dump(test, sort_keys=False))
        return subprocess.run([self.promtool, "test", "rules", str(path)], capture_output=True, text=True)

    def assert_alerts(self, series: dict[str, str], alert: str, at: str, expected: list[dict[str, Any]]) -> None:
        done = self.run(series, alert, at, expected)
        assert done.returncode == 0, done.stdout + done.stderr

    def assert_fires(self, series: dict[str, str], alert: str, at: str, labels: dict[str, str],
                     value: str = "") -> None:
        """Exactly one alert fires, with these labels."""
        self.assert_alerts(series, alert, at, [self.expect(alert, labels, value)])

    def assert_silent(self, series: dict[str, str], alert: str, at: str) -> None:
        self.assert_alerts(series, alert, at, [])
