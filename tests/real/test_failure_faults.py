"""Faults on a real node against the failure rules: a worker killed by the kernel for exceeding its
memory limit (a real OOM kill, reason `OOMKilled`, exit code 137) fails the job at once under a
FailJob rule and is retried and counted without one; a worker evicted through the Eviction API is
replaced without counting.

The "training" is a few lines of Python in the stock TensorFlow image (no TensorFlow import: what is
tested is the kubelet's and the operator's side, and the real node's two cores are better spent)."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
import yaml

from tests.real.kubectl import Kubectl, wait_for
from tests.support.operator import Operator

IMAGE = "tensorflow/tensorflow:2.21.0"
EAT_MEMORY = "import time; print('allocating', flush=True); b = b'x' * (512 * 1024 * 1024); time.sleep(600)"
SLEEP = "import time; print('working', flush=True); time.sleep(600)"
OOM_FAILS = {"name": "oom-is-fatal", "action": "FailJob", "onReasons": ["OOMKilled"]}


def role(code: str, memory: str = "256Mi", policy: str = "OnFailure", **extra: Any) -> dict[str, Any]:
    container = {"name": "tensorflow", "image": IMAGE, "imagePullPolicy": "IfNotPresent",
                 "command": ["python", "-c", code],
                 "resources": {"requests": {"cpu": "50m", "memory": memory}, "limits": {"memory": memory}}}
    return {"replicas": 1, "restartPolicy": policy, **extra,
            "template": {"spec": {"terminationGracePeriodSeconds": 1, "containers": [container]}}}


def submit(kubectl: Kubectl, name: str, **spec: Any) -> float:
    document = {"apiVersion": "kubeflow.org/v1", "kind": "TensorFlowJob", "metadata": {"name": name}, "spec": spec}
    kubectl("apply", "-f", "-", input=yaml.safe_dump(document))
    return time.monotonic()


def condition(kubectl: Kubectl, name: str, kind: str) -> dict[str, Any] | None:
    found = next((c for c in (kubectl.job(name).get("status") or {}).get("conditions") or []
                  if c["type"] == kind and c["status"] == "True"), None)
    return found


def terminated(kubectl: Kubectl, pod: str) -> dict[str, Any]:
    status = (kubectl.json("pod", pod)["status"].get("containerStatuses") or [{}])[0]
    return (status.get("state") or {}).get("terminated") or (status.get("lastState") or {}).get("terminated") or {}


@pytest.mark.real_ci
def test_a_worker_oom_killed_by_its_memory_limit_fails_the_job_at_once_under_a_fail_job_rule(
        kubectl: Kubectl, operator: Operator) -> None:
    started = submit(kubectl, "oom-rule", backoffLimit=6, chief=role(SLEEP), worker=role(EAT_MEMORY, "64Mi"),
                     failurePolicy={"rules": [OOM_FAILS]})
    failed = wait_for(lambda: condition(kubectl, "oom-rule", "Failed"), 300, "oom-rule Failed")
    print(f"oom-rule: Failed {time.monotonic() - started:.1f} s after it was applied")
    assert failed is not None and failed["reason"] == "PodFailurePolicy"
    assert "OOMKilled" in failed["message"] and "spec.failurePolicy.rules[0] (oom-is-fatal)" in failed["message"]
    killed = terminated(kubectl, "oom-rule-worker-0")
    assert (killed.get("reason"), killed.get("exitCode")) == ("OOMKilled", 137)
    assert (kubectl.job("oom-rule")["status"].get("restartCount") or 0) == 0


def test_without_a_rule_a_worker_oom_killed_by_its_memory_limit_is_retried_and_counted(
        kubectl: Kubectl, operator: Operator) -> None:
    started = submit(kubectl, "oom-count", backoffLimit=1, chief=role(SLEEP), worker=role(EAT_MEMORY, "64Mi"))
    failed = wait_for(lambda: condition(kubectl, "oom-count", "Failed"), 300, "oom-count Failed")
    print(f"oom-count: Failed {time.monotonic() - started:.1f} s after it was applied")
    assert failed is not None and failed["reason"] == "BackoffLimitExceeded"
    status = kubectl.job("oom-count")["status"]
    assert status["restartCount"] == 2 and status["replicaStatuses"]["worker"]["restarts"] == 2


def test_a_worker_evicted_through_the_eviction_api_is_replaced_without_counting(
        kubectl: Kubectl, operator: Operator) -> None:
    submit(kubectl, "evicted", backoffLimit=0, chief=role(SLEEP), worker=role(SLEEP))
    wait_for(lambda: condition(kubectl, "evicted", "Running"), 300, "evicted Running")
    before = kubectl.json("pod", "evicted-worker-0")["metadata"]["uid"]
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction",
                "metadata": {"name": "evicted-worker-0", "namespace": kubectl.namespace}}
    kubectl("create", "--raw", f"/api/v1/namespaces/{kubectl.namespace}/pods/evicted-worker-0/eviction", "-f", "-",
            input=json.dumps(eviction))
    evicted = time.monotonic()

    def replaced_and_running() -> bool:
        pods = [p for p in kubectl.pods("evicted") if p["metadata"]["name"] == "evicted-worker-0"]
        return any(p["metadata"]["uid"] != before and p["status"].get("phase") == "Running" for p in pods)
    wait_for(replaced_and_running, 300, "evicted-worker-0 replaced and Running")
    print(f"evicted: worker-0 Running again {time.monotonic() - evicted:.1f} s after its eviction")
    wait_for(lambda: condition(kubectl, "evicted", "Running"), 120, "evicted Running again")
    assert condition(kubectl, "evicted", "Failed") is None
    assert (kubectl.job("evicted")["status"].get("restartCount") or 0) == 0
