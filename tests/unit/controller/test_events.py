"""Event bodies: what `kubectl describe tfjob` shows, and names that never collide."""

from __future__ import annotations

from datetime import UTC, datetime

from controller.events import event_body, event_name

JOB = {"apiVersion": "kubeflow.org/v1", "kind": "TensorFlowJob",
       "metadata": {"name": "mnist", "namespace": "team-a", "uid": "u-1", "resourceVersion": "7"}}


def test_event_names_made_in_a_tight_loop_are_all_distinct() -> None:
    names = [event_name("mnist") for _ in range(10_000)]
    assert len(set(names)) == len(names)
    assert all(n.startswith("mnist.") and len(n) < 64 for n in names)


def test_an_event_message_is_cut_to_1024_bytes_never_inside_a_character() -> None:
    body = event_body(JOB, "Warning", "PodFailed", "ü€😀" * 600, datetime(2026, 11, 29, tzinfo=UTC))
    encoded = body["message"].encode()  # would raise on half a character
    assert 1000 < len(encoded) <= 1024


def test_event_body_points_at_the_job_and_truncates_long_messages() -> None:
    body = event_body(JOB, "Warning", "PodFailed", "x" * 5000, datetime(2026, 11, 29, tzinfo=UTC))
    assert body["metadata"]["namespace"] == "team-a"
    assert body["involvedObject"] == {"apiVersion": "kubeflow.org/v1", "kind": "TensorFlowJob", "name": "mnist",
                                      "namespace": "team-a", "uid": "u-1", "resourceVersion": "7"}
    assert (body["type"], body["reason"]) == ("Warning", "PodFailed")
    assert len(body["message"].encode()) <= 1024 and body["message"].endswith("more characters)")
    assert body["firstTimestamp"] == body["lastTimestamp"] == "2026-11-29T00:00:00Z"
