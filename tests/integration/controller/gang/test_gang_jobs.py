"""Jobs under the operator's `--gang-scheduler=scheduler-plugins`, placed by the real Coscheduling scheduler.

On a pool of KWOK nodes with room for one 5-pod job only: with the gang scheduler one job runs whole
and the other waits whole (its Pending condition says why) until the first finishes; without it the
default scheduler places both piecemeal. The job's PodGroup follows it: scaled with a role, one
across a suspension, gone with the job; a TFJob's `schedulingPolicy` reaches it.

The scheduler is built from its Go module (about 10 cold minutes), so the tests that need it carry
the `tools` marker (`make test-tools`); the PodGroup's lifecycle also runs in `make test` against the
real PodGroup CRD with no scheduler running (`crd-only`: the pods then stay Pending).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from devcluster.schedulerplugins import API_VERSION, POD_GROUP_LABEL, SCHEDULER_NAME
from kube import ApiError, Kube, resource_path
from tests.support.jobs import DEVCLUSTER_IMAGE, container, role
from tests.support.kinds import both_kinds
from tests.support.operator import Operator

from ..conftest import TfJobs
from .conftest import GangPool

GROUP, VERSION = API_VERSION.split("/")
GANG_FLAGS = ["--gang-scheduler=scheduler-plugins"]
MEMBERS = 5
STABLE_SECONDS = 5  # how long "the other job has no pod running" is watched


def gang_role(replicas: int, pool: GangPool, cpu: str = "1") -> dict[str, Any]:
    """`replicas` pods of `cpu` CPUs each, on the test's pool only."""
    return role(replicas, policy="OnFailure", image=DEVCLUSTER_IMAGE,
                containers=[container(DEVCLUSTER_IMAGE, requests={"cpu": cpu, "memory": "1Gi"})], **pool.placement())


def pod_group(api: Kube, namespace: str, name: str, group: str = GROUP, version: str = VERSION) -> dict[str, Any] | None:
    """The PodGroup of that name (scheduler-plugins' unless another group is named), None if there is none."""
    try:
        return api.get(resource_path(group, version, "podgroups", namespace, name))
    except ApiError as error:
        if error.not_found:
            return None
        raise


def pod_groups(api: Kube, namespace: str) -> list[dict[str, Any]]:
    return api.list(resource_path(GROUP, VERSION, "podgroups", namespace))["items"]


def with_scheduler(request: pytest.FixtureRequest) -> bool:
    """For the parametrised tests: start the real scheduler (`scheduler`), or only serve the PodGroup
    API (`crd-only`)."""
    if request.param == "scheduler":
        request.getfixturevalue("scheduler_plugins")
        return True
    request.getfixturevalue("pod_group_api")
    return False


MODES = [pytest.param("crd-only"), pytest.param("scheduler", marks=pytest.mark.tools)]


@pytest.fixture(params=MODES)
def scheduler_runs(request: pytest.FixtureRequest) -> bool:
    return with_scheduler(request)


def running(tfjobs: TfJobs, job: str) -> int:
    return sum(1 for p in tfjobs.pods(job, include_terminating=False) if p.get("status", {}).get("phase") == "Running")


@pytest.fixture
def gang_operator(tfjobs: TfJobs, scheduler_runs: bool,
                  standing_operator: Callable[[list[str]], Operator]) -> Operator:
    """An operator with the gang scheduler, in place of the session's (which has none), kept for the
    next test that wants it. `tfjobs` comes first: it may switch the cluster's CRDs, which the
    operator reads at start."""
    return standing_operator(GANG_FLAGS)


@pytest.mark.tools
@pytest.mark.parametrize("scheduler_runs", ["scheduler"], indirect=True)
@both_kinds
def test_of_two_jobs_that_fit_once_one_runs_whole_and_the_other_waits_whole_until_it_finishes(
        tfjobs: TfJobs, gang_operator: Operator, gang_pool: Callable[..., GangPool]) -> None:
    pool = gang_pool(cpus=7, nodes=1)  # room for one 5-pod job of 1-CPU pods, not two
    tfjobs.create("first", worker=gang_role(MEMBERS, pool), schedulingPolicy={"scheduleTimeoutSeconds": 10})
    tfjobs.wait_pods("first", MEMBERS, timeout=120)
    tfjobs.create("second", worker=gang_role(MEMBERS, pool), schedulingPolicy={"scheduleTimeoutSeconds": 10})

    pending = tfjobs.wait_condition("second", "Pending", timeout=120)
    assert "PodGroup second (scheduler-plugins) is" in pending["message"], pending
    assert pending["reason"] == "Unschedulable"
    deadline = time.monotonic() + STABLE_SECONDS
    while time.monotonic() < deadline:  # whole: not one of its pods runs while the first holds the room
        assert running(tfjobs, "second") == 0
        assert running(tfjobs, "first") == MEMBERS
        time.sleep(0.5)
    assert {p["spec"]["schedulerName"] for p in tfjobs.pods("second")} == {SCHEDULER_NAME}
    assert {p["metadata"]["labels"][POD_GROUP_LABEL] for p in tfjobs.pods("second")} == {"second"}

    tfjobs.exit_pod(tfjobs.pod_names("first", "worker")[0], 0)  # worker 0 succeeds: the job does
    tfjobs.wait_condition("first", "Succeeded", timeout=60)
    tfjobs.wait_pods("second", MEMBERS, timeout=180)
    tfjobs.wait_for(lambda: pod_group(tfjobs.api, tfjobs.namespace, "first") is None, 60,
                    "the finished job's PodGroup to be deleted")
    tfjobs.wait_for(lambda: not tfjobs.has_condition("second", "Pending"), 30,
                    "the Pending condition to turn False once the gang runs")


def test_without_a_gang_scheduler_the_same_two_jobs_are_placed_piecemeal(
        tfjobs: TfJobs, gang_pool: Callable[..., GangPool], pod_group_api: None) -> None:
    """(The PodGroup API is installed for the check that none was made: on a worker of its own this test
    must not rely on an earlier test having installed it.)"""
    pool = gang_pool(cpus=7, nodes=1)
    tfjobs.create("first", worker=gang_role(MEMBERS, pool))
    tfjobs.create("second", worker=gang_role(MEMBERS, pool))
    # 7 of the 10 pods fit: at least one job has some but not all of its pods running, and holds
    # room that the other cannot use -- the split gang scheduling prevents.
    tfjobs.wait_for(lambda: running(tfjobs, "first") + running(tfjobs, "second") == 7, 120, "7 pods running")
    counts = sorted((running(tfjobs, "first"), running(tfjobs, "second")))
    assert 0 < counts[0] < MEMBERS or 0 < counts[1] < MEMBERS, counts
    assert pod_groups(tfjobs.api, tfjobs.namespace) == []  # the operator never made one
    assert all("schedulerName" not in p["spec"] or p["spec"]["schedulerName"] == "default-scheduler"
               for p in tfjobs.pods("first") + tfjobs.pods("second"))


@both_kinds
def test_the_pod_group_follows_scaling_suspension_and_deletion(
        tfjobs: TfJobs, gang_operator: Operator, scheduler_runs: bool, gang_pool: Callable[..., GangPool]) -> None:
    pool = gang_pool(cpus=10, nodes=1)
    phase = "Running" if scheduler_runs else None
    tfjobs.create("elastic", worker=gang_role(2, pool, cpu="500m"))
    tfjobs.wait_pods("elastic", 2, phase, timeout=120)
    assert all(p["metadata"]["creationTimestamp"] >= (pod_group(tfjobs.api, tfjobs.namespace, "elastic") or {})[
        "metadata"]["creationTimestamp"] for p in tfjobs.pods("elastic"))
    group = pod_group(tfjobs.api, tfjobs.namespace, "elastic")
    assert group is not None
    assert group["spec"]["minMember"] == 2 and group["spec"]["minResources"] == {"cpu": "1", "memory": "2Gi"}

    tfjobs.patch("elastic", {"worker": {"replicas": 3}})
    tfjobs.wait_for(lambda: (pod_group(tfjobs.api, tfjobs.namespace, "elastic") or {}).get("spec", {}).get(
        "minMember") == 3, 60, "minMember 3 after scaling")
    assert (pod_group(tfjobs.api, tfjobs.namespace, "elastic") or {})["spec"]["minResources"]["cpu"] == "1500m"
    tfjobs.wait_pods("elastic", 3, phase, timeout=120)

    tfjobs.patch("elastic", {"suspend": True})
    tfjobs.wait_condition("elastic", "Suspended", timeout=60)
    tfjobs.wait_for(lambda: pod_group(tfjobs.api, tfjobs.namespace, "elastic") is None, 60,
                    "the suspended job's PodGroup to be deleted")
    tfjobs.patch("elastic", {"suspend": False})
    tfjobs.wait_pods("elastic", 3, phase, timeout=120)
    assert [g["metadata"]["name"] for g in pod_groups(tfjobs.api, tfjobs.namespace)] == ["elastic"]

    tfjobs.delete("elastic")
    tfjobs.wait_for(lambda: pod_group(tfjobs.api, tfjobs.namespace, "elastic") is None, 60,
                    "the deleted job's PodGroup to be gone")


def test_a_tfjobs_scheduling_policy_reaches_its_pod_group_and_raises_no_ignored_field_event(
        kubeflow_tfjobs: TfJobs, scheduler_runs: bool, standing_operator: Callable[[list[str]], Operator],
        gang_pool: Callable[..., GangPool]) -> None:
    standing_operator(GANG_FLAGS)
    pool = gang_pool(cpus=10, nodes=1)
    kubeflow_tfjobs.create("mnist", ps=gang_role(1, pool), worker=gang_role(3, pool),
                           schedulingPolicy={"minAvailable": 3, "scheduleTimeoutSeconds": 30})
    kubeflow_tfjobs.wait_pods("mnist", 4, "Running" if scheduler_runs else None, timeout=120)
    group = pod_group(kubeflow_tfjobs.api, kubeflow_tfjobs.namespace, "mnist")
    assert group is not None
    assert group["spec"]["minMember"] == 3 and group["spec"]["scheduleTimeoutSeconds"] == 30
    assert group["metadata"]["ownerReferences"][0]["kind"] == "TFJob"
    assert not [e for e in kubeflow_tfjobs.events("mnist") if e["reason"] == "IgnoredField"]
