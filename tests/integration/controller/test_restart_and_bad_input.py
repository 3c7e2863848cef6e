"""Operator restarts and bad input: a restart mid-creation still makes each pod exactly once, a job
deleted mid-creation leaves nothing behind; a template the API server rejects, a squatted pod name
and a quota refusal are reported on the job; an invalid job is rejected at apply time."""

from __future__ import annotations

import threading
import time
from typing import Any

from kube import ApiError, resource_path
from tests.support.jobs import container, pod_manifest


def test_operator_restarted_while_creating_a_wide_job_makes_each_pod_exactly_once(
    tfjobs_no_operator: Any, no_session_operator: None, start_operator: Any
) -> None:
    tfjobs = tfjobs_no_operator
    first = start_operator(["--qps", "20", "--burst", "5"])  # slow enough to be caught mid-way
    seen: dict[str, set[str]] = {}
    stop = threading.Event()

    def watch_pods() -> None:
        while not stop.is_set():
            for pod in tfjobs.pods("wide"):
                seen.setdefault(pod["metadata"]["name"], set()).add(pod["metadata"]["uid"])
            time.sleep(0.05)

    watcher = threading.Thread(target=watch_pods, daemon=True)
    watcher.start()
    try:
        tfjobs.create("wide", worker=tfjobs.role(50))
        tfjobs.wait_for(lambda: len(tfjobs.pods("wide")) >= 10, 30, "some pods to be created")
        first.kill()
        assert len(tfjobs.pods("wide")) < 50, "the operator finished before it could be interrupted"
        start_operator()
        tfjobs.wait_pods("wide", 50, phase=None, timeout=90)
    finally:
        stop.set()
        watcher.join(5)
    assert len(tfjobs.pods("wide")) == 50
    assert all(len(uids) == 1 for uids in seen.values()), {n: u for n, u in seen.items() if len(u) > 1}


def test_template_the_api_server_rejects_fails_the_job_with_its_message(tfjobs: Any) -> None:
    role = tfjobs.role(1)
    role["template"]["spec"]["containers"][0]["ports"] = [{"name": "x" * 20, "containerPort": 80}]
    tfjobs.create("bad", worker=role)
    failed = tfjobs.wait_condition("bad", "Failed", "InvalidPodTemplate")
    assert "must be no more than 15 characters" in failed["message"]
    # Events are posted by the recorder's own thread, after the status write: wait for it.
    warnings = tfjobs.wait_for(lambda: [e for e in tfjobs.events("bad") if e["reason"] == "InvalidPodTemplate"],
                               30, "an InvalidPodTemplate event")
    assert warnings[0]["type"] == "Warning"


def test_foreign_pod_squatting_a_name_is_reported_and_left_alone(tfjobs: Any) -> None:
    squatter = tfjobs.api.create(resource_path("", "v1", "pods", tfjobs.namespace),
                                 pod_manifest("sq-worker-1", labels={"app": "mine"},
                                              containers=[container("busybox", name="c")]))
    tfjobs.create("sq", worker=tfjobs.role(2))
    conflict = tfjobs.wait_for(lambda: (tfjobs.condition("sq", "Running") or {}).get("reason") == "NameConflict",
                               30, "a NameConflict condition")
    assert conflict
    tfjobs.wait_for(lambda: any(e["reason"] == "NameConflict" for e in tfjobs.events("sq")), 30, "a NameConflict event")
    still = tfjobs.api.get(resource_path("", "v1", "pods", tfjobs.namespace, "sq-worker-1"))
    assert still["metadata"]["uid"] == squatter["metadata"]["uid"]
    assert still["metadata"].get("labels") == {"app": "mine"}
    assert not still["metadata"].get("deletionTimestamp")
    # Remove the squatter: the job recovers by itself.
    tfjobs.api.delete(resource_path("", "v1", "pods", tfjobs.namespace, "sq-worker-1"), grace_seconds=0)
    tfjobs.wait_condition("sq", "Running", timeout=90)


def test_job_deleted_while_its_pods_are_created_leaves_nothing_behind(tfjobs: Any, operator: Any) -> None:
    tfjobs.create("gone", worker=tfjobs.role(30))
    tfjobs.wait_for(lambda: len(tfjobs.pods("gone")) >= 1, 30, "creation to start")
    tfjobs.delete("gone")
    tfjobs.wait_for(lambda: tfjobs.get("gone") is None, 30, "the job to be deleted")
    tfjobs.wait_for(lambda: tfjobs.pods("gone") == [] and tfjobs.service("gone") is None, 90,
                    "garbage collection of every pod and the Service")
    key = f"{tfjobs.namespace}/gone"
    complaints = [line for line in operator.log_path.read_text(errors="replace").splitlines()
                  if key in line and ('"level": "warning"' in line or '"level": "error"' in line)]
    assert len(complaints) <= 2, complaints


def test_quota_refusal_is_reported_and_the_job_runs_once_quota_allows(tfjobs: Any) -> None:
    quota_path = resource_path("", "v1", "resourcequotas", tfjobs.namespace)
    tfjobs.api.create(quota_path, {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "pods"},
                                   "spec": {"hard": {"pods": "2"}}})
    tfjobs.wait_for(lambda: (tfjobs.api.get(f"{quota_path}/pods").get("status") or {}).get("hard"), 30,
                    "the quota to be counted")
    tfjobs.create("qt", worker=tfjobs.role(3))
    tfjobs.wait_for(lambda: (tfjobs.condition("qt", "Running") or {}).get("reason") == "QuotaExceeded", 30,
                    "a QuotaExceeded condition")
    tfjobs.wait_for(lambda: any(e["reason"] == "QuotaExceeded" and e["type"] == "Warning" for e in tfjobs.events("qt")),
                    30, "a QuotaExceeded Warning event")  # events are posted asynchronously
    assert len(tfjobs.pods("qt")) == 2
    tfjobs.api.patch(f"{quota_path}/pods", {"spec": {"hard": {"pods": "10"}}})
    tfjobs.wait_pods("qt", 3, timeout=120)
    tfjobs.wait_condition("qt", "Running", timeout=60)


def test_invalid_job_is_rejected_at_apply_time_naming_the_field(tfjobs: Any) -> None:
    result = tfjobs.apply_yaml(
        "apiVersion: kubeflow.org/v1\nkind: TensorFlowJob\nmetadata: {name: two-chiefs}\n"
        "spec:\n  chief: {replicas: 2, template: {spec: {containers: [{name: tensorflow, image: tf}]}}}\n")
    assert result.returncode != 0
    assert "spec.chief.replicas" in result.stderr
    try:
        tfjobs.api.get(tfjobs.path("two-chiefs"))
        raise AssertionError("the invalid job was stored")
    except ApiError as error:
        assert error.not_found
