"""Unit tests of `tfjobs.selectors`: Argo's successCondition/failureCondition, parsed as Kubernetes
parses label selectors and matched on JSON paths as Argo matches them."""

from __future__ import annotations

from typing import Any

import pytest

from tfjobs.selectors import Conditions, Requirement, SelectorError, lookup, parse

JOB: dict[str, Any] = {
    "metadata": {"name": "mnist", "labels": {"app.kubernetes.io/name": "mnist"}},
    "status": {"state": "Running", "restartCount": 2, "startTime": "2030-01-01T00:00:00Z", "completionTime": None,
               "replicaStatuses": {"worker": {"active": 4, "succeeded": 0}},
               "conditions": [{"type": "Created", "status": "True"}, {"type": "Running", "status": "True"}]},
    "spec": {"suspend": False},
}


@pytest.mark.parametrize(("text", "expected"), [
    ("status.state == Succeeded", [Requirement("status.state", "==", ("Succeeded",))]),
    ("status.state=Succeeded", [Requirement("status.state", "=", ("Succeeded",))]),
    ("status.state != Failed", [Requirement("status.state", "!=", ("Failed",))]),
    ("status.state in (Failed, Succeeded)", [Requirement("status.state", "in", ("Failed", "Succeeded"))]),
    ("status.state notin (Failed)", [Requirement("status.state", "notin", ("Failed",))]),
    ("status.restartCount > 3", [Requirement("status.restartCount", ">", ("3",))]),
    ("status.restartCount<3", [Requirement("status.restartCount", "<", ("3",))]),
    ("status.completionTime", [Requirement("status.completionTime", "exists")]),
    ("!status.completionTime", [Requirement("status.completionTime", "!")]),
    ("status.state == Running, status.restartCount < 5",
     [Requirement("status.state", "==", ("Running",)), Requirement("status.restartCount", "<", ("5",))]),
    ("status.state ==", [Requirement("status.state", "==", ("",))]),
    ("status.state in (a,,b)", [Requirement("status.state", "in", ("", "a", "b"))]),
    ("", []),
])
def test_conditions_parse_as_kubernetes_label_selectors(text: str, expected: list[Requirement]) -> None:
    assert list(parse(text)) == expected


@pytest.mark.parametrize("text", [
    "status.state Succeeded",  # no operator
    "status.state in Failed",  # in needs parentheses
    "status.state in (Failed",  # unclosed
    "status.restartCount > many",  # > needs an integer
    "status.state == Succeeded,",  # nothing after the comma
    "== Succeeded",  # no key
    "status.state == Not Succeeded",  # one value only
    "-status.state == x",  # not a label key (starts with a dash)
    "status.state == two words!",  # not a label value
])
def test_what_kubernetes_rejects_is_rejected(text: str) -> None:
    with pytest.raises(SelectorError):
        parse(text)


@pytest.mark.parametrize(("path", "expected"), [
    ("status.state", (True, "Running")),
    ("status.restartCount", (True, "2")),
    ("status.replicaStatuses.worker.active", (True, "4")),
    ("status.conditions.1.type", (True, "Running")),
    ("status.conditions.#", (True, "2")),
    ("status.conditions.7.type", (False, "")),
    ("status.completionTime", (True, "")),  # null exists, and reads as ''
    ("spec.suspend", (True, "false")),
    ("metadata.labels.app\\.kubernetes\\.io/name", (True, "mnist")),
    ("status.missing", (False, "")),
    ("status.state.deeper", (False, "")),
])
def test_paths_are_read_as_gjson_reads_them(path: str, expected: tuple[bool, str]) -> None:
    assert lookup(JOB, path) == expected


@pytest.mark.parametrize(("text", "matches"), [
    ("status.state == Running", True),
    ("status.state == Succeeded", False),
    ("status.state in (Succeeded, Running)", True),
    ("status.state notin (Succeeded, Failed)", True),
    ("status.missing != x", True),  # != and notin hold for a missing path
    ("status.missing notin (x)", True),
    ("status.missing == x", False),
    ("status.restartCount > 1", True),
    ("status.restartCount > 2", False),
    ("status.restartCount < 3", True),
    ("status.state > 1", False),  # not an integer: no match
    ("status.missing < 1", False),
    ("status.startTime", True),
    ("!status.startTime", False),
    ("!status.missing", True),
])
def test_a_requirement_matches_as_in_kubernetes(text: str, matches: bool) -> None:
    (requirement,) = parse(text)
    assert requirement.matches(JOB) is matches


def test_every_success_requirement_must_match() -> None:
    conditions = Conditions.parse("status.state == Running, status.restartCount > 5")

    assert conditions.outcome(JOB) is None


def test_any_failure_requirement_fails_the_step_before_success_is_looked_at() -> None:
    conditions = Conditions.parse(success="status.state == Running",
                                  failure="status.state == Failed, status.restartCount > 1")

    assert conditions.outcome(JOB) == "failed"
    assert str(conditions.failed(JOB)) == "status.restartCount>1"


def test_the_conditions_of_a_finished_job() -> None:
    conditions = Conditions.parse("status.state == Succeeded", "status.state == Failed")

    assert conditions.outcome({"status": {"state": "Succeeded"}}) == "succeeded"
    assert conditions.outcome({"status": {"state": "Failed"}}) == "failed"
    assert conditions.outcome({"status": {}}) is None


def test_a_step_with_only_a_failure_condition_succeeds_at_once_unless_it_fails_as_argo_decides() -> None:
    conditions = Conditions.parse(failure="status.state == Failed")

    assert conditions.outcome({"status": {"state": "Created"}}) == "succeeded"
    assert conditions.outcome({"status": {"state": "Failed"}}) == "failed"
