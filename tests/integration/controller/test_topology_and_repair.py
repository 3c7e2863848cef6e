"""Scaling and topology changes (every pod ends up with the new TF_CONFIG), and repair of disruptions:
pods deleted by hand, evicted from a NotReady node, or stuck terminating on a lost node. The
scenarios marked `both_kinds` run for Kubeflow's TFJob kind too."""

from __future__ import annotations

import json
from typing import Any

from controller.job.plan import FORCE_DELETE_AFTER
from kube import resource_path
from tests.support.kinds import both_kinds


def tf_configs(tfjobs: Any, job: str) -> dict[str, dict[str, Any]]:
    configs = {}
    for pod in tfjobs.pods(job, include_terminating=False):
        container = next(c for c in pod["spec"]["containers"] if c["name"] == "tensorflow")
        configs[pod["metadata"]["name"]] = json.loads(next(e["value"] for e in container["env"]
                                                          if e["name"] == "TF_CONFIG"))
    return configs


def all_pods_see(tfjobs: Any, job: str, ps: int, workers: int) -> bool:
    configs = tf_configs(tfjobs, job)
    expected = {"ps": ps, "worker": workers}
    if len(configs) != ps + workers:
        return False
    return all({role: len(c["cluster"].get(role, [])) for role in expected} == expected for c in configs.values())


@both_kinds
def test_scale_workers_up_and_down_recreates_stale_pods_with_new_tf_config(tfjobs: Any) -> None:
    tfjobs.create("sc", ps=tfjobs.role(1), worker=tfjobs.role(2))
    tfjobs.wait_pods("sc", 3)
    tfjobs.wait_condition("sc", "Running")
    tfjobs.patch("sc", {"worker": {"replicas": 4}})
    tfjobs.wait_for(lambda: all_pods_see(tfjobs, "sc", 1, 4), 60, "every pod to see 4 workers")
    tfjobs.wait_pods("sc", 5)
    restarting = tfjobs.condition("sc", "Restarting")
    assert restarting["reason"] in ("Rescaled", "JobRunning")
    tfjobs.patch("sc", {"worker": {"replicas": 2}})
    # Converged = exactly these pods, every one with the 2-worker TF_CONFIG (replacements in flight
    # can make the TF_CONFIG check true for a moment before the last stale pod is gone).
    tfjobs.wait_for(lambda: tfjobs.pod_names("sc") == ["sc-ps-0", "sc-worker-0", "sc-worker-1"]
                    and all_pods_see(tfjobs, "sc", 1, 2), 60, "exactly ps-0, worker-0, worker-1 with 2 workers")
    tfjobs.wait_condition("sc", "Running")
    assert tfjobs.status("sc")["restartCount"] == 0  # rescaling is not a failure


@both_kinds
def test_kubectl_scale_changes_the_worker_count(tfjobs: Any) -> None:
    tfjobs.create("ks", worker=tfjobs.role(2))
    tfjobs.wait_pods("ks", 2)
    tfjobs.cluster.kubectl("scale", "tfjob/ks", "--replicas=3", "-n", tfjobs.namespace)
    tfjobs.wait_for(lambda: all_pods_see(tfjobs, "ks", 0, 3), 60, "3 workers after kubectl scale")


@both_kinds
def test_ps_scale_up_updates_every_workers_tf_config(tfjobs: Any) -> None:
    tfjobs.create("pu", ps=tfjobs.role(2), worker=tfjobs.role(2))
    before = {p["metadata"]["name"]: p["metadata"]["uid"] for p in tfjobs.wait_pods("pu", 4)}
    tfjobs.patch("pu", {"ps": {"replicas": 4}})
    tfjobs.wait_for(lambda: all_pods_see(tfjobs, "pu", 4, 2), 60, "every pod to see 4 parameter servers")
    after = {p["metadata"]["name"]: p["metadata"]["uid"] for p in tfjobs.wait_pods("pu", 6)}
    assert all(after[name] != uid for name, uid in before.items())  # no pod kept a stale TF_CONFIG
    hashes = {p["metadata"]["annotations"]["tensorflowjob.kubeflow.org/cluster-spec-hash"]
              for p in tfjobs.pods("pu", include_terminating=False)}
    assert len(hashes) == 1


@both_kinds
def test_pod_deleted_by_hand_is_recreated_without_counting(tfjobs: Any) -> None:
    tfjobs.create("dh", worker=tfjobs.role(2))
    old = {p["metadata"]["name"]: p["metadata"]["uid"] for p in tfjobs.wait_pods("dh", 2)}
    tfjobs.wait_condition("dh", "Running")
    tfjobs.api.delete(resource_path("", "v1", "pods", tfjobs.namespace, "dh-worker-1"))
    tfjobs.wait_for(lambda: any(p["metadata"]["name"] == "dh-worker-1" and p["metadata"]["uid"] != old["dh-worker-1"]
                                for p in tfjobs.pods("dh")), 5, "a replacement for the deleted pod")
    tfjobs.wait_pods("dh", 2)
    assert tfjobs.status("dh")["restartCount"] == 0


def node_of(tfjobs: Any, pod: str) -> str:
    return next(p["spec"]["nodeName"] for p in tfjobs.pods(pod.rsplit("-", 2)[0]) if p["metadata"]["name"] == pod)


@both_kinds
def test_node_not_ready_evicts_pods_and_they_are_recreated_elsewhere(tfjobs: Any) -> None:
    tfjobs.create("nr", worker=tfjobs.role(3))
    tfjobs.wait_pods("nr", 3)
    tfjobs.wait_condition("nr", "Running")
    victim = node_of(tfjobs, "nr-worker-0")
    on_victim = {p["metadata"]["name"]: p["metadata"]["uid"] for p in tfjobs.pods("nr") if p["spec"]["nodeName"] == victim}
    try:
        tfjobs.cluster.set_node_ready(victim, False)

        def replaced() -> bool:
            pods = {p["metadata"]["name"]: p for p in tfjobs.pods("nr", include_terminating=False)}
            return all(name in pods and pods[name]["metadata"]["uid"] != uid
                       and pods[name]["spec"].get("nodeName") not in (None, victim)
                       and pods[name]["status"].get("phase") == "Running" for name, uid in on_victim.items())
        tfjobs.wait_for(replaced, 90, f"pods on {victim} to be recreated on other nodes")
        tfjobs.wait_condition("nr", "Running")
        assert tfjobs.status("nr")["restartCount"] == 0
    finally:
        tfjobs.cluster.set_node_ready(victim, True)


@both_kinds
def test_pod_stuck_terminating_on_a_lost_node_is_force_deleted_and_recreated(tfjobs: Any, operator: Any) -> None:
    role = tfjobs.role(2)
    role["template"]["spec"]["terminationGracePeriodSeconds"] = 5
    tfjobs.create("ln", worker=role)
    tfjobs.wait_pods("ln", 2)
    victim = node_of(tfjobs, "ln-worker-1")
    old_uid = next(p["metadata"]["uid"] for p in tfjobs.pods("ln") if p["metadata"]["name"] == "ln-worker-1")
    try:
        tfjobs.cluster.lose_node(victim)
        # node-monitor grace (20 s) + eviction toleration + the pod's 5 s grace + our bound:
        bound = 20 + 15 + 5 + FORCE_DELETE_AFTER + 30

        def recreated() -> bool:
            pods = [p for p in tfjobs.pods("ln") if p["metadata"]["name"] == "ln-worker-1"]
            return bool(pods) and pods[0]["metadata"]["uid"] != old_uid and not pods[0]["metadata"].get(
                "deletionTimestamp") and pods[0]["spec"].get("nodeName") not in (None, victim)
        tfjobs.wait_for(recreated, bound, f"ln-worker-1 to be force-deleted from {victim} and recreated")
        assert 'tfjob_pods_deleted_total{reason="NodeNotReady"}' in operator.metrics()
    finally:
        tfjobs.cluster.recover_node(victim)
