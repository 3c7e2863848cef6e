"""The lifecycle rules of docs/design.md §4 as one pure function: observed state in, a plan out.

`plan_job(inputs)` looks at one job and the pods and Service it owns (`PlanInputs`, from the
informer cache) and decides everything: which pods and Service to create or delete, the full new
status, events to emit, when to look again (deadlines and TTLs fire through `requeue_after`, not a
periodic resync), and whether the job itself is due for deletion. It performs no I/O and reads no
clock, so every rule is tested with plain dicts; `controller.reconciler` carries the plan out. The
plan and the edits every rule makes through it (conditions, deletions, failing the job with its
cleanup and TTL requeue) are `controller.job.draft`'s, shared with `controller.job.refusals`.

Decisions where the design leaves room (documented in docs/design.md §4):
* Running = every desired pod that has not succeeded exists, is Running and has the current
  TF_CONFIG. While pods are being replaced the job is Restarting (Running False).
* A retried failure counts once per failed pod (and container restarts done in place by the
  kubelet count too); the job fails when the count exceeds backoffLimit, or a role's count its
  own. What a failed pod means (the job's failure rules) and the counting are
  `controller.job.failures`'s, a part of the draft this planner is built from.
* A pod stuck terminating on a NotReady/unreachable node is force-deleted FORCE_DELETE_AFTER seconds
  past its deletionTimestamp (which already includes its grace period).
* With restartScope All a disrupted member (evicted, preempted, deleted, lost) restarts every other
  pod at once, uncounted, before its peers fail (`controller.job.disruptions`).

The production features of docs/production.md are planned here too: the job's NetworkPolicy
(`netpol`: create, patch or delete it), its gang scheduler's PodGroup (`gang`: created before the
pods, patched when a role scales, deleted when the job is suspended or finished), restarts a stall
rule most likely caused (`stalled`: reason `Stalled`), and the `Pending` condition saying which pods
cannot be scheduled or started (`pending`, with the PodGroup's phase under a gang scheduler).
Start-up profiles and stall probes go into the pods through the builders.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from controller.job import budgets, disruptions, gang, netpol, pending
from controller.job.builders import build_pod, build_service, desired_pod_keys
from controller.job.children import ChildSituation, DeclaredChild, Step
from controller.job.draft import Event, Plan
from controller.job.failurepolicy import IGNORE, decide, failure_of
from controller.job.failures import FailureHandling
from controller.job.kinds import JobKind
from controller.job.profiles import Profile
from controller.job.validation import Problem, validate_job
from tfconfig import ROLES, SerializedCluster, pod_name, role_replicas
from tfjob_api import conditions as cond
from tfjob_api import podstate
from tfjob_api.names import role_selector
from tfjob_api.timeutil import parse_time

FORCE_DELETE_AFTER = 15.0
"""Seconds past a pod's deletionTimestamp before a pod on a dead node is force-deleted."""

NOT_READY = False


@dataclass(frozen=True)
class PlanInputs:
    """Everything the planner reads about one (defaulted) job: what the reconciler observed.

    `pending_deletes` holds UIDs of pods this controller already deleted whose deletion the cache
    has not shown yet: they are treated as terminating so a stale cache never counts one failure
    twice. `gate` (reason, message) holds the job suspended for an outside reason (a queue that has
    not admitted it) as `spec.suspend` would. `network_policy` is the job's NetworkPolicy as the
    cache shows it (None: policies are not managed); `profiles` are the operator's start-up profiles
    for the pods it creates. `problems`, when given, are the job's problems; else `validate(job)` is
    asked, and only while the job is active (the reconciler passes a check it remembers per job and
    that validates a TFJob as one; the default validates the model as a TensorFlowJob). `kind` is
    the job's kind (`controller.job.kinds`), which the objects it creates are owned by and labelled
    for. `gang_view` is the operator's gang scheduler and the job's PodGroup in the cache (None: no
    gang scheduling). `children` are the declared owned types the planner has no rule of its own
    for, by kind (`controller.job.children`). A model that says `kind: TFJob` names that kind in its
    messages; `backoffLimit: None` means no limit (Kubeflow's default for TFJobs)."""

    job: Mapping[str, Any]
    pods: list[Mapping[str, Any]]
    service: Mapping[str, Any] | None
    now: datetime
    kind: JobKind
    node_ready: Callable[[str], bool | None] = lambda _name: True
    pending_deletes: frozenset[str] = frozenset()
    cluster_domain: str = ""
    gate: tuple[str, str] | None = None
    network_policy: netpol.PolicyView | None = None
    profiles: Sequence[Profile] = ()
    problems: Sequence[Problem] | None = None
    validate: Callable[[Mapping[str, Any]], Sequence[Problem]] = validate_job
    gang_view: gang.GangView | None = None
    children: Mapping[str, DeclaredChild] = field(default_factory=dict)


def plan_job(inputs: PlanInputs) -> Plan:
    """Decide what to do for one (defaulted) job."""
    return _Planner(inputs).plan()


class _Planner(FailureHandling):
    def __init__(self, inputs: PlanInputs) -> None:
        job = inputs.job
        super().__init__(job, inputs.pods, inputs.service, copy.deepcopy(dict(job.get("status") or {})),
                         inputs.now, inputs.pending_deletes)
        self.inputs = inputs
        self.gate = inputs.gate
        self.node_ready = inputs.node_ready
        self.cluster_domain = inputs.cluster_domain
        # Failed pods whose failure is already in retriedFailures (kept until they are gone), so a
        # crash between counting and deleting never counts one failure twice.
        self._counted_failed_pods: set[str] = set(self.status.get("countedFailedPods") or [])
        self.network_policy = inputs.network_policy
        self.profiles = inputs.profiles
        self.job_kind = inputs.kind
        self.gang = inputs.gang_view
        self._serialized_cluster: SerializedCluster | None = None

    @property
    def _cluster(self) -> SerializedCluster:
        """The job's cluster serialised once per plan (for the hash and every pod built). Not a
        `functools.cached_property`: before Python 3.12 that holds one lock per attribute across
        all instances while it computes, so the workers' plans would queue on each other."""
        if self._serialized_cluster is None:
            self._serialized_cluster = SerializedCluster.of(self.job, self.cluster_domain)
        return self._serialized_cluster

    # ---- entry ---------------------------------------------------------------------------------

    def plan(self) -> Plan:
        if cond.find(self.conditions, cond.CREATED) is None:
            self.condition(cond.CREATED, True, "JobCreated", f"{self.kind} {self.name} is created.")
            self.out.creates_told_by_condition = True
        if cond.is_true(self.conditions, cond.SUCCEEDED) or cond.is_true(self.conditions, cond.FAILED):
            self._finished()
        else:
            self._active()
        self._pending_condition()
        self._declared_children()
        return self._finish_status()

    def _declared_children(self) -> None:
        """The declared owned types' own rules, from where the job now stands."""
        finished = cond.is_true(self.conditions, cond.SUCCEEDED) or cond.is_true(self.conditions, cond.FAILED)
        suspended = cond.is_true(self.conditions, cond.SUSPENDED)
        for kind, child in self.inputs.children.items():
            step = child.rule(ChildSituation(self.job, self.job_kind, child.existing, finished, suspended))
            if step != Step():
                self.out.children[kind] = step

    def _active(self) -> None:
        given = self.inputs.problems
        problems = self.inputs.validate(self.job) if given is None else given
        if problems:
            self.fail("InvalidSpec", "; ".join(str(p) for p in problems))
            return
        self._network_policy()
        if self.spec.get("suspend"):
            self._drop_pod_group()
            self._suspend("Suspended", f"{self.kind} {self.name} is suspended: it has no pods until "
                          "spec.suspend is false.")
            return
        if self.gate is not None:
            self._drop_pod_group()
            self._suspend(*self.gate)
            return
        if cond.is_true(self.conditions, cond.SUSPENDED):
            self.condition(cond.SUSPENDED, False, "Resumed", f"{self.kind} {self.name} is resumed.")
            self.out.events.append(Event("Normal", "Resumed", f"{self.kind} {self.name} is resumed."))
            self.status.pop("startTime", None)
            self.status.pop("completionTime", None)
        if self._deadline_passed():
            return
        self._pod_group()
        self._handle_terminating()
        if self._succeeded():
            return
        self._group_restart()
        if self._failures():
            return
        self._rescale()
        self._create_missing()
        self._running_condition()

    # ---- finished jobs: cleanup and TTL --------------------------------------------------------

    def _finished(self) -> None:
        succeeded = cond.is_true(self.conditions, cond.SUCCEEDED)
        self.clean_up(succeeded)
        self._drop_pod_group()  # a finished job holds no place in the gang scheduler's queue
        self._handle_terminating()
        ttl = self.spec.get("ttlSecondsAfterFinished")
        finished_at = parse_time(self.status.get("completionTime")) or self.now
        if isinstance(ttl, int):
            remaining = (finished_at + timedelta(seconds=ttl) - self.now).total_seconds()
            if remaining <= 0:
                self.out.delete_job = True
                self.out.events.append(Event("Normal", "TTLExpired",
                                             f"{self.kind} {self.name} finished {ttl}s ago; deleting it."))
            else:
                self.out.requeue_in(remaining)

    # ---- the job's NetworkPolicy ------------------------------------------------------------------

    def _network_policy(self) -> None:
        """Create the policy the job should have (before its pods: the reconciler creates no pod
        while it is missing), patch it back when the ports, the peers or someone's edit changed it,
        delete it when the job no longer wants one. A finished job's policy is left as it is."""
        view = self.network_policy
        if view is None:
            return
        existing = view.existing
        if existing is not None and existing["metadata"].get("deletionTimestamp"):
            return  # on its way out; recreated once it is gone
        if not netpol.wanted(self.job, view.default_on):
            if existing is not None:
                self.out.child(netpol.KIND).delete = existing
            return
        if existing is None:
            self.out.child(netpol.KIND).create = netpol.build_network_policy(self.job, self.job_kind)
            return
        patch = netpol.spec_patch(existing, self.job)
        if patch is not None:
            self.out.child(netpol.KIND).patch = (existing, patch)

    # ---- the gang scheduler's PodGroup -------------------------------------------------------------

    def _pod_group(self) -> None:
        """Create the job's PodGroup (before its pods: the reconciler creates no pod while it is
        missing), or patch it when the job's gang changed (a role scaled, minAvailable edited)."""
        view = self.gang
        if view is None:
            return
        existing = view.existing
        if existing is not None and existing["metadata"].get("deletionTimestamp"):
            return  # on its way out (a suspension): recreated once it is gone
        if existing is None:
            self.out.child(view.scheduler.kind).create = gang.build_pod_group(self.job, view.scheduler, self.job_kind)
            return
        patch = gang.spec_patch(existing, self.job, view.scheduler)
        if patch is not None:
            self.out.child(view.scheduler.kind).patch = (existing, patch)

    def _drop_pod_group(self) -> None:
        view = self.gang
        if view is not None and view.existing is not None and not view.existing["metadata"].get("deletionTimestamp"):
            self.out.child(view.scheduler.kind).delete = view.existing

    def _gang_admitted(self) -> bool:
        return self.gang is None or gang.admitted(self.gang)

    # ---- suspend ---------------------------------------------------------------------------------

    def _suspend(self, reason: str, message: str) -> None:
        for pod in self.live_pods():
            self.delete(pod, reason)
        if self.service is not None and not self.service["metadata"].get("deletionTimestamp"):
            self.out.delete_service = self.service
        if self.condition(cond.SUSPENDED, True, reason, message):
            self.out.events.append(Event("Normal", reason, message))
        self.condition_false(cond.RUNNING, reason, message)
        self.condition_false(cond.RESTARTING, reason, message)

    # ---- deadline ------------------------------------------------------------------------------

    def _deadline_passed(self) -> bool:
        limit = self.spec.get("activeDeadlineSeconds")
        started = parse_time(self.status.get("startTime"))
        if not isinstance(limit, int) or started is None:
            return False
        remaining = (started + timedelta(seconds=limit) - self.now).total_seconds()
        if remaining > 0:
            self.out.requeue_in(remaining)
            return False
        self.fail("DeadlineExceeded",
                   f"{self.kind} {self.name} ran longer than activeDeadlineSeconds={limit}.")
        return True

    # ---- pods stuck terminating on dead nodes --------------------------------------------------

    def _handle_terminating(self) -> None:
        for pod in self.observed.all():
            if not podstate.is_terminating(pod) or podstate.uid(pod) in self.deleting:
                continue
            node = podstate.node_name(pod)
            if not node or self.node_ready(node) is not NOT_READY:
                continue
            deadline = parse_time(pod["metadata"]["deletionTimestamp"]) or self.now
            remaining = (deadline + timedelta(seconds=FORCE_DELETE_AFTER) - self.now).total_seconds()
            if remaining <= 0:
                self.delete(pod, "NodeNotReady", force=True)
            else:
                self.out.requeue_in(remaining)

    # ---- a disrupted member restarts the group (restartScope All) ------------------------------------

    def _group_restart(self) -> None:
        """Delete every live pod of the job, uncounted, when one of its members was disrupted and the
        job asks for restartScope All (`controller.job.disruptions`)."""
        if self.spec.get("restartScope") != "All":
            return
        found = disruptions.group_restart(self.spec, self.observed.all(), self.live_pods(), self.now,
                                          empty_slots=self._vanished_members(), uncounted=self._uncounted,
                                          node_lost=self._node_lost)
        if found is None:
            return
        for pod in found.restart:
            self.delete(pod, "Disrupted")
        self._restarting("Disrupted", found.message(self.kind, self.name))

    def _vanished_members(self) -> list[str]:
        """Member pods missing from a Running job whose live members have the current TF_CONFIG."""
        if not cond.is_true(self.conditions, cond.RUNNING):
            return []
        live = [p for p in self.live_pods() if disruptions.is_member(p)]
        if not live or any(podstate.cluster_hash(p) != self._cluster.hash for p in live):
            return []
        return [pod_name(self.name, role, index) for role, index in desired_pod_keys(self.job)
                if role in disruptions.MEMBER_ROLES and not self.observed.by_slot.get((role, index))]

    def _node_lost(self, pod: Mapping[str, Any]) -> bool:
        node = podstate.node_name(pod)
        return bool(node) and self.node_ready(node) is NOT_READY

    def _uncounted(self, pod: Mapping[str, Any]) -> bool:
        """Whether a failed pod's failure is a disruption no failure rule claims."""
        role = (podstate.slot(pod) or ("", 0))[0]
        decision = decide(self.spec, failure_of(self.job, role, pod))
        return decision.action == IGNORE and decision.rule is None

    # ---- success -------------------------------------------------------------------------------

    def _succeeded(self) -> bool:
        spec = self.spec
        if role_replicas(spec, "chief") > 0:
            done, who = self._slot_succeeded("chief", 0), "chief"
        elif spec.get("successPolicy") == "AllWorkers":
            done = all(self._slot_succeeded("worker", i) for i in range(role_replicas(spec, "worker")))
            who = "all workers"
        else:
            done, who = self._slot_succeeded("worker", 0), "worker 0"
        if not done:
            return False
        message = f"{self.kind} {self.name} succeeded: {who} completed."
        self.condition(cond.SUCCEEDED, True, "JobSucceeded", message)
        self.condition_false(cond.RUNNING, "JobSucceeded", message)
        self.condition_false(cond.RESTARTING, "JobSucceeded", message)
        self.status["completionTime"] = self.stamp
        self.out.events.append(Event("Normal", "JobSucceeded", message))
        self.clean_up(succeeded=True)
        self.requeue_for_ttl()
        return True

    def _slot_succeeded(self, role: str, index: int) -> bool:
        return any(podstate.phase(p) == "Succeeded" for p in self.observed.by_slot.get((role, index), []))

    # ---- topology change -----------------------------------------------------------------------

    def _rescale(self) -> None:
        desired = set(desired_pod_keys(self.job))
        current_hash = self._cluster.hash
        stale = []
        for key, pods in self.observed.by_slot.items():
            for pod in pods:
                if podstate.is_terminating(pod) or podstate.uid(pod) in self.deleting:
                    continue
                if key not in desired:
                    if podstate.is_active(pod) or podstate.phase(pod) == "Failed":
                        self.delete(pod, "ScaledDown")
                        stale.append(pod)
                elif podstate.is_active(pod) and podstate.cluster_hash(pod) != current_hash:
                    self.delete(pod, "Rescaled")
                    stale.append(pod)
        for pod in self.observed.strays:
            if not podstate.is_terminating(pod):
                self.delete(pod, "Stray")
        if stale:
            self._restarting("Rescaled", f"The job's topology changed; {len(stale)} pod(s) are replaced "
                             "with the new TF_CONFIG.")

    # ---- creation ------------------------------------------------------------------------------

    def _create_missing(self) -> None:
        admitted = self._gang_admitted()
        other_schedulers: set[str] = set()
        for role, index in desired_pod_keys(self.job):
            if self.observed.by_slot.get((role, index)) or not admitted:
                continue  # a pod (maybe terminating) still holds the name, or the gang is not admitted yet
            pod = build_pod(self.job, role, index, self.cluster_domain, self._cluster, self.profiles, self.job_kind)
            if self.gang is not None:
                other = gang.decorate_pod(pod, self.name, gang.task_name(self.job, role), self.gang.scheduler)
                if other:
                    other_schedulers.add(other)
            self.out.create_pods.append(pod)
        if other_schedulers and self.gang is not None:
            self.out.events.append(Event("Warning", "SetPodTemplateSchedulerName", (
                f"Pod templates name scheduler(s) {', '.join(sorted(other_schedulers))}; the gang scheduler "
                f"{self.gang.scheduler.scheduler_name} is not used for those pods.")))
        # Pods that exist without a startTime were created by an operator that died before writing
        # it: start the clock now, or activeDeadlineSeconds would never fire.
        if not self.status.get("startTime") and (self.out.create_pods or self.live_pods()):
            self.status["startTime"] = self.stamp
            limit = self.spec.get("activeDeadlineSeconds")
            if isinstance(limit, int):
                self.out.requeue_in(float(limit))
        if self.service is None:
            self.out.create_service = build_service(self.job, self.job_kind)

    # ---- Running -------------------------------------------------------------------------------

    def _running_condition(self) -> None:
        current_hash = self._cluster.hash
        all_running = not self.out.create_pods and not self.deleting
        for role, index in desired_pod_keys(self.job):
            pods = [p for p in self.observed.by_slot.get((role, index), []) if not podstate.is_terminating(p)]
            if any(podstate.phase(p) == "Succeeded" for p in pods):
                continue
            if not any(podstate.phase(p) == "Running" and podstate.cluster_hash(p) == current_hash for p in pods):
                all_running = False
        if all_running:
            message = f"{self.kind} {self.name} is running."
            # The first Running is told by its condition (as Kubernetes' Job and Kubeflow do); running
            # again after a restart, a suspension or a repair is news, and gets an event.
            again = cond.find(self.conditions, cond.RUNNING) is not None
            if self.condition(cond.RUNNING, True, "JobRunning", message) and again:
                self.out.events.append(Event("Normal", "JobRunning", message))
            self.condition_false(cond.RESTARTING, "JobRunning", message)
        elif cond.is_true(self.conditions, cond.RESTARTING):
            self.condition_false(cond.RUNNING, "Restarting", "Pods are being replaced.")

    # ---- Pending: pods that cannot be scheduled or started ------------------------------------------

    def _pending_condition(self) -> None:
        """`Pending=True` with the scheduler's or kubelet's reason while some live pod of an active job
        cannot be scheduled or started (a Warning event when the reason changes); False once no pod
        has such a problem. Only a job that ever had one carries the condition."""
        finished = any(cond.is_true(self.conditions, kind) for kind in (cond.SUCCEEDED, cond.FAILED, cond.SUSPENDED))
        problem = None if finished else pending.summarize(self.live_pods())
        if self.gang is not None and not finished:
            problem = self._gang_pending(problem)
        if problem is None:
            self.condition_false(cond.PENDING, "Resolved", "No pod of the job is waiting to be scheduled or "
                                  "started with a problem.")
            return
        before = cond.find(self.conditions, cond.PENDING)
        was = before.get("reason") if before is not None and before.get("status") == "True" else None
        if self.condition(cond.PENDING, True, problem.reason, problem.message) and was != problem.reason:
            self.out.events.append(Event("Warning", problem.reason, problem.message))

    def _gang_pending(self, problem: pending.Pending | None) -> pending.Pending | None:
        """The Pending condition with the gang's side: pods the scheduler holds get the PodGroup's
        phase after the scheduler's reason; a gang its scheduler has not admitted (Volcano: so no pod
        exists yet) is Pending itself."""
        assert self.gang is not None
        said = gang.describe(self.gang, self.name)
        if problem is not None:
            return pending.Pending(problem.reason, f"{problem.message}; {said}", problem.pods)
        missing = [key for key in desired_pod_keys(self.job) if not self.observed.by_slot.get(key)]
        if self._gang_admitted() or not missing or self.gang.existing is None:
            return None  # a group being created (this very pass) is not a problem: no Warning for it
        return pending.Pending("PodGroupPending", f"{self.kind} {self.name} waits for {self.gang.scheduler.name} "
                               f"to admit its gang of {gang.min_member(self.job)} pod(s): {said}.", ())

    # ---- helpers -------------------------------------------------------------------------------

    def _finish_status(self) -> Plan:
        status = self.status
        status["conditions"] = self.conditions
        status["state"] = cond.state(self.conditions)
        restarts = self.role_restarts()  # before the replica statuses that publish them are replaced
        status["replicaStatuses"] = self._replica_statuses()
        budgets.add_budgets(status["replicaStatuses"], self.spec, restarts)
        present = {podstate.uid(p) for p in self.observed.all()}
        counted = sorted(self._counted_failed_pods & present)
        if counted:
            status["countedFailedPods"] = counted
        else:
            status.pop("countedFailedPods", None)
        status.setdefault("restartCount", 0)
        generation = self.job["metadata"].get("generation")
        if generation is not None:
            status["observedGeneration"] = generation
        self.out.status = status
        return self.out

    def _replica_statuses(self) -> dict[str, dict[str, Any]]:
        result: dict[str, dict[str, Any]] = {}
        for role in ROLES:
            if role not in self.spec:
                continue
            active = succeeded = failed = 0
            for (pod_role, _), pods in self.observed.by_slot.items():
                if pod_role != role:
                    continue
                for pod in pods:
                    # Deleted by this plan or an earlier one whose deletion the cache has not shown
                    # yet: counted as gone, so the counts do not bounce back up meanwhile (one status
                    # write per cleanup, not one per watch event).
                    if podstate.uid(pod) in self.deleting or podstate.uid(pod) in self.pending_deletes:
                        continue
                    if podstate.is_active(pod):
                        active += 1
                    elif podstate.phase(pod) == "Succeeded":
                        succeeded += 1
                    elif podstate.phase(pod) == "Failed" and not podstate.is_terminating(pod):
                        failed += 1
            result[role] = {"active": active, "succeeded": succeeded, "failed": failed,
                            "selector": role_selector(self.name, role)}
        return result
