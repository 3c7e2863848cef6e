"""The TensorFlowJob lifecycle on a real API server with KWOK nodes: pods, Service and TF_CONFIG;
success, failure and restart policies; back-off limit, deadline and TTL; suspend and resume; and
what cleanPodPolicy leaves behind. The scenarios marked `both_kinds` run for Kubeflow's TFJob kind too."""

from __future__ import annotations

import json
import time
from typing import Any

from tests.support.kinds import both_kinds


def tf_config(pod: dict[str, Any]) -> dict[str, Any]:
    container = next(c for c in pod["spec"]["containers"] if c["name"] == "tensorflow")
    return json.loads(next(e["value"] for e in container["env"] if e["name"] == "TF_CONFIG"))


def test_chief_ps_workers_get_pods_service_and_consistent_tf_config(tfjobs: Any) -> None:
    job = tfjobs.create("mnist", chief=tfjobs.role(1), ps=tfjobs.role(2), worker=tfjobs.role(4))
    pods = tfjobs.wait_pods("mnist", 7)
    assert [p["metadata"]["name"] for p in pods] == [
        "mnist-chief-0", "mnist-ps-0", "mnist-ps-1", "mnist-worker-0", "mnist-worker-1", "mnist-worker-2",
        "mnist-worker-3"]
    clusters = set()
    for pod in pods:
        meta, spec = pod["metadata"], pod["spec"]
        owner = meta["ownerReferences"][0]
        assert (owner["kind"], owner["uid"], owner["controller"], owner["blockOwnerDeletion"]) == (
            "TensorFlowJob", job["metadata"]["uid"], True, True)
        assert spec["hostname"] == meta["name"] and spec["subdomain"] == "mnist"
        role, index = meta["labels"]["tensorflowjob.kubeflow.org/replica-type"], meta["labels"][
            "tensorflowjob.kubeflow.org/replica-index"]
        assert meta["name"] == f"mnist-{role}-{index}"
        config = tf_config(pod)
        assert config["task"] == {"type": role, "index": int(index)}
        clusters.add(json.dumps(config["cluster"], sort_keys=True))
    assert len(clusters) == 1
    cluster = json.loads(clusters.pop())
    assert cluster["ps"] == [f"mnist-ps-{i}.mnist.{tfjobs.namespace}.svc:2222" for i in range(2)]
    service = tfjobs.service("mnist")
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["publishNotReadyAddresses"] is True
    assert service["metadata"]["ownerReferences"][0]["uid"] == job["metadata"]["uid"]
    tfjobs.wait_condition("mnist", "Running")


def test_chief_success_succeeds_the_job_and_cleans_running_pods(tfjobs: Any) -> None:
    tfjobs.create("ok", chief=tfjobs.role(1), ps=tfjobs.role(2), worker=tfjobs.role(2))
    tfjobs.wait_pods("ok", 5)
    tfjobs.wait_condition("ok", "Running")
    tfjobs.exit_pod("ok-chief-0", 0)
    tfjobs.wait_condition("ok", "Succeeded", "JobSucceeded")
    tfjobs.wait_for(lambda: tfjobs.pod_names("ok") == ["ok-chief-0"], 30, "ps and workers to be deleted")
    status = tfjobs.status("ok")
    assert status["completionTime"]
    assert status["state"] == "Succeeded"
    running = tfjobs.condition("ok", "Running")
    assert running["status"] == "False"
    assert tfjobs.condition("ok", "Failed") is None
    table = tfjobs.cluster.kubectl("get", "tfjob", "ok", "-n", tfjobs.namespace).stdout
    assert table.split("\n")[0].split()[:5] == ["NAME", "STATE", "WORKERS", "PS", "RESTARTS"]
    assert table.split("\n")[1].split()[:2] == ["ok", "Succeeded"]


@both_kinds
def test_workers_only_job_succeeds_when_worker_zero_exits_zero(tfjobs: Any) -> None:
    tfjobs.create("w0", worker=tfjobs.role(3))
    tfjobs.wait_pods("w0", 3)
    tfjobs.exit_pod("w0-worker-0", 0)
    tfjobs.wait_condition("w0", "Succeeded")


@both_kinds
def test_all_workers_policy_waits_for_every_worker(tfjobs: Any) -> None:
    tfjobs.create("aw", worker=tfjobs.role(2), successPolicy="AllWorkers")
    tfjobs.wait_pods("aw", 2)
    tfjobs.exit_pod("aw-worker-0", 0)
    tfjobs.wait_for(lambda: tfjobs.status("aw").get("replicaStatuses", {}).get("worker", {}).get("succeeded") == 1,
                    30, "worker 0 to be counted as succeeded")
    assert tfjobs.condition("aw", "Succeeded") is None
    tfjobs.exit_pod("aw-worker-1", 0)
    tfjobs.wait_condition("aw", "Succeeded")


@both_kinds
def test_worker_failure_with_never_fails_the_job_and_deletes_active_pods(tfjobs: Any) -> None:
    tfjobs.create("nv", ps=tfjobs.role(1), worker=tfjobs.role(2, policy="Never"))
    tfjobs.wait_pods("nv", 3)
    tfjobs.exit_pod("nv-worker-1", 1)
    failed = tfjobs.wait_condition("nv", "Failed", "ReplicaFailed")
    assert "exit code 1" in failed["message"]
    tfjobs.wait_for(lambda: tfjobs.pod_names("nv") == ["nv-worker-1"], 30, "active pods to be deleted")


@both_kinds
def test_on_failure_pod_failure_is_recreated_and_counted(tfjobs: Any) -> None:
    tfjobs.create("of", worker=tfjobs.role(2))
    first = {p["metadata"]["name"]: p["metadata"]["uid"] for p in tfjobs.wait_pods("of", 2)}
    tfjobs.wait_condition("of", "Running")
    tfjobs.exit_pod("of-worker-1", 1)
    tfjobs.wait_for(lambda: tfjobs.status("of").get("restartCount") == 1, 30, "restartCount 1")
    pods = tfjobs.wait_pods("of", 2)
    assert {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods}["of-worker-1"] != first["of-worker-1"]
    tfjobs.wait_condition("of", "Running")
    restarting = tfjobs.condition("of", "Restarting")
    assert restarting["status"] == "False" and restarting["reason"] == "JobRunning"
    assert tfjobs.status("of")["restartCount"] == 1


@both_kinds
def test_backoff_limit_exceeded_fails_the_job(tfjobs: Any) -> None:
    tfjobs.create("bo", worker=tfjobs.role(1), backoffLimit=1)
    tfjobs.wait_pods("bo", 1)
    tfjobs.exit_pod("bo-worker-0", 1)
    tfjobs.wait_for(lambda: tfjobs.status("bo").get("restartCount") == 1, 30, "first restart")
    tfjobs.wait_pods("bo", 1)
    tfjobs.exit_pod("bo-worker-0", 1)
    tfjobs.wait_condition("bo", "Failed", "BackoffLimitExceeded")
    assert tfjobs.status("bo")["restartCount"] == 2


@both_kinds
def test_exit_code_policy_retries_137_and_fails_on_2(tfjobs: Any) -> None:
    tfjobs.create("ec", worker=tfjobs.role(2, policy="ExitCode"))
    tfjobs.wait_pods("ec", 2)
    tfjobs.exit_pod("ec-worker-1", 137)
    tfjobs.wait_for(lambda: tfjobs.status("ec").get("restartCount") == 1, 30, "a retried 137")
    tfjobs.wait_pods("ec", 2)
    assert tfjobs.condition("ec", "Failed") is None
    tfjobs.exit_pod("ec-worker-0", 2)
    failed = tfjobs.wait_condition("ec", "Failed", "ReplicaFailed")
    assert "exit code 2" in failed["message"]


def test_restart_scope_all_recreates_every_pod_once(tfjobs: Any) -> None:
    tfjobs.create("rs", ps=tfjobs.role(1), worker=tfjobs.role(3), restartScope="All")
    before = {p["metadata"]["name"]: p["metadata"]["uid"] for p in tfjobs.wait_pods("rs", 4)}
    tfjobs.wait_condition("rs", "Running")
    tfjobs.exit_pod("rs-worker-2", 1)
    tfjobs.wait_for(lambda: tfjobs.status("rs").get("restartCount") == 1, 30, "the restart to be counted")
    tfjobs.wait_condition("rs", "Running")
    after = {p["metadata"]["name"]: p["metadata"]["uid"] for p in tfjobs.wait_pods("rs", 4)}
    assert set(after) == set(before)
    assert all(after[name] != before[name] for name in before)
    assert tfjobs.status("rs")["restartCount"] == 1


@both_kinds
def test_active_deadline_fails_the_job_on_time(tfjobs: Any) -> None:
    tfjobs.create("dl", worker=tfjobs.role(2), activeDeadlineSeconds=5)
    tfjobs.wait_pods("dl", 2)
    failed = tfjobs.wait_condition("dl", "Failed", "DeadlineExceeded", timeout=30)
    status = tfjobs.status("dl")
    from tfjob_api.timeutil import parse_time
    late = (parse_time(failed["lastTransitionTime"]) - parse_time(status["startTime"])).total_seconds()
    assert 5 <= late <= 7, f"deadline fired {late}s after start"
    tfjobs.wait_for(lambda: tfjobs.pod_names("dl") == [], 30, "active pods to be deleted")


@both_kinds
def test_ttl_deletes_the_finished_job_and_its_pods(tfjobs: Any) -> None:
    tfjobs.create("ttl", worker=tfjobs.role(1), ttlSecondsAfterFinished=3, cleanPodPolicy="None")
    tfjobs.wait_pods("ttl", 1)
    tfjobs.exit_pod("ttl-worker-0", 0)
    tfjobs.wait_condition("ttl", "Succeeded")
    finished = time.monotonic()
    tfjobs.wait_for(lambda: tfjobs.get("ttl") is None, 20, "the job to be deleted by its TTL")
    assert time.monotonic() - finished <= 8
    tfjobs.wait_for(lambda: tfjobs.pods("ttl") == [] and tfjobs.service("ttl") is None, 60,
                    "garbage collection of the pods and Service")


@both_kinds
def test_suspended_job_has_no_pods_until_resumed(tfjobs: Any) -> None:
    tfjobs.create("sp", worker=tfjobs.role(2), suspend=True)
    tfjobs.wait_condition("sp", "Suspended")
    assert tfjobs.pods("sp") == [] and tfjobs.service("sp") is None
    assert "startTime" not in tfjobs.status("sp")
    tfjobs.patch("sp", {"suspend": False})
    tfjobs.wait_pods("sp", 2)
    resumed = tfjobs.wait_for(lambda: (tfjobs.condition("sp", "Suspended") or {}).get("reason") == "Resumed", 30,
                              "Suspended=False/Resumed")
    assert resumed
    assert tfjobs.status("sp")["startTime"]


@both_kinds
def test_suspend_while_running_deletes_pods_and_resume_resets_start_time(tfjobs: Any) -> None:
    tfjobs.create("sr", worker=tfjobs.role(2))
    tfjobs.wait_pods("sr", 2)
    tfjobs.wait_condition("sr", "Running")
    started = tfjobs.status("sr")["startTime"]
    tfjobs.patch("sr", {"suspend": True})
    tfjobs.wait_condition("sr", "Suspended")
    tfjobs.wait_for(lambda: tfjobs.pods("sr") == [], 30, "pods to be deleted on suspend")
    assert tfjobs.status("sr")["replicaStatuses"]["worker"]["active"] == 0
    assert tfjobs.condition("sr", "Running")["status"] == "False"
    time.sleep(1.1)  # startTime has one-second resolution: let the new one differ
    tfjobs.patch("sr", {"suspend": False})
    tfjobs.wait_pods("sr", 2)
    tfjobs.wait_for(lambda: tfjobs.status("sr").get("startTime") not in (None, started), 30, "a new startTime")


def finished_pods(tfjobs: Any, name: str, policy: str) -> list[str]:
    tfjobs.create(name, chief=tfjobs.role(1), ps=tfjobs.role(1), worker=tfjobs.role(2), cleanPodPolicy=policy)
    tfjobs.wait_pods(name, 4)
    tfjobs.exit_pod(f"{name}-worker-1", 0)
    tfjobs.wait_for(lambda: tfjobs.status(name).get("replicaStatuses", {}).get("worker", {}).get("succeeded") == 1,
                    30, "worker 1 to finish")
    tfjobs.exit_pod(f"{name}-chief-0", 0)
    tfjobs.wait_condition(name, "Succeeded")
    return []


@both_kinds
def test_clean_pod_policy_running_keeps_only_finished_pods(tfjobs: Any) -> None:
    finished_pods(tfjobs, "cr", "Running")
    tfjobs.wait_for(lambda: tfjobs.pod_names("cr") == ["cr-chief-0", "cr-worker-1"], 30, "only finished pods left")
    assert tfjobs.service("cr") is not None


@both_kinds
def test_clean_pod_policy_all_deletes_every_pod_and_the_service(tfjobs: Any) -> None:
    finished_pods(tfjobs, "ca", "All")
    tfjobs.wait_for(lambda: tfjobs.pods("ca") == [] and tfjobs.service("ca") is None, 30, "everything deleted")


@both_kinds
def test_clean_pod_policy_none_keeps_every_pod(tfjobs: Any) -> None:
    finished_pods(tfjobs, "cn", "None")
    # Not a pause but proof: a spec change the finished job ignores, once its observedGeneration shows
    # it, means the operator has reconciled the finished job again; a wrong deletion would show by then.
    generation = tfjobs.patch("cn", {"activeDeadlineSeconds": 86400})["metadata"]["generation"]
    tfjobs.wait_for(lambda: tfjobs.status("cn").get("observedGeneration") == generation, 30,
                    "the finished job reconciled after a spec change")
    assert tfjobs.pod_names("cn") == ["cn-chief-0", "cn-ps-0", "cn-worker-0", "cn-worker-1"]
