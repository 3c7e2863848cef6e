"""Kueue's Workload protocol for TensorFlowJobs (controller/kueue/protocol.py), on plain dicts."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from controller.kueue import protocol as kueue
from controller.kueue.protocol import (
    FlavorConflict,
    admission,
    apply_flavors,
    build_workload,
    clear_admission_status,
    finish_status,
    flavors_for_roles,
    is_queued,
    job_uid_selector,
    owned_by,
    podsets,
    priority_class_name,
    priority_class_ref,
    queue_name,
    waiting_message,
    workload_matches,
    workload_name,
    workload_path,
)
from tests.support import jobs

UID = "0b9e8c3a-1111-2222-3333-444455556666"
T0 = "2026-01-01T10:00:00Z"
T1 = "2026-01-01T10:05:00Z"


def tensorflow_container() -> dict[str, Any]:
    return jobs.container("tf:2.21", requests={"cpu": "2"})


def job(workers: int = 2, ps: int = 1, chief: int = 1, evaluator: int = 0, labels: dict[str, str] | None = None,
        **template_spec: Any) -> dict[str, Any]:
    """Suspended job `team-a/mnist` queued in LocalQueue `lq`; every role's pods request 2 CPUs and carry
    a label and an annotation; `template_spec` goes into every role's pod spec."""
    def queued_role(replicas: int, policy: str = "OnFailure") -> dict[str, Any]:
        return jobs.role(replicas, policy=policy, containers=[tensorflow_container()], labels={"team": "vision"},
                         annotations={"note": "x"}, **template_spec)
    spec = {"chief": queued_role(chief, "ExitCode"), "ps": queued_role(ps), "worker": queued_role(workers, "Never"),
            "evaluator": queued_role(evaluator), "suspend": True}
    return jobs.tfjob("mnist", spec, namespace="team-a", uid=UID, labels={kueue.QUEUE_LABEL: "lq", **(labels or {})})


def condition(kind: str, status: bool, reason: str, message: str = "", when: str = T0) -> dict[str, Any]:
    return {"type": kind, "status": "True" if status else "False", "reason": reason, "message": message,
            "lastTransitionTime": when, "observedGeneration": 1}


def admitted_workload(the_job: dict[str, Any] | None = None, flavors: dict[str, dict[str, str]] | None = None,
                      cluster_queue: str = "cq", extra_conditions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    workload = build_workload(the_job or job())
    workload["metadata"].update({"resourceVersion": "42", "generation": 1})
    names = [p["name"] for p in workload["spec"]["podSets"]]
    flavors = flavors or {name: {"cpu": "pool-a"} for name in names}
    workload["status"] = {
        "admission": {"clusterQueue": cluster_queue,
                      "podSetAssignments": [{"name": name, "flavors": flavors[name], "count": 1} for name in names]},
        "conditions": [condition("QuotaReserved", True, "QuotaReserved", f"Quota reserved in ClusterQueue {cluster_queue}"),
                       condition("Admitted", True, "Admitted", "The workload is admitted"),
                       *(extra_conditions or [])],
    }
    return workload


def preempted_workload() -> dict[str, Any]:
    message = "Preempted to accommodate a workload (UID: u2, JobUID: j2) due to prioritization in the ClusterQueue"
    return admitted_workload(extra_conditions=[condition("Evicted", True, "Preempted", message, T1),
                                               condition("Preempted", True, "InClusterQueue", message, T1)])


def flavor(name: str, node_labels: dict[str, str] | None = None,
           tolerations: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if node_labels:
        spec["nodeLabels"] = node_labels
    if tolerations:
        spec["tolerations"] = tolerations
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": spec}


def by_type(conditions: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in conditions}


# --------------------------------------------------------------------------- job side


def test_a_job_with_a_queue_name_label_is_queued_and_one_without_is_not() -> None:
    assert is_queued(job()) and queue_name(job()) == "lq"
    unlabelled = job()
    del unlabelled["metadata"]["labels"]
    assert not is_queued(unlabelled) and queue_name(unlabelled) == ""
    empty = job(labels={kueue.QUEUE_LABEL: ""})
    assert not is_queued(empty)


def test_priority_class_comes_from_the_label_and_refers_to_a_workload_priority_class() -> None:
    assert priority_class_name(job(labels={kueue.PRIORITY_CLASS_LABEL: "high"})) == "high"
    assert priority_class_name(job()) == ""
    assert priority_class_ref("high") == {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "high"}


def test_workload_name_follows_kueues_convention() -> None:
    # sha1("TensorFlowJob\nkubeflow.org\nmnist\n<uid>") computed independently with `sha1sum`: f4428a50...
    assert workload_name(job()) == "tensorflowjob-mnist-f4428"


def test_workload_name_of_a_long_job_name_keeps_a_247_character_prefix() -> None:
    long_job = job()
    long_job["metadata"].update(name="x" * 300, uid="uid-1")
    name = workload_name(long_job)
    assert len(name) == 253
    assert name == ("tensorflowjob-" + "x" * 300)[:247] + "-b2efc"  # sha1sum: b2efcaab...


def test_workload_name_differs_per_job_incarnation() -> None:
    again = job()
    again["metadata"]["uid"] = "another-uid"
    assert workload_name(again) != workload_name(job())


def test_paths_and_selectors() -> None:
    assert workload_path("ns") == "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads"
    assert workload_path("ns", "w", "status") == "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/w/status"
    assert job_uid_selector(job()) == f"kueue.x-k8s.io/job-uid={UID}"


# --------------------------------------------------------------------------- build_workload


def test_build_workload_describes_the_job_for_kueue() -> None:
    workload = build_workload(job())
    assert workload["apiVersion"] == "kueue.x-k8s.io/v1beta2" and workload["kind"] == "Workload"
    meta = workload["metadata"]
    assert meta["name"] == "tensorflowjob-mnist-f4428" and meta["namespace"] == "team-a"
    assert meta["labels"] == {"kueue.x-k8s.io/job-uid": UID}
    assert "finalizers" not in meta  # the owner reference alone releases the Workload with the job
    assert meta["ownerReferences"] == [{"apiVersion": "kubeflow.org/v1", "kind": "TensorFlowJob", "name": "mnist",
                                        "uid": UID, "controller": True, "blockOwnerDeletion": True}]
    assert workload["spec"]["queueName"] == "lq"
    assert "priority" not in workload["spec"] and "priorityClassRef" not in workload["spec"]


def test_podsets_are_the_roles_with_replicas_in_kubeflow_order() -> None:
    sets = podsets(job(workers=4, ps=2, chief=1, evaluator=1))
    assert [(p["name"], p["count"]) for p in sets] == [("chief", 1), ("ps", 2), ("worker", 4), ("evaluator", 1)]
    assert [p["name"] for p in podsets(job(chief=0, ps=0, workers=3))] == ["worker"]


def test_podset_template_keeps_requests_and_only_labels_and_annotations_in_metadata() -> None:
    the_job = job(nodeSelector={"gpu": "a100"})
    the_job["spec"]["worker"]["template"]["metadata"]["name"] = "ignored"
    template = next(p for p in podsets(the_job) if p["name"] == "worker")["template"]
    assert set(template["metadata"]) == {"labels", "annotations"}
    assert template["metadata"]["labels"] == {"team": "vision", "tensorflowjob.kubeflow.org/job-name": "mnist",
                                              "tensorflowjob.kubeflow.org/replica-type": "worker"}
    assert template["metadata"]["annotations"] == {"note": "x"}
    assert template["spec"]["containers"] == [tensorflow_container()]  # the user's containers, requests included
    assert template["spec"]["nodeSelector"] == {"gpu": "a100"}
    assert template["spec"]["subdomain"] == "mnist"
    assert template["spec"]["restartPolicy"] == "Never"  # role policy Never
    chief = next(p for p in podsets(the_job) if p["name"] == "chief")["template"]
    assert chief["spec"]["restartPolicy"] == "Never"  # ExitCode → Never, as the builders do


def test_build_workload_sets_priority_and_its_class() -> None:
    workload = build_workload(job(), priority=1000, priority_class_ref=priority_class_ref("high"))
    assert workload["spec"]["priority"] == 1000
    assert workload["spec"]["priorityClassRef"] == {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass",
                                                    "name": "high"}
    assert build_workload(job(), priority=5)["spec"]["priority"] == 5


def test_build_workload_refuses_what_kueue_would_reject_or_cannot_own() -> None:
    with pytest.raises(ValueError, match="priority"):
        build_workload(job(), priority_class_ref=priority_class_ref("high"))
    no_uid = job()
    del no_uid["metadata"]["uid"]
    with pytest.raises(ValueError, match="uid"):
        build_workload(no_uid)
    with pytest.raises(ValueError, match="queue-name"):
        build_workload(job(labels={kueue.QUEUE_LABEL: ""}))


def test_build_workload_does_not_share_or_change_the_job() -> None:
    the_job = job()
    before = copy.deepcopy(the_job)
    workload = build_workload(the_job)
    workload["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["image"] = "changed"
    assert the_job == before


def test_owned_by_checks_the_controller_reference_uid() -> None:
    workload = build_workload(job())
    assert owned_by(workload, job())
    other = job()
    other["metadata"]["uid"] = "other"
    assert not owned_by(workload, other)


# --------------------------------------------------------------------------- workload_matches


def test_a_fresh_workload_matches_its_job() -> None:
    assert workload_matches(job(), build_workload(job()))


def test_a_scaled_job_no_longer_matches() -> None:
    assert not workload_matches(job(workers=3), build_workload(job(workers=2)))
    assert not workload_matches(job(ps=0), build_workload(job(ps=1)))  # a podSet fewer


def test_changed_containers_no_longer_match() -> None:
    changed = job()
    changed["spec"]["worker"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "4"
    assert not workload_matches(changed, build_workload(job()))
    with_init = job(initContainers=[{"name": "init", "image": "busybox"}])
    assert not workload_matches(with_init, build_workload(job()))


def test_server_side_defaults_in_the_stored_workload_still_match() -> None:
    the_job = job()
    the_job["spec"]["worker"]["template"]["spec"]["containers"][0]["ports"] = [{"name": "x", "containerPort": 3333}]
    stored = build_workload(the_job)
    # Kueue's CRD defaults ports[].protocol to TCP.
    stored["spec"]["podSets"][2]["template"]["spec"]["containers"][0]["ports"][0]["protocol"] = "TCP"
    assert workload_matches(the_job, stored)


def test_tolerations_count_unless_the_workload_is_admitted() -> None:
    tolerated = job(tolerations=[{"key": "gpu", "operator": "Exists"}])
    assert not workload_matches(tolerated, build_workload(job()))
    assert workload_matches(tolerated, admitted_workload(job()))


def test_labels_and_metadata_changes_do_not_make_a_workload_stale() -> None:
    relabelled = job()
    relabelled["spec"]["worker"]["template"]["metadata"]["labels"]["team"] = "speech"
    assert workload_matches(relabelled, build_workload(job()))


# --------------------------------------------------------------------------- admission


def test_a_new_workload_is_neither_reserved_nor_admitted() -> None:
    info = admission(build_workload(job()))
    assert not info.quota_reserved and not info.admitted and not info.evicted and not info.finished
    assert not info.can_run and not info.must_clear
    assert info.flavors_by_podset == {} and info.cluster_queue == "" and info.requeued is None


def test_an_admitted_workload_can_run_and_names_its_flavors_per_podset() -> None:
    workload = admitted_workload(flavors={"chief": {"cpu": "pool-a", "memory": "pool-a"},
                                          "ps": {"cpu": "pool-b"},
                                          "worker": {"cpu": "pool-a", "nvidia.com/gpu": "gpu-a"}})
    info = admission(workload)
    assert info.quota_reserved and info.admitted and info.can_run
    assert info.cluster_queue == "cq"
    assert info.flavors_by_podset == {"chief": ["pool-a"], "ps": ["pool-b"], "worker": ["pool-a", "gpu-a"]}
    assert info.flavor_names == ["gpu-a", "pool-a", "pool-b"]


def test_a_pending_workload_carries_kueues_reason_and_message() -> None:
    workload = build_workload(job())
    message = "couldn't assign flavors to pod set worker: insufficient unused quota for cpu in flavor pool-a, 4 more needed"
    workload["status"] = {"conditions": [condition("QuotaReserved", False, "Pending", message)]}
    info = admission(workload)
    assert not info.quota_reserved and info.pending_reason == "Pending" and info.pending_message == message


def test_a_preempted_workload_is_evicted_and_must_be_cleared() -> None:
    info = admission(preempted_workload())
    assert info.evicted and info.preempted and info.eviction_reason == "Preempted"
    assert info.eviction_message.startswith("Preempted to accommodate")
    assert info.admitted and info.quota_reserved  # Kueue leaves both True on eviction
    assert not info.can_run and info.must_clear


def test_a_finished_workload_cannot_run() -> None:
    workload = admitted_workload(extra_conditions=[condition("Finished", True, "Succeeded", "done")])
    info = admission(workload)
    assert info.finished and info.finished_reason == "Succeeded" and info.finished_message == "done"
    assert not info.can_run and not info.must_clear


def test_an_evicted_condition_that_is_false_is_not_an_eviction() -> None:
    workload = admitted_workload(extra_conditions=[condition("Evicted", False, "QuotaReserved", "Previously: x")])
    info = admission(workload)
    assert not info.evicted and info.eviction_reason == "" and info.can_run


# --------------------------------------------------------------------------- clear_admission_status


def test_clearing_a_preemption_requeues_and_frees_the_quota() -> None:
    workload = preempted_workload()
    patch = clear_admission_status(workload, T1)
    assert patch is not None
    assert patch["metadata"] == {"resourceVersion": "42"}
    status = patch["status"]
    assert "admission" in status and status["admission"] is None
    conditions = by_type(status["conditions"])
    evicted_message = conditions["Evicted"]["message"]
    assert conditions["Requeued"] == {"type": "Requeued", "status": "True", "reason": "Preempted",
                                      "message": evicted_message, "lastTransitionTime": T1, "observedGeneration": 1}
    assert conditions["QuotaReserved"] == {"type": "QuotaReserved", "status": "False", "reason": "Pending",
                                           "message": evicted_message, "lastTransitionTime": T1,
                                           "observedGeneration": 1}
    assert conditions["Admitted"] == {"type": "Admitted", "status": "False", "reason": "NoReservation",
                                      "message": "The workload has no reservation", "lastTransitionTime": T1,
                                      "observedGeneration": 1}
    assert conditions["Evicted"]["status"] == "True" and conditions["Preempted"]["status"] == "True"
    assert status["accumulatedPastExecutionTimeSeconds"] == 300  # admitted at T0, cleared at T1


def test_clearing_adds_to_the_execution_time_already_accumulated() -> None:
    workload = preempted_workload()
    workload["status"]["accumulatedPastExecutionTimeSeconds"] = 60
    patch = clear_admission_status(workload, T1)
    assert patch is not None and patch["status"]["accumulatedPastExecutionTimeSeconds"] == 360


def test_clearing_an_eviction_other_than_preemption_does_not_requeue() -> None:
    workload = admitted_workload(extra_conditions=[condition("Evicted", True, "Deactivated", "The workload is deactivated")])
    patch = clear_admission_status(workload, T1)
    assert patch is not None
    requeued = by_type(patch["status"]["conditions"])["Requeued"]
    assert requeued["status"] == "False" and requeued["reason"] == "Deactivated"


def test_clearing_after_node_failures_requeues() -> None:
    workload = admitted_workload(extra_conditions=[condition("Evicted", True, "NodeFailures", "node lost")])
    patch = clear_admission_status(workload, T1)
    assert patch is not None and by_type(patch["status"]["conditions"])["Requeued"]["status"] == "True"


def test_clearing_moves_transition_times_only_when_a_status_flips() -> None:
    workload = preempted_workload()
    workload["status"]["conditions"].append(condition("Requeued", True, "Preempted", "earlier", T0))
    patch = clear_admission_status(workload, T1)
    assert patch is not None
    conditions = by_type(patch["status"]["conditions"])
    assert conditions["Requeued"]["lastTransitionTime"] == T0  # True before and after
    assert conditions["Requeued"]["message"] == conditions["Evicted"]["message"]
    assert conditions["QuotaReserved"]["lastTransitionTime"] == T1  # flipped


def test_clearing_with_unready_admission_checks_says_so() -> None:
    workload = preempted_workload()
    workload["status"]["admissionChecks"] = [{"name": "prov", "state": "Pending"}]
    patch = clear_admission_status(workload, T1)
    assert patch is not None
    assert by_type(patch["status"]["conditions"])["Admitted"]["reason"] == "NoReservationUnsatisfiedChecks"


def test_nothing_to_clear_without_an_eviction_or_a_reservation() -> None:
    assert clear_admission_status(admitted_workload(), T1) is None
    already_cleared = preempted_workload()
    patch = clear_admission_status(already_cleared, T1)
    assert patch is not None
    already_cleared["status"].update(patch["status"])
    assert clear_admission_status(already_cleared, T1) is None


def test_clearing_does_not_change_the_workload() -> None:
    workload = preempted_workload()
    before = copy.deepcopy(workload)
    clear_admission_status(workload, T1)
    assert workload == before


# --------------------------------------------------------------------------- finishing


def test_finishing_marks_the_workload_succeeded_or_failed() -> None:
    patch = finish_status(admitted_workload(), True, "job succeeded", T1)
    assert patch is not None and patch["metadata"] == {"resourceVersion": "42"}
    conditions = by_type(patch["status"]["conditions"])
    assert conditions["Finished"] == {"type": "Finished", "status": "True", "reason": "Succeeded",
                                      "message": "job succeeded", "lastTransitionTime": T1, "observedGeneration": 1}
    assert conditions["Admitted"]["status"] == "True"  # the full list is sent
    failed = finish_status(admitted_workload(), False, "BackoffLimitExceeded", T1)
    assert failed is not None and by_type(failed["status"]["conditions"])["Finished"]["reason"] == "Failed"


def test_finishing_with_a_reason_of_its_own() -> None:
    patch = finish_status(admitted_workload(), False, "conflict", T1, reason=kueue.FINISHED_FAILED_TO_START)
    assert patch is not None and by_type(patch["status"]["conditions"])["Finished"]["reason"] == "FailedToStart"


def test_a_finished_workload_is_not_finished_again() -> None:
    workload = admitted_workload(extra_conditions=[condition("Finished", True, "Succeeded", "done")])
    assert finish_status(workload, False, "late", T1) is None


def test_admitted_flavors_go_into_the_templates_with_kueues_labels() -> None:
    the_job = job()
    workload = admitted_workload(the_job)
    pool_a = flavor("pool-a", {"pool": "a"}, [{"key": "pool", "operator": "Equal", "value": "a", "effect": "NoSchedule"}])
    result = apply_flavors(the_job, workload, {"chief": [pool_a], "ps": [pool_a], "worker": [pool_a]})
    for role in ("chief", "ps", "worker"):
        template = result["spec"][role]["template"]
        assert template["spec"]["nodeSelector"] == {"pool": "a"}
        assert template["spec"]["tolerations"] == [{"key": "pool", "operator": "Equal", "value": "a", "effect": "NoSchedule"}]
        assert template["metadata"]["labels"] == {"team": "vision", "kueue.x-k8s.io/podset": role,
                                                  "kueue.x-k8s.io/local-queue-name": "lq",
                                                  "kueue.x-k8s.io/cluster-queue-name": "cq"}
        assert template["metadata"]["annotations"] == {"note": "x", "kueue.x-k8s.io/workload": "tensorflowjob-mnist-f4428"}
    assert result["spec"]["evaluator"] == the_job["spec"]["evaluator"]  # no podSet, untouched


def test_apply_flavors_never_changes_its_input() -> None:
    the_job, workload = job(), admitted_workload()
    before_job, before_workload = copy.deepcopy(the_job), copy.deepcopy(workload)
    pool_a = flavor("pool-a", {"pool": "a"})
    apply_flavors(the_job, workload, {"chief": [pool_a], "ps": [pool_a], "worker": [pool_a]})
    assert the_job == before_job and workload == before_workload and pool_a == flavor("pool-a", {"pool": "a"})


def test_several_flavors_of_a_podset_are_all_merged() -> None:
    the_job = job(chief=0, ps=0)
    workload = admitted_workload(the_job, flavors={"worker": {"cpu": "pool-a", "nvidia.com/gpu": "gpu-a"}})
    toleration = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    result = apply_flavors(the_job, workload, {"worker": [flavor("pool-a", {"pool": "a"}),
                                                          flavor("gpu-a", {"accelerator": "a100"}, [toleration])]})
    spec = result["spec"]["worker"]["template"]["spec"]
    assert spec["nodeSelector"] == {"pool": "a", "accelerator": "a100"}
    assert spec["tolerations"] == [toleration]


def test_a_template_selector_that_agrees_with_the_flavor_is_kept_and_tolerations_are_not_duplicated() -> None:
    toleration = {"key": "pool", "operator": "Exists"}
    the_job = job(chief=0, ps=0, nodeSelector={"pool": "a", "zone": "z1"}, tolerations=[toleration])
    workload = admitted_workload(the_job)
    result = apply_flavors(the_job, workload, {"worker": [flavor("pool-a", {"pool": "a"}, [toleration])]})
    spec = result["spec"]["worker"]["template"]["spec"]
    assert spec["nodeSelector"] == {"pool": "a", "zone": "z1"} and spec["tolerations"] == [toleration]


def test_a_flavor_without_node_labels_adds_only_kueues_labels() -> None:
    the_job = job(chief=0, ps=0)
    result = apply_flavors(the_job, admitted_workload(the_job), {"worker": [flavor("default")]})
    spec = result["spec"]["worker"]["template"]["spec"]
    assert "nodeSelector" not in spec and "tolerations" not in spec
    assert result["spec"]["worker"]["template"]["metadata"]["labels"]["kueue.x-k8s.io/podset"] == "worker"


def test_a_conflicting_node_selector_is_a_flavor_conflict() -> None:
    the_job = job(chief=0, ps=0, nodeSelector={"pool": "b"})
    with pytest.raises(FlavorConflict, match=r"role worker.*nodeSelector pool='a'.*pool='b'"):
        apply_flavors(the_job, admitted_workload(the_job), {"worker": [flavor("pool-a", {"pool": "a"})]})


def test_a_conflicting_kueue_label_in_the_template_is_a_flavor_conflict() -> None:
    the_job = job(chief=0, ps=0)
    the_job["spec"]["worker"]["template"]["metadata"]["labels"][kueue.PODSET_LABEL] = "other"
    with pytest.raises(FlavorConflict, match="label"):
        apply_flavors(the_job, admitted_workload(the_job), {"worker": [flavor("default")]})


def test_a_cluster_queue_name_that_is_no_label_value_is_left_out() -> None:
    the_job = job(chief=0, ps=0)
    workload = admitted_workload(the_job, cluster_queue="Team.Queue")
    labels = apply_flavors(the_job, workload, {"worker": [flavor("default")]})["spec"]["worker"]["template"]["metadata"]["labels"]
    assert kueue.CLUSTER_QUEUE_LABEL not in labels and labels[kueue.LOCAL_QUEUE_LABEL] == "lq"


def test_admission_check_pod_set_updates_are_merged_too() -> None:
    the_job = job(chief=0, ps=0)
    workload = admitted_workload(the_job)
    workload["status"]["admissionChecks"] = [{"name": "prov", "state": "Ready", "podSetUpdates": [
        {"name": "worker", "labels": {"prov": "yes"}, "nodeSelector": {"zone": "z2"},
         "tolerations": [{"key": "prov", "operator": "Exists"}]}]}]
    spec_and_meta = apply_flavors(the_job, workload, {"worker": [flavor("pool-a", {"pool": "a"})]})["spec"]["worker"]["template"]
    assert spec_and_meta["spec"]["nodeSelector"] == {"pool": "a", "zone": "z2"}
    assert spec_and_meta["spec"]["tolerations"] == [{"key": "prov", "operator": "Exists"}]
    assert spec_and_meta["metadata"]["labels"]["prov"] == "yes"


def test_a_workload_that_does_not_cover_the_job_is_refused() -> None:
    workload = admitted_workload(job(chief=0, ps=0))
    with pytest.raises(ValueError, match="no admitted podSet chief"):
        apply_flavors(job(), workload, {"worker": [flavor("default")]})
    with pytest.raises(ValueError, match="admits podSet ps"):
        apply_flavors(job(ps=0), admitted_workload(job()), {})


def test_flavors_for_roles_maps_the_admission_to_flavor_objects() -> None:
    workload = admitted_workload(job(chief=0, ps=0), flavors={"worker": {"cpu": "pool-a", "memory": "pool-a"}})
    pool_a = flavor("pool-a", {"pool": "a"})
    assert flavors_for_roles(workload, {"pool-a": pool_a, "unused": flavor("unused")}) == {"worker": [pool_a]}
    with pytest.raises(KeyError):
        flavors_for_roles(workload, {})


# --------------------------------------------------------------------------- waiting_message


def test_without_a_workload_the_job_waits_for_its_queue() -> None:
    assert waiting_message(job(), None) == ("WaitingForAdmission", "waiting for quota in LocalQueue lq")


def test_a_pending_workload_explains_what_quota_is_missing() -> None:
    workload = build_workload(job())
    workload["status"] = {"conditions": [condition("QuotaReserved", False, "Pending",
                                                   "couldn't assign flavors to pod set worker: insufficient quota")]}
    assert waiting_message(job(), workload) == (
        "WaitingForAdmission", "waiting for quota in LocalQueue lq: couldn't assign flavors to pod set worker: insufficient quota")


def test_a_workload_kueue_has_not_looked_at_yet_waits_for_quota() -> None:
    assert waiting_message(job(), build_workload(job())) == ("WaitingForAdmission", "waiting for quota in LocalQueue lq")


def test_an_inadmissible_workload_says_the_queue_cannot_admit_it() -> None:
    workload = build_workload(job())
    workload["status"] = {"conditions": [condition("QuotaReserved", False, "Inadmissible", "LocalQueue lq doesn't exist")]}
    assert waiting_message(job(), workload) == ("Inadmissible", "LocalQueue lq cannot admit the job: LocalQueue lq doesn't exist")


def test_a_preempted_workload_says_preempted_and_where_it_is_requeued() -> None:
    workload = preempted_workload()
    reason, message = waiting_message(job(), workload)
    assert reason == "Preempted"
    assert message.startswith("Preempted to accommodate a workload") and message.endswith("re-queued in LocalQueue lq")
    patch = clear_admission_status(workload, T1)
    assert patch is not None
    workload["status"].update(patch["status"])
    workload["status"]["conditions"] = [c if c["type"] != "QuotaReserved" else
                                        condition("QuotaReserved", False, "Pending", "insufficient unused quota for cpu")
                                        for c in workload["status"]["conditions"]]
    reason, message = waiting_message(job(), workload)
    assert reason == "Preempted" and message.endswith("re-queued in LocalQueue lq: insufficient unused quota for cpu")


def test_an_eviction_without_requeue_says_so() -> None:
    workload = admitted_workload(extra_conditions=[condition("Evicted", True, "Deactivated", "The workload is deactivated"),
                                                   condition("Requeued", False, "Deactivated", "The workload is deactivated")])
    assert waiting_message(job(), workload) == ("Evicted", "The workload is deactivated; not re-queued")


def test_a_reserved_but_unadmitted_workload_waits_for_admission_checks() -> None:
    workload = admitted_workload()
    workload["status"]["conditions"][1] = condition("Admitted", False, "UnsatisfiedChecks", "not all checks ready")
    assert waiting_message(job(), workload) == (
        "WaitingForAdmission", "quota reserved in ClusterQueue cq; waiting for admission checks")


def test_a_finished_or_admitted_workload_is_not_waiting_for_quota() -> None:
    finished = admitted_workload(extra_conditions=[condition("Finished", True, "FailedToStart", "conflict")])
    assert waiting_message(job(), finished) == ("WorkloadFinished", "the Workload is finished (FailedToStart): conflict")
    assert waiting_message(job(), admitted_workload()) == ("Admitted", "admitted by ClusterQueue cq")
