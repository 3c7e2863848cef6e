"""Integration tests of the devcluster itself: the behaviour the operator's tests rely on.

Each test states one behaviour of the local control plane (scheduling onto fake nodes, exit
codes chosen by annotation, node failures, garbage collection, RBAC, etcd compaction, the
TensorFlowJob CRD) so that when an operator test fails, these show whether the ground under it
holds. Every wait polls with a deadline (devcluster.waiting.wait_for); none sleeps.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import pytest

from devcluster.api import ApiError
from devcluster.cluster import Cluster
from tests.support import jobs
from tests.support.jobs import DEVCLUSTER_IMAGE, SIM_EXIT_AFTER, SIM_EXIT_CODE, role, tfjob
from tests.support.polling import wait_for

RESTART_IN_PLACE = "sim.tensorflowjob.kubeflow.org/restart-in-place"
CRD_FILE = Path(__file__).resolve().parents[2] / "manifests" / "crd.yaml"


# ----------------------------------------------------------------------------- helpers


def pod_manifest(name: str, *, annotations: dict[str, str] | None = None, restart_policy: str = "Never",
                 node: str | None = None, requests: dict[str, str] | None = None) -> dict[str, Any]:
    """A bare pod; `requests` are also its limits, `node` pins it to that node."""
    tensorflow = jobs.container(DEVCLUSTER_IMAGE)
    if requests:
        tensorflow["resources"] = {"requests": requests, "limits": requests}
    spec: dict[str, Any] = {"restartPolicy": restart_policy}
    if node:
        spec["nodeSelector"] = {"kubernetes.io/hostname": node}
    return jobs.pod_manifest(name, annotations=annotations or {}, containers=[tensorflow], **spec)


def create(cluster: Cluster, namespace: str, manifest: dict[str, Any]) -> dict[str, Any]:
    return json.loads(cluster.kubectl("create", "-n", namespace, "-o", "json", "-f", "-",
                                      input=json.dumps(manifest)).stdout)


def get_pod(cluster: Cluster, namespace: str, name: str) -> dict[str, Any] | None:
    try:
        return cluster.api.get(f"/api/v1/namespaces/{namespace}/pods/{name}")
    except ApiError as error:
        if error.status == 404:
            return None
        raise


def get_node(cluster: Cluster, name: str) -> dict[str, Any]:
    return cluster.api.get(f"/api/v1/nodes/{name}")


def pod_in_phase(cluster: Cluster, namespace: str, name: str, phase: str) -> dict[str, Any] | None:
    pod = get_pod(cluster, namespace, name)
    return pod if pod and pod["status"].get("phase") == phase else None


def node_condition(node: dict[str, Any], kind: str = "Ready") -> str | None:
    for condition in node["status"].get("conditions") or []:
        if condition["type"] == kind:
            return condition["status"]
    return None


def node_taints(node: dict[str, Any]) -> set[tuple[str, str]]:
    return {(t["key"], t["effect"]) for t in node["spec"].get("taints") or []}


def terminated_state(pod: dict[str, Any]) -> dict[str, Any]:
    return pod["status"]["containerStatuses"][0]["state"]["terminated"]


def node_healthy(cluster: Cluster, name: str) -> bool:
    node = get_node(cluster, name)
    return node_condition(node) == "True" and not node_taints(node)


def parse_time(value: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))


# ----------------------------------------------------------------------------- pods


def test_pod_is_scheduled_onto_a_fake_node_and_runs(cluster: Cluster, namespace: str) -> None:
    create(cluster, namespace, pod_manifest("trainer", requests={"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": "2"}))

    pod = wait_for(lambda: pod_in_phase(cluster, namespace, "trainer", "Running"), 60, "pod trainer Running")

    assert pod["spec"]["nodeName"] in cluster.nodes
    assert {c["type"]: c["status"] for c in pod["status"]["conditions"]}["Ready"] == "True"
    assert pod["status"]["containerStatuses"][0]["state"]["running"]["startedAt"]
    assert pod["status"]["podIP"]


@pytest.mark.parametrize(("code", "phase"), [("0", "Succeeded"), ("3", "Failed")])
def test_exit_code_annotation_in_the_template_ends_the_pod(cluster: Cluster, namespace: str,
                                                           code: str, phase: str) -> None:
    create(cluster, namespace, pod_manifest("worker", annotations={SIM_EXIT_CODE: code}))

    pod = wait_for(lambda: pod_in_phase(cluster, namespace, "worker", phase), 60, f"pod worker {phase}")

    assert terminated_state(pod)["exitCode"] == int(code)
    assert terminated_state(pod)["reason"] == ("Completed" if code == "0" else "Error")


@pytest.mark.parametrize(("code", "phase"), [("0", "Succeeded"), ("3", "Failed")])
def test_exit_code_annotation_added_to_a_running_pod_ends_it(cluster: Cluster, namespace: str,
                                                             code: str, phase: str) -> None:
    create(cluster, namespace, pod_manifest("worker"))
    wait_for(lambda: pod_in_phase(cluster, namespace, "worker", "Running"), 60, "pod worker Running")

    cluster.kubectl("annotate", "-n", namespace, "pod", "worker", f"{SIM_EXIT_CODE}={code}")

    pod = wait_for(lambda: pod_in_phase(cluster, namespace, "worker", phase), 60, f"pod worker {phase}")
    assert terminated_state(pod)["exitCode"] == int(code)


@pytest.mark.parametrize("restart_policy", ["OnFailure", "Always"])
def test_exit_code_ends_the_pod_whatever_its_restart_policy(cluster: Cluster, namespace: str,
                                                            restart_policy: str) -> None:
    create(cluster, namespace,
           pod_manifest("worker", annotations={SIM_EXIT_CODE: "137"}, restart_policy=restart_policy))

    pod = wait_for(lambda: pod_in_phase(cluster, namespace, "worker", "Failed"), 60, "pod worker Failed")

    assert terminated_state(pod)["exitCode"] == 137
    assert pod["status"]["containerStatuses"][0]["restartCount"] == 0


def test_exit_after_counts_from_the_container_start(cluster: Cluster, namespace: str) -> None:
    create(cluster, namespace, pod_manifest("worker", annotations={SIM_EXIT_CODE: "0", SIM_EXIT_AFTER: "3s"}))

    pod = wait_for(lambda: pod_in_phase(cluster, namespace, "worker", "Succeeded"), 60, "pod worker Succeeded")

    state = terminated_state(pod)
    ran_for = parse_time(state["finishedAt"]) - parse_time(state["startedAt"])
    assert datetime.timedelta(seconds=3) <= ran_for < datetime.timedelta(seconds=30)


def test_restart_in_place_restarts_the_container_and_keeps_the_pod_running(cluster: Cluster,
                                                                          namespace: str) -> None:
    annotations = {SIM_EXIT_CODE: "137", SIM_EXIT_AFTER: "2s", RESTART_IN_PLACE: "true"}
    create(cluster, namespace, pod_manifest("worker", annotations=annotations, restart_policy="OnFailure"))

    def restarted() -> dict[str, Any] | None:
        pod = get_pod(cluster, namespace, "worker")
        statuses = (pod or {}).get("status", {}).get("containerStatuses") or [{}]
        return pod if statuses[0].get("restartCount", 0) >= 1 else None

    pod = wait_for(restarted, 60, "container of pod worker restarted in place")

    status = pod["status"]["containerStatuses"][0]
    assert pod["status"]["phase"] == "Running"
    assert status["lastState"]["terminated"]["exitCode"] == 137
    assert "running" in status["state"]


def test_deleted_pod_goes_away(cluster: Cluster, namespace: str) -> None:
    create(cluster, namespace, pod_manifest("worker"))
    wait_for(lambda: pod_in_phase(cluster, namespace, "worker", "Running"), 60, "pod worker Running")

    cluster.kubectl("delete", "-n", namespace, "pod", "worker", "--wait=false")

    wait_for(lambda: get_pod(cluster, namespace, "worker") is None, 30, "pod worker deleted")


# ----------------------------------------------------------------------------- nodes


def test_not_ready_node_is_tainted_and_its_pods_are_evicted_until_it_recovers(cluster: Cluster,
                                                                              namespace: str) -> None:
    node = cluster.nodes[-1]
    create(cluster, namespace, pod_manifest("victim", node=node))
    wait_for(lambda: pod_in_phase(cluster, namespace, "victim", "Running"), 60, "pod victim Running")
    try:
        cluster.set_node_ready(node, False)

        wait_for(lambda: node_condition(get_node(cluster, node)) == "False", 30, f"{node} NotReady")
        wait_for(lambda: ("node.kubernetes.io/not-ready", "NoExecute") in node_taints(get_node(cluster, node)),
                 60, f"{node} tainted not-ready:NoExecute")
        wait_for(lambda: get_pod(cluster, namespace, "victim") is None, 60, "pod victim evicted and deleted")
    finally:
        cluster.set_node_ready(node, True)

    wait_for(lambda: node_healthy(cluster, node), 60, f"{node} Ready again without taints")


def test_lost_node_turns_unknown_and_its_evicted_pods_stay_terminating(cluster: Cluster, namespace: str) -> None:
    node = cluster.nodes[-2]
    create(cluster, namespace, pod_manifest("victim", node=node))
    wait_for(lambda: pod_in_phase(cluster, namespace, "victim", "Running"), 60, "pod victim Running")

    cluster.lose_node(node)
    try:
        wait_for(lambda: node_condition(get_node(cluster, node)) == "Unknown", 90, f"{node} Ready=Unknown")
        wait_for(lambda: ("node.kubernetes.io/unreachable", "NoExecute") in node_taints(get_node(cluster, node)),
                 30, f"{node} tainted unreachable:NoExecute")
        pod = wait_for(lambda: (p := get_pod(cluster, namespace, "victim")) and p["metadata"].get("deletionTimestamp")
                       and p, 60, "pod victim evicted (deletionTimestamp set)")
        assert pod["status"]["phase"] == "Running"  # nobody confirms the deletion: stuck Terminating
    finally:
        cluster.recover_node(node)

    wait_for(lambda: get_pod(cluster, namespace, "victim") is None, 60, "pod victim deleted once the node is back")
    wait_for(lambda: node_healthy(cluster, node), 60, f"{node} Ready again without taints")


def test_restarted_kwok_takes_over_the_node_leases_at_once(cluster: Cluster) -> None:
    """A new KWOK process has a new identity; left alone it would wait 20 s for the old Leases to
    expire, while the controller-manager marks the silent nodes Unknown after 20 s."""
    path = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
    before = {lease["metadata"]["name"]: lease["spec"]["holderIdentity"] for lease in cluster.api.get(path)["items"]}
    cluster.restart_kwok()

    def all_taken_over() -> bool:
        holders = {lease["metadata"]["name"]: lease["spec"].get("holderIdentity")
                   for lease in cluster.api.get(path)["items"]}
        return all(holders.get(node) not in (None, before.get(node)) for node in cluster.nodes)
    wait_for(all_taken_over, 8, "every node Lease held by the new KWOK process well before the 20 s grace")
    assert all(node_healthy(cluster, node) for node in cluster.nodes)


# ----------------------------------------------------------------------------- control plane


def test_deleting_an_owner_garbage_collects_its_dependents(cluster: Cluster, namespace: str) -> None:
    owner = create(cluster, namespace, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner"}})
    dependent = pod_manifest("dependent")
    dependent["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
                                                 "uid": owner["metadata"]["uid"], "blockOwnerDeletion": True}]
    create(cluster, namespace, dependent)
    wait_for(lambda: pod_in_phase(cluster, namespace, "dependent", "Running"), 60, "pod dependent Running")

    cluster.kubectl("delete", "-n", namespace, "configmap", "owner", "--wait=false")

    wait_for(lambda: get_pod(cluster, namespace, "dependent") is None, 90, "pod dependent garbage-collected")


def test_service_account_needs_a_role_binding_to_read_pods(cluster: Cluster, namespace: str) -> None:
    cluster.kubectl("create", "-n", namespace, "serviceaccount", "reader")
    kubeconfig = cluster.service_account_kubeconfig(namespace, "reader")

    denied = cluster.kubectl("get", "-n", namespace, "pods", kubeconfig=kubeconfig, check=False)
    assert denied.returncode != 0
    assert "forbidden" in denied.stderr.lower()
    assert f"system:serviceaccount:{namespace}:reader" in denied.stderr

    cluster.kubectl("create", "-n", namespace, "role", "pod-reader", "--verb=get,list,watch", "--resource=pods")
    cluster.kubectl("create", "-n", namespace, "rolebinding", "reader", "--role=pod-reader",
                    f"--serviceaccount={namespace}:reader")

    wait_for(lambda: cluster.kubectl("get", "-n", namespace, "pods", kubeconfig=kubeconfig, check=False)
             .returncode == 0, 30, "the ServiceAccount allowed to list pods")


def test_compacted_etcd_makes_watches_from_older_versions_expire(cluster: Cluster, namespace: str) -> None:
    first = create(cluster, namespace, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "first"}})
    create(cluster, namespace, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "second"}})
    old_version = first["metadata"]["resourceVersion"]

    revision = cluster.compact_etcd()

    assert revision > int(old_version)
    watch = cluster.kubectl("get", "--raw", f"/api/v1/namespaces/{namespace}/configmaps"
                            f"?watch=1&resourceVersion={old_version}&timeoutSeconds=5")
    event = json.loads(watch.stdout.splitlines()[0])
    assert event["type"] == "ERROR"
    assert event["object"]["code"] == 410
    cluster.wait_ready()


def test_restarted_etcd_and_apiserver_keep_the_cluster_state(cluster: Cluster, namespace: str) -> None:
    create(cluster, namespace, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kept"},
                                "data": {"key": "value"}})

    cluster.restart_etcd()
    cluster.restart_apiserver()

    kept = cluster.api.get(f"/api/v1/namespaces/{namespace}/configmaps/kept")
    assert kept["data"] == {"key": "value"}
    cluster.wait_ready()
    create(cluster, namespace, pod_manifest("after-restart"))
    wait_for(lambda: pod_in_phase(cluster, namespace, "after-restart", "Running"), 60, "new pod Running")


# ----------------------------------------------------------------------------- TensorFlowJob CRD


@pytest.fixture(scope="module")
def tfjob_crd(cluster: Cluster) -> str:
    """The TensorFlowJob CRD from manifests/crd.yaml, installed and Established."""
    assert CRD_FILE.exists(), f"{CRD_FILE} is missing: generate it with `python hack/gen_crd.py`"
    cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(CRD_FILE))
    name = "tensorflowjobs.kubeflow.org"

    def established() -> bool:
        crd = cluster.api.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
        return any(c["type"] == "Established" and c["status"] == "True"
                   for c in crd.get("status", {}).get("conditions") or [])

    wait_for(established, 60, f"CRD {name} Established")
    return name


def test_tensorflowjob_crd_is_established_and_served_to_kubectl(cluster: Cluster, tfjob_crd: str,
                                                                namespace: str) -> None:
    served = cluster.kubectl("api-resources", "--api-group=kubeflow.org", "-o", "name")
    assert "tensorflowjobs.kubeflow.org" in served.stdout

    create(cluster, namespace, tfjob("mnist", {"worker": role(2, image=DEVCLUSTER_IMAGE)}))

    listed = cluster.kubectl("get", "tfjob", "-n", namespace)
    assert "mnist" in listed.stdout


@pytest.mark.parametrize(("spec", "field"), [
    ({"chief": role(2, image=DEVCLUSTER_IMAGE), "worker": role(1, image=DEVCLUSTER_IMAGE)},
     "spec.chief.replicas: Invalid value"),
    ({"ps": role(1, image=DEVCLUSTER_IMAGE)}, "spec: Invalid value: at least one of spec.chief or spec.worker"),
    ({"worker": role(1, image="")}, "spec.worker.template.spec.containers[0].image: Invalid value"),
], ids=["chief-replicas-2", "no-chief-no-worker", "container-with-empty-image"])
def test_invalid_tensorflowjob_is_rejected_at_apply_naming_the_field(cluster: Cluster, tfjob_crd: str,
                                                                     namespace: str, spec: dict[str, Any],
                                                                     field: str) -> None:
    result = cluster.kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(tfjob("bad", spec)), check=False)

    assert result.returncode != 0
    assert "is invalid" in result.stderr
    assert field in result.stderr
