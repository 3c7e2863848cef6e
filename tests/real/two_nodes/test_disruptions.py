"""Real training through the ways a cluster takes pods back, on two real nodes with real TensorFlow: the
all-reduce example (`restartScope: All`, PreemptionCheckpointHandler) and the parameter-server example
(the chief saves on SIGTERM itself), each through

* a Kueue preemption: a higher-priority job takes the queue's whole quota, Kueue preempts the running
  job's Workload (every pod deleted at once with its grace period), and re-admits it once the other
  finished;
* `kubectl drain` of the node running a worker (the Eviction API);
* a kubelet eviction: a worker's emptyDir filled past its `sizeLimit`, which the kubelet's eviction
  manager answers by evicting the pod (Failed, `Evicted`, `DisruptionTarget` TerminationByKubelet);
* the node running a worker lost without notice: its kubelet stopped and its containers killed.

Each checks what the training and the job show, not how fast: the job Succeeds with every epoch
trained, nothing is counted against `backoffLimit` (`restartCount` 0), and where the program saves on
SIGTERM it resumes from the step its checkpoint was written at (so at most the checkpoint interval is
lost: one step for all-reduce, one epoch for the parameter-server chief). A parameter-server job whose
chief keeps running (a worker taken) runs every epoch exactly once. What each run cost (steps lost, the
seconds until training again by the operator's `lastResume`, ...) is printed and appended to a JSON
lines file (training.RESULTS) for bench/RESULTS.md.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import yaml

from controller.kueue import protocol as kq
from devcluster import hostnet, realnodes
from devcluster.cluster import Cluster
from devcluster.kueue import Kueue
from tests.real.follow import JobLogs
from tests.real.jobs import job_of
from tests.real.kubectl import Kubectl, wait_for
from tests.real.reporting import IMAGE
from tests.real.two_nodes import training
from tests.real.two_nodes.training import ALLREDUCE, EXAMPLES, Cost, Example
from tests.support.operator import Operator
from tfjob_api.timeutil import parse_time, utcnow

pytestmark = pytest.mark.timeout(1800)  # a run, its disruption and its repair take minutes on two busy cores
TIMEOUT = 900.0
SCRATCH_LIMIT = "32Mi"
FILL_MIB = 128


def finished(kubectl: Kubectl, name: str) -> str:
    state = kubectl.state(name)
    return state if state in ("Succeeded", "Failed") else ""


def node_ready(kubectl: Kubectl, node: str) -> str:
    return kubectl("get", "node", node, "-o", "jsonpath={.status.conditions[?(@.type=='Ready')].status}").stdout


def train_through(kubectl: Kubectl, real_cluster: Cluster, example: Example, disruption: str, name: str,
                  disrupt: Callable[[], set[str]], restore: Callable[[], None], notes: list[str] | None = None) -> Cost:
    """Follow the job; once the operator has read two epochs' progress, `disrupt` (it returns the UIDs
    of the pods it takes); once the training trains again (the job resumed, or for a chief that kept
    running, the taken pods replaced by Running ones), `restore` what the disruption took from the
    cluster; wait for the end and read what it cost."""
    interrupted = example.file == ALLREDUCE.file or disruption == "kueue"  # else the parameter-server chief trains on
    cost = Cost(example.file, disruption)
    with JobLogs(real_cluster, kubectl.namespace, name) as logs:
        wait_for(lambda: (training.progress(kubectl, name).get("step") or 0) >= 2 * example.steps_per_epoch,
                 TIMEOUT, f"{name}'s progress of two epochs in its status")
        disrupted_at = utcnow().replace(microsecond=0)
        with training.PodLogs(kubectl, name) as before:
            try:
                taken = disrupt()
                if interrupted:
                    def resumed() -> bool:
                        resume = training.progress(kubectl, name).get("lastResume") or {}
                        moment = parse_time(resume.get("time"))
                        return moment is not None and moment >= disrupted_at
                    wait_for(lambda: resumed() or finished(kubectl, name), TIMEOUT, f"{name} to train again")
                else:
                    def back() -> bool:
                        running = {p["metadata"]["uid"] for p in kubectl.pods(name)
                                   if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")}
                        return len(running) == 4 and not running & taken
                    wait_for(lambda: back() or finished(kubectl, name), TIMEOUT, f"{name}'s taken worker back")
            finally:
                restore()
        state = wait_for(lambda: finished(kubectl, name), TIMEOUT, f"{name} to finish")
    stamped = kubectl("logs", "--timestamps", f"{name}-{example.reporter}", check=False).stdout.splitlines()
    reporter = cost.read(example, kubectl.job(name)["status"], stamped, logs.output + before.output, disrupted_at)
    cost.event = training.resumed_event(kubectl, name)
    cost.notes.extend(notes or [])
    if cost.restart_count:  # what was counted, in the job's own words
        events = kubectl.json("events", "--field-selector", f"involvedObject.name={name}")["items"]
        cost.notes.extend(f"{e.get('reason')}: {str(e.get('message'))[:300]}" for e in events
                          if e.get("reason") not in ("SuccessfulCreate", "SuccessfulDelete", "JobRunning"))
    cost.record()
    assert state == "Succeeded", f"{name} ended {state}:\n{logs.output[-4000:]}"
    assert cost.restart_count == 0, kubectl.job(name)["status"]
    assert cost.finished_epochs == example.epochs, f"{name}'s last epoch {cost.finished_epochs}:\n{reporter[-20:]}"
    assert any("TRAINING DONE" in line for line in reporter), reporter[-20:]
    if not interrupted:
        epochs = [int(m[1]) for line in reporter if (m := re.match(r"epoch (\d+)/", line))]
        assert epochs == list(range(1, example.epochs + 1)), "the chief ran an epoch twice or skipped one"
    return cost


def check_resumed_from_its_sigterm_checkpoint(cost: Cost, example: Example) -> None:
    assert cost.resumed_at is not None, cost
    assert cost.saved_at is not None, f"no checkpoint written on SIGTERM: {cost}"
    assert cost.resumed_at == cost.saved_at, cost
    assert cost.steps_lost is not None and cost.steps_lost <= example.checkpoint_interval, cost


def victim_on(kubectl: Kubectl, name: str, node: str) -> dict[str, Any]:
    """The one worker on `node` (the placement puts one worker on each node)."""
    where = [(p["metadata"]["name"], p["spec"].get("nodeName")) for p in kubectl.pods(name)]
    on_node = training.pods_on(kubectl, name, node)
    assert len(on_node) == 1, f"one worker on {node}: {where}"
    return on_node[0]


EXAMPLE_NAMES = list(EXAMPLES)


def nothing() -> None:
    pass


# ---------------------------------------------------------------------------------------------- Kueue

@pytest.fixture(scope="module")
def kueue(real_cluster: Cluster, operator: Operator) -> Iterator[Kueue]:
    """Kueue's manager against the two-node cluster, its priority classes and flavor, and the operator
    started again after it (it uses Kueue when Kueue's API is served at its start)."""
    manager = Kueue(real_cluster)
    manager.start()
    objects = [{"apiVersion": kq.API_VERSION, "kind": "WorkloadPriorityClass", "metadata": {"name": n}, "value": v}
               for n, v in (("high", 1000), ("low", 100))]
    objects.append({"apiVersion": kq.API_VERSION, "kind": "ResourceFlavor", "metadata": {"name": "default-flavor"},
                    "spec": {}})
    real_cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(objects))
    operator.stop()
    operator.start()
    yield manager
    manager.stop()
    operator.stop()
    operator.start()


def cpu_millis(job: dict[str, Any]) -> int:
    """What the job's pods request in CPU, in millicores."""
    total = 0
    for role in ("chief", "ps", "worker", "evaluator"):
        if role in job["spec"]:
            request = str(job["spec"][role]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"])
            millis = int(request[:-1]) if request.endswith("m") else int(float(request) * 1000)
            total += millis * int(job["spec"][role].get("replicas", 1))
    return total


def queue(kubectl: Kubectl, real_cluster: Cluster, cpu: str) -> None:
    """A ClusterQueue of the namespace's own with `cpu` of quota (preempting lower priorities) and its
    LocalQueue `lq`, both Active."""
    cluster_queue = f"cq-{kubectl.namespace}"
    real_cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all([
        {"apiVersion": kq.API_VERSION, "kind": "ClusterQueue", "metadata": {"name": cluster_queue},
         "spec": {"namespaceSelector": {}, "preemption": {"withinClusterQueue": "LowerPriority"},
                  "resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [
                      {"name": "default-flavor", "resources": [{"name": "cpu", "nominalQuota": cpu},
                                                               {"name": "memory", "nominalQuota": "64Gi"}]}]}]}},
        {"apiVersion": kq.API_VERSION, "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": kubectl.namespace},
         "spec": {"clusterQueue": cluster_queue}}]))
    for kind, name, where in (("clusterqueue", cluster_queue, ()), ("localqueue", "lq", ("-n", kubectl.namespace))):
        wait_for(lambda kind=kind, name=name, where=where: "True" in real_cluster.kubectl(  # type: ignore[misc]
            "get", kind, name, *where, "-o", "jsonpath={.status.conditions[?(@.type=='Active')].status}",
            check=False).stdout, 60, f"{kind} {name} Active")


def urgent_job(cpu_millicores: int) -> dict[str, Any]:
    """A high-priority job that needs the queue's whole CPU quota for 20 s."""
    container = {"name": "tensorflow", "image": IMAGE, "imagePullPolicy": "IfNotPresent",
                 "command": ["python", "-c", "import time; time.sleep(20)"],
                 "resources": {"requests": {"cpu": f"{cpu_millicores}m", "memory": "64Mi"}}}
    return {"apiVersion": "kubeflow.org/v1", "kind": "TensorFlowJob",
            "metadata": {"name": "urgent", "labels": {kq.QUEUE_LABEL: "lq", kq.PRIORITY_CLASS_LABEL: "high"}},
            "spec": {"worker": {"replicas": 1, "restartPolicy": "Never", "template": {"spec": {
                "terminationGracePeriodSeconds": 2, "containers": [container]}}}}}


@pytest.mark.parametrize("example_name", EXAMPLE_NAMES)
def test_a_job_preempted_by_kueue_for_a_higher_priority_one_resumes_from_its_checkpoint_uncounted(
        example_name: str, kubectl: Kubectl, real_cluster: Cluster, kueue: Kueue) -> None:
    example = EXAMPLES[example_name]
    stays = real_cluster.real_nodes[0]
    job = training.prepared(example, job_of(example.file), stays)
    millis = cpu_millis(job)
    queue(kubectl, real_cluster, f"{millis}m")
    name = training.apply(kubectl, example, stays, labels={kq.QUEUE_LABEL: "lq", kq.PRIORITY_CLASS_LABEL: "low"})

    def preempt() -> set[str]:
        taken = {p["metadata"]["uid"] for p in kubectl.pods(name)}
        kubectl("apply", "-f", "-", input=yaml.safe_dump(urgent_job(millis)))
        wait_for(lambda: kubectl.state(name) == "Suspended", 120, f"{name} preempted (Suspended)")
        return taken
    cost = train_through(kubectl, real_cluster, example, "kueue", name, preempt, nothing)
    assert kubectl.state("urgent") == "Succeeded"
    check_resumed_from_its_sigterm_checkpoint(cost, example)
    assert cost.event, "no TrainingResumed event"


# ---------------------------------------------------------------------------------------------- drain

@pytest.mark.parametrize("example_name", EXAMPLE_NAMES)
def test_a_drain_of_a_workers_node_costs_at_most_a_checkpoint_interval_uncounted(
        example_name: str, kubectl: Kubectl, real_cluster: Cluster, operator: Operator) -> None:
    example = EXAMPLES[example_name]
    stays, drained = real_cluster.real_nodes
    name = training.apply(kubectl, example, stays)

    def drain() -> set[str]:
        victim = victim_on(kubectl, name, drained)
        kubectl("drain", drained, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=300s", timeout=330)
        return {victim["metadata"]["uid"]}

    def uncordon() -> None:
        kubectl("uncordon", drained)
    cost = train_through(kubectl, real_cluster, example, "drain", name, drain, uncordon)
    if example.file == ALLREDUCE.file:
        check_resumed_from_its_sigterm_checkpoint(cost, example)


# ------------------------------------------------------------------------------------ kubelet eviction

@pytest.mark.parametrize("example_name", EXAMPLE_NAMES)
def test_a_worker_evicted_by_its_kubelet_is_replaced_uncounted_and_the_job_succeeds(
        example_name: str, kubectl: Kubectl, real_cluster: Cluster, operator: Operator) -> None:
    # Twice the epochs: filling the volume and the kubelet's next look at it take a while, and the
    # training must still be on when the job resumes, for the operator to read where it resumed.
    example = dataclasses.replace(EXAMPLES[example_name], epochs=2 * EXAMPLES[example_name].epochs)
    stays, other = real_cluster.real_nodes
    name = training.apply(kubectl, example, stays, scratch_limit=SCRATCH_LIMIT)
    notes: list[str] = []

    def fill_scratch() -> set[str]:
        victim = victim_on(kubectl, name, other)["metadata"]
        kubectl("exec", victim["name"], "--", "sh", "-c",
                f"head -c {FILL_MIB}M /dev/zero > /scratch/fill", timeout=120)

        def evicted() -> str:
            """The kubelet's Evicted event for the victim (the operator may delete the Failed pod at once)."""
            events = kubectl.json("events", "--field-selector", f"involvedObject.uid={victim['uid']},reason=Evicted")
            return str(events["items"][0].get("message") or "evicted") if events["items"] else ""
        message = wait_for(evicted, 300, f"the kubelet to evict {victim['name']}")
        notes.append(f"the kubelet: {message}")
        return {victim["uid"]}
    train_through(kubectl, real_cluster, example, "kubelet-eviction", name, fill_scratch, nothing, notes)


# ------------------------------------------------------------------------------------------ node lost

# Under all-reduce the surviving worker loses its peer's process at once and is restarted in place by
# its kubelet before the API shows the node NotReady: that restart must wait to count, and the group
# restart for the lost node must take it first (restartCount 0, which train_through asserts).
@pytest.mark.parametrize("example_name", EXAMPLE_NAMES)
def test_a_node_lost_without_notice_under_training_costs_no_restart_and_the_job_succeeds(
        example_name: str, kubectl: Kubectl, real_cluster: Cluster, operator: Operator) -> None:
    example = EXAMPLES[example_name]
    stays, lost = real_cluster.real_nodes
    name = training.apply(kubectl, example, stays)
    node = realnodes.nodes_of(real_cluster.layout, real_cluster.state)[1]

    def lose() -> set[str]:
        victim = victim_on(kubectl, name, lost)
        real_cluster.stop_component(node.kubelet_component)
        hostnet.kill_containers(node.containerd_socket)
        return {victim["metadata"]["uid"]}

    def bring_back() -> None:
        real_cluster.start_component(node.kubelet_component, timeout=120.0)
        wait_for(lambda: node_ready(kubectl, lost) == "True", 180, f"{lost} Ready again")
    train_through(kubectl, real_cluster, example, "node-lost", name, lose, bring_back)
