"""Running the operator like production: leader election between real processes,
metrics and readiness over HTTP, and the manifests' least-privilege RBAC enforced by the API server.

Every test pauses the session-wide operator (`no_session_operator`) and starts its own processes,
so the reconcilers under test are the only ones. Elections use short timings (4 s lease, 3 s renew
deadline, 0.5 s retry) so hand-overs take seconds; the Lease lives in the test's namespace.
"""

from __future__ import annotations

import copy
import json
import pathlib
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from devcluster.cluster import Cluster
from devcluster.components import COMPONENTS
from kube import ApiError, Kube, resource_path
from tests.support.jobs import devcluster_role
from tests.support.polling import wait_for

from .conftest import ROOT, Operator, TfJobs

pytestmark = pytest.mark.usefixtures("no_session_operator")

LEASE_NAME = "tfjob-operator"
STATUS_403 = re.compile(r"(?<![\d.])403(?!\d)")
FAST_ELECTION = ["--lease-duration", "4", "--renew-deadline", "3", "--retry-period", "0.5"]


def election(namespace: str, timings: list[str] = FAST_ELECTION) -> list[str]:
    return ["--leader-elect", "--leader-election-namespace", namespace, *timings]


# ---- reading an operator from the outside ----------------------------------------------------------


def current_log(operator: Operator) -> list[str]:
    """The log lines of the operator's current run (log files are appended to across runs)."""
    lines = operator.log_path.read_text(errors="replace").splitlines()
    starts = [i for i, line in enumerate(lines) if '"event": "starting"' in line]
    return lines[starts[-1]:] if starts else lines


def log_events(operator: Operator) -> list[dict[str, Any]]:
    events = []
    for line in current_log(operator):
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events


def identity(operator: Operator) -> str:
    def starting() -> str | None:
        return next((e["identity"] for e in log_events(operator) if e.get("event") == "starting"
                     and e.get("identity")), None)
    return wait_for(starting, 30, f"the identity in {operator.log_path}")


def reconciles(operator: Operator, key: str) -> int:
    return sum(1 for e in log_events(operator) if e.get("event") == "reconciled" and e.get("job") == key)


def lease_spec(api: Kube, namespace: str) -> dict[str, Any]:
    try:
        return api.get(resource_path("coordination.k8s.io", "v1", "leases", namespace, LEASE_NAME))["spec"]
    except ApiError as error:
        if error.not_found:
            return {}
        raise


def leader_and_standby(api: Kube, namespace: str, first: Operator, second: Operator) -> tuple[Operator, Operator]:
    names = {identity(first): first, identity(second): second}
    holder = wait_for(lambda: lease_spec(api, namespace).get("holderIdentity") in names
                      and lease_spec(api, namespace)["holderIdentity"], 30, "one of the two to hold the Lease")
    leader = names[holder]
    return leader, (second if leader is first else first)


def samples(operator: Operator) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    values = {}
    for family in text_string_to_metric_families(operator.metrics()):
        for sample in family.samples:
            values[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return values


def value(metrics: dict[tuple[str, frozenset[tuple[str, str]]], float], metric: str, /, **labels: str) -> float:
    return metrics.get((metric, frozenset(labels.items())), 0.0)


def families(operator: Operator) -> set[str]:
    return {family.name for family in text_string_to_metric_families(operator.metrics())}


def http_status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def succeeding_job(tfjobs: TfJobs, name: str, workers: int = 2, **spec: Any) -> None:
    tfjobs.create(name, worker=devcluster_role(workers, exit_code=0, exit_after="2s"), **spec)


# ---- leader election -------------------------------------------------------------------------------


def test_only_the_lease_holder_reconciles(start_operator: Callable[..., Operator], tfjobs_no_operator: TfJobs,
                                          api: Kube, namespace: str) -> None:
    first = start_operator(election(namespace))
    second = start_operator(election(namespace))
    leader, standby = leader_and_standby(api, namespace, first, second)

    succeeding_job(tfjobs_no_operator, "one")
    tfjobs_no_operator.wait_condition("one", "Succeeded", timeout=60)

    key = f"{namespace}/one"
    assert reconciles(leader, key) > 0, leader.tail()
    assert reconciles(standby, key) == 0, standby.tail()
    assert lease_spec(api, namespace)["holderIdentity"] == identity(leader)
    assert standby.ready(), "a healthy standby is ready, so it can take over at once"
    assert value(samples(leader), "tfjob_leader") == 1
    assert value(samples(standby), "tfjob_leader") == 0


def test_killing_the_leader_hands_over_and_a_job_submitted_meanwhile_completes_within_20s(
        start_operator: Callable[..., Operator], tfjobs_no_operator: TfJobs, api: Kube, namespace: str) -> None:
    first = start_operator(election(namespace))
    second = start_operator(election(namespace))
    leader, standby = leader_and_standby(api, namespace, first, second)
    transitions = lease_spec(api, namespace).get("leaseTransitions", 0)

    leader.kill()
    killed = time.monotonic()
    succeeding_job(tfjobs_no_operator, "meanwhile")
    tfjobs_no_operator.wait_condition("meanwhile", "Succeeded", timeout=20)

    assert time.monotonic() - killed <= 20
    spec = lease_spec(api, namespace)
    assert spec["holderIdentity"] == identity(standby)
    assert spec["leaseTransitions"] == transitions + 1
    assert reconciles(standby, f"{namespace}/meanwhile") > 0, standby.tail()
    assert value(samples(standby), "tfjob_leader") == 1


def test_a_stopped_leader_releases_the_lease_so_the_standby_takes_over_well_before_it_expires(
        start_operator: Callable[..., Operator], api: Kube, namespace: str) -> None:
    client_go_timings = ["--lease-duration", "15", "--renew-deadline", "10", "--retry-period", "0.5"]
    first = start_operator(election(namespace, client_go_timings))
    second = start_operator(election(namespace, client_go_timings))
    leader, standby = leader_and_standby(api, namespace, first, second)

    leader.stop()
    stopped = time.monotonic()
    wait_for(lambda: lease_spec(api, namespace).get("holderIdentity") == identity(standby), 15,
             "the standby to hold the Lease")

    assert time.monotonic() - stopped < 5, "took over by release, not by waiting out the 15 s lease"
    assert leader.process is not None and leader.process.returncode == 0
    assert any(e.get("event") == "released leader lease" for e in log_events(leader))


def test_a_leader_that_loses_its_lease_exits_non_zero(start_operator: Callable[..., Operator], api: Kube,
                                                      namespace: str) -> None:
    operator = start_operator(election(namespace))
    wait_for(lambda: lease_spec(api, namespace).get("holderIdentity") == identity(operator), 30,
             "the operator to hold the Lease")

    now = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
    api.patch(resource_path("coordination.k8s.io", "v1", "leases", namespace, LEASE_NAME),
              {"spec": {"holderIdentity": "someone-else", "renewTime": now, "leaseDurationSeconds": 60}})

    assert operator.process is not None
    operator.process.wait(timeout=15)
    assert operator.process.returncode == 1
    assert any(e.get("event") == "lost the leader lease; exiting so the process restarts clean"
               for e in log_events(operator)), operator.tail()


# ---- metrics and readiness -------------------------------------------------------------------------


def test_metrics_count_a_job_its_pods_reconciles_queue_and_api_requests(
        start_operator: Callable[..., Operator], tfjobs_no_operator: TfJobs) -> None:
    # Only this namespace, so leftovers of earlier tests elsewhere do not move the counters.
    operator = start_operator(["--namespace", tfjobs_no_operator.namespace])
    before = samples(operator)

    # The worker finishes; the parameter server keeps running and is deleted on success (cleanPodPolicy Running).
    tfjobs_no_operator.create("counted", worker=devcluster_role(1, exit_code=0, exit_after="2s"), ps=devcluster_role(1))
    tfjobs_no_operator.wait_condition("counted", "Succeeded", timeout=60)
    tfjobs_no_operator.wait_for(lambda: tfjobs_no_operator.pod_names("counted", "ps") == [], 30,
                                "the ps pod to be deleted")

    def moved() -> dict[str, float]:
        after = samples(operator)
        return {
            "jobs created": value(after, "tfjob_jobs_created_total") - value(before, "tfjob_jobs_created_total"),
            "jobs succeeded": value(after, "tfjob_jobs_succeeded_total") - value(before, "tfjob_jobs_succeeded_total"),
            "pods created": value(after, "tfjob_pods_created_total") - value(before, "tfjob_pods_created_total"),
            "pods deleted": sum(v for (name, _), v in after.items() if name == "tfjob_pods_deleted_total")
            - sum(v for (name, _), v in before.items() if name == "tfjob_pods_deleted_total"),
            "reconciles": sum(v for (name, _), v in after.items() if name == "tfjob_reconcile_duration_seconds_count")
            - sum(v for (name, _), v in before.items() if name == "tfjob_reconcile_duration_seconds_count"),
            "queue adds": value(after, "workqueue_adds_total", name="tensorflowjobs")
            - value(before, "workqueue_adds_total", name="tensorflowjobs"),
            "pod creates": value(after, "tfjob_api_requests_total", verb="create", resource="pods", code="201")
            - value(before, "tfjob_api_requests_total", verb="create", resource="pods", code="201"),
            "status patches": value(after, "tfjob_api_requests_total", verb="patch",
                                    resource="tensorflowjobs/status", code="200")
            - value(before, "tfjob_api_requests_total", verb="patch", resource="tensorflowjobs/status", code="200"),
        }

    deltas = wait_for(lambda: (d := moved())["pods deleted"] >= 1 and d, 10, "the pod deletion to be counted")
    assert deltas["jobs created"] == 1
    assert deltas["jobs succeeded"] == 1
    assert deltas["pods created"] == 2
    assert deltas["pods deleted"] == 1
    assert deltas["pod creates"] == 2
    assert deltas["reconciles"] >= 3
    assert deltas["queue adds"] >= 3
    assert deltas["status patches"] >= 2  # Running, then Succeeded
    exported = families(operator)
    assert {"tfjob_jobs_failed", "tfjob_jobs_restarted", "tfjob_informer_relists", "tfjob_leader",
            "tfjob_api_request_duration_seconds", "workqueue_depth", "workqueue_retries",
            "workqueue_queue_duration_seconds", "workqueue_work_duration_seconds",
            "workqueue_unfinished_work_seconds", "workqueue_longest_running_processor_seconds"} <= exported


# ---- RBAC: the manifests' roles, enforced --------------------------------------------------------------


def manifest_objects(relative: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all((ROOT / "manifests" / relative).read_text()) if doc]


class Grants:
    """The manifests' ClusterRole (under a unique name) and leader-election Role, bound to a
    ServiceAccount in the test namespace; cluster-scoped objects are deleted afterwards."""

    def __init__(self, api: Kube, namespace: str, account: str) -> None:
        self.api, self.namespace, self.account = api, namespace, account
        self.cluster_name = f"tfjob-operator-{namespace}"
        self.subject = {"kind": "ServiceAccount", "name": account, "namespace": namespace}

    def create_account(self) -> None:
        self.api.create(resource_path("", "v1", "serviceaccounts", self.namespace),
                        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": self.account}})

    def grant_operator_roles(self) -> None:
        rbac = "rbac.authorization.k8s.io"
        [cluster_role] = manifest_objects("rbac/clusterrole.yaml")
        cluster_role = copy.deepcopy(cluster_role)
        cluster_role["metadata"] = {"name": self.cluster_name}
        self.api.create(resource_path(rbac, "v1", "clusterroles"), cluster_role)
        self.api.create(resource_path(rbac, "v1", "clusterrolebindings"), {
            "apiVersion": f"{rbac}/v1", "kind": "ClusterRoleBinding", "metadata": {"name": self.cluster_name},
            "roleRef": {"apiGroup": rbac, "kind": "ClusterRole", "name": self.cluster_name},
            "subjects": [self.subject]})
        for obj in manifest_objects("operator/leader-election-rbac.yaml"):
            obj = copy.deepcopy(obj)
            obj["metadata"]["namespace"] = self.namespace
            if obj["kind"] == "RoleBinding":
                obj["subjects"] = [self.subject]
            plural = "roles" if obj["kind"] == "Role" else "rolebindings"
            self.api.create(resource_path(rbac, "v1", plural, self.namespace), obj)

    def delete(self) -> None:
        rbac = "rbac.authorization.k8s.io"
        for plural in ("clusterrolebindings", "clusterroles"):
            try:
                self.api.delete(resource_path(rbac, "v1", plural, None, self.cluster_name))
            except ApiError as error:
                if not error.not_found:
                    raise


@pytest.fixture
def grants(api: Kube, namespace: str) -> Iterator[Grants]:
    created = Grants(api, namespace, "tfjob-operator")
    created.create_account()
    yield created
    created.delete()


@pytest.fixture
def operators_as(request: pytest.FixtureRequest) -> Iterator[Callable[..., Operator]]:
    """Start operators with a given kubeconfig (stopped at the end of the test)."""
    started: list[Operator] = []

    def start(kubeconfig: pathlib.Path, extra: list[str] | None = None, wait_ready: bool = True) -> Operator:
        operator = Operator(str(kubeconfig), f"{request.node.name}-{len(started)}", extra)
        operator.log_path.unlink(missing_ok=True)  # so nothing from an earlier run is read as this run's
        started.append(operator)
        return operator.start(wait_ready)

    yield start
    for operator in started:
        operator.stop()


def forbidden_lines(operator: Operator) -> list[str]:
    # A whole-number 403 only: a timestamp's microseconds (".540332Z") once matched a bare "403".
    return [line for line in current_log(operator) if STATUS_403.search(line) or "forbidden" in line.lower()]


def test_readyz_is_not_ready_until_the_caches_sync(cluster: Any, crd: None, grants: Grants,
                                                   operators_as: Callable[..., Operator]) -> None:
    # Without permissions the informers' lists fail, so the caches cannot sync.
    kubeconfig = cluster.service_account_kubeconfig(grants.namespace, grants.account)
    operator = operators_as(kubeconfig, wait_ready=False)
    wait_for(lambda: any(e.get("event") == "list failed" and e.get("status") == 403 for e in log_events(operator)),
             30, "a list refused with 403")
    health = f"http://127.0.0.1:{operator.health_port}"

    assert http_status(f"{health}/readyz") == 503
    assert http_status(f"{health}/healthz") == 200

    grants.grant_operator_roles()
    # Refused lists back off like client-go's (0.8 s doubling to 30 s, plus up to 100 % jitter).
    wait_for(operator.ready, 120, "/readyz once the informers can list")
    assert http_status(f"{health}/readyz") == 200


def test_operator_with_the_manifests_roles_runs_a_job_to_success_and_cleanup_without_403(
        cluster: Any, crd: None, grants: Grants, operators_as: Callable[..., Operator],
        tfjobs_no_operator: TfJobs) -> None:
    grants.grant_operator_roles()
    kubeconfig = cluster.service_account_kubeconfig(grants.namespace, grants.account)
    operator = operators_as(kubeconfig, election(grants.namespace))
    jobs = tfjobs_no_operator

    # Exercises every granted verb: list/watch jobs, pods, services and nodes; create pods, the
    # service and events; patch status; delete the running ps pod on success; delete the job (TTL).
    jobs.create("least", worker=devcluster_role(2, exit_code=0, exit_after="3s"), ps=devcluster_role(1),
                ttlSecondsAfterFinished=2)
    jobs.wait_condition("least", "Running", timeout=60)
    jobs.wait_condition("least", "Succeeded", timeout=60)
    assert jobs.service("least") is not None
    jobs.wait_for(lambda: jobs.get("least") is None, 60, "the TTL to delete the job")

    assert lease_spec(grants.api, grants.namespace)["holderIdentity"] == identity(operator)
    assert any(e["reason"] == "JobSucceeded" for e in jobs.events("least"))
    refused = {k: v for k, v in samples(operator).items() if k[0] == "tfjob_api_requests_total"
               and ("code", "403") in k[1]}
    assert refused == {}
    assert forbidden_lines(operator) == []


def test_the_operators_identity_cannot_read_secrets(cluster: Any, grants: Grants) -> None:
    grants.grant_operator_roles()
    kubeconfig = cluster.service_account_kubeconfig(grants.namespace, grants.account)

    for scope in (["-n", grants.namespace], ["-n", "kube-system"], ["--all-namespaces"]):
        answer = cluster.kubectl("get", "secrets", *scope, kubeconfig=kubeconfig, check=False)
        assert answer.returncode != 0
        assert "forbidden" in answer.stderr.lower(), answer.stderr
    can_i = cluster.kubectl("auth", "can-i", "get", "secrets", "--all-namespaces", kubeconfig=kubeconfig, check=False)
    assert can_i.stdout.strip() == "no"
    # ...while what it needs is allowed, through the same identity.
    allowed = cluster.kubectl("auth", "can-i", "create", "pods", "-n", grants.namespace, kubeconfig=kubeconfig,
                              check=False)
    assert allowed.stdout.strip() == "yes"


# ---- the README's first command ------------------------------------------------------------------------


def test_the_demo_runs_an_example_job_to_success_on_a_fresh_cluster_within_its_time_limit(
        tmp_path: pathlib.Path) -> None:
    # What `make run` does on a fresh clone, non-interactively: its own cluster in a new folder,
    # started, used and stopped again (--down), all within the demo's own time limit.
    folder = tmp_path / "demo-cluster"
    started = time.monotonic()
    demo = subprocess.run([sys.executable, "-m", "devcluster.cli", "demo", "--dir", str(folder), "--non-interactive",
                           "--timeout", "240", "--down"], cwd=ROOT, capture_output=True, text=True, timeout=300)

    output = demo.stdout
    assert demo.returncode == 0, output + demo.stderr
    assert time.monotonic() - started < 240
    assert "Starting a local control plane" in output
    view = output[output.index("kubectl get tfjob -n tfjob-demo -w"):].split("\n\n")[0].splitlines()
    assert view[1].split() == ["NAME", "STATE", "WORKERS", "PS", "RESTARTS", "PROGRESS", "ETA", "AGE"]
    state_column = slice(view[1].index("STATE"), view[1].index("WORKERS"))  # cells may be empty: fixed width
    states = [line[state_column].strip() for line in view[2:]]
    assert states[-1] == "Succeeded"
    assert "Running" in states
    assert f"export KUBECONFIG={folder.resolve() / 'kubeconfig'}" in output
    assert f"tfjob-devcluster down --dir {folder.resolve()}" in output
    assert not any(Cluster(folder).status()[c]["running"] for c in COMPONENTS), "--down stopped the cluster"
