"""Carry out one job's plan against the API server: the only place the controller writes.

`Reconciler.reconcile(key)` reads the job, its pods, Service and NetworkPolicy from the read side
it is given (`Caches`: the informer caches, `controller.caches.JobCaches`, never the API server), asks
`controller.job.plan.plan_job` what to do, and does it:

* deletes first (UID preconditions, so a recreated pod of the same name is never hit; 404 and a
  UID mismatch both mean "already gone"), with expectations raised before the call;
* then the Service (alongside the first pod batch) and pod creates in parallel, in slow-start
  batches (8, 16, 32, ...), so a systematic error (quota, invalid template) costs a few calls, not
  hundreds. client-go's controllers start at 1; a TF job usually has a handful of pods, and creating
  them in one round rather than three (1, 2, 2 for five pods) gets the job's pods to the scheduler
  and the endpoint controllers together;
* then the status through the status subresource, only when it changed, as a merge patch guarded
  by the resourceVersion it was computed from -- except right after a pass that only created pods:
  their own ADDED events bring the next reconcile within the pod batch period, and that one writes
  the status (planned from the unwritten one, so its timestamps stand). In a burst this keeps the
  status writes off the creation path, and when the pods run by then, "Created" and "Running" go
  out as one write. The unwritten status lives only in memory: lost in a crash, it is recomputed;
* then events, and the job's own deletion when its TTL expired.

What only the API server can tell is classified here (`classify`: invalid, a name held by an
object that is not ours, a quota refusal, the namespace going away, anything else) and handed to
the pure core, `controller.job.refusals.fold_refusals`, which says what it means for the plan: a
template the server rejects (422) fails the job with `InvalidPodTemplate` -- with the cleanup and
TTL requeue of any failed job, whose deletions are then made here --, a name conflict or a quota
refusal is reported and retried with back-off. What is to be retried, and transient errors, end in
`RequeueError`, which the worker turns into a rate-limited requeue.

Both kinds go through the same steps: the key says which (`controller.job.kinds`); a TFJob is
planned as its job model and its status is stored as Kubeflow writes it.

The job's NetworkPolicy and its gang scheduler's PodGroup (docs/production.md), when it wants them,
are written before its pods (`controller.companions`) and fail closed: while one cannot be created (a
name conflict, a refusal), no pod is created, so a job that asked for isolation never runs without
it, and no pod reaches a gang scheduler before its group. A policy the API server rejects (an
invalid `allowFrom` peer) fails the job with `InvalidNetworkPolicy`, a PodGroup it rejects with
`InvalidSchedulingPolicy`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

import structlog

from controller import companions
from controller.companions import NETWORK_POLICY, CompanionWriter, Step
from controller.events import EventRecorder
from controller.job import netpol
from controller.job.draft import Event, Plan, PodDeletion
from controller.job.gang import GangView
from controller.job.kinds import JobKind, parse_key
from controller.job.mergepatch import merge_patch
from controller.job.netpol import PolicyView, policy_name
from controller.job.plan import plan_job
from controller.job.progress import target as progress_target
from controller.job.refusals import Cause, Refusal, fold_refusals
from controller.kueue import protocol as kueue
from controller.kueue.gate import KueueGate
from controller.memory import JobMemory
from controller.metrics import ControllerMetrics
from controller.options import DEFAULTS, ControllerOptions
from controller.outcome import Outcome, classify, owned_by
from kube import ApiError, Kube, resource_path
from kube.clock import REAL_CLOCK, Clock
from kube.retry import retry_transient
from tfjob_api import conditions as cond
from tfjob_api import podstate
from tfjob_api.bounds import fit, without_progress
from tfjob_api.names import REPLICA_TYPE_LABEL
from tfjob_api.timeutil import format_time

log = structlog.get_logger(__name__)


class Caches(Protocol):
    """The read side the reconciler needs (`controller.caches.JobCaches`): informer caches, never mutated."""

    def get_job(self, key: str) -> Mapping[str, Any] | None: ...
    def pods_of(self, job_uid: str) -> list[Mapping[str, Any]]: ...
    def get_service(self, namespace: str, name: str) -> Mapping[str, Any] | None: ...
    def get_network_policy(self, namespace: str, name: str) -> Mapping[str, Any] | None: ...
    def get_pod_group(self, namespace: str, name: str) -> Mapping[str, Any] | None: ...
    def node_ready(self, name: str) -> bool | None: ...


STALE_CACHE_WAIT = 1.0  # seconds before retrying a conflicting status write when the job cannot be read
SLOW_START_INITIAL_BATCH = 8  # pods created at once before the first error check; then doubling


class RequeueError(Exception):
    """The reconcile did what it could; try again after a rate-limited delay, and not before
    `retry_after` seconds when the API server asked for that (Retry-After)."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def _count_created_as_active(plan: Plan, created: AbstractSet[str]) -> None:
    """Count pods the API server has accepted but the cache does not show yet as active.

    The planner sees only the cache, so without this a burst of creates would be reported as
    active 0, then 1, 2, ... as the ADDED events arrive: one status write per event instead of one.
    (The planner lists every slot without a pod in `create_pods`, created or not.)"""
    statuses = plan.status.get("replicaStatuses") or {}
    for pod in plan.create_pods:
        meta = pod["metadata"]
        entry = statuses.get(meta["labels"].get(REPLICA_TYPE_LABEL))
        if meta["name"] in created and entry is not None:
            entry["active"] = entry.get("active", 0) + 1


class Reconciler:
    def __init__(
        self,
        kube: Kube,
        caches: Caches,
        options: ControllerOptions = DEFAULTS,
        *,
        memory: JobMemory | None = None,
        recorder: EventRecorder | None = None,
        metrics: ControllerMetrics | None = None,
        clock: Clock = REAL_CLOCK,
        kueue_gate: KueueGate | None = None,
        policy_cache: Callable[[bool], bool] | None = None,
    ) -> None:
        """`caches` is the read side (`controller.caches.JobCaches` in the controller); `options`
        give the cluster domain, the NetworkPolicy default, the start-up profiles for new pods and
        the size of the create pool. `policy_cache(wanted)` says whether the NetworkPolicy cache can
        answer for a job, and starts it when the job wants a policy (`JobCaches.network_policy_cache`);
        None: it always can (a cache that watches NetworkPolicies from the start)."""
        self.policy_cache = policy_cache
        self.kube = kube
        self.kueue_gate = kueue_gate
        self.network_policy_default = options.network_policy_default
        self.profiles = options.profiles
        self.caches = caches
        self.memory = memory if memory is not None else JobMemory(clock)
        self.expectations = self.memory.expectations
        self.recorder = recorder
        self.metrics = metrics
        self.cluster_domain = options.cluster_domain
        self.clock = clock
        self._pool = ThreadPoolExecutor(max_workers=options.create_parallelism, thread_name_prefix="create")
        self.gang = options.gang
        self.pod_group = companions.pod_group(self.gang) if self.gang else None
        self.companions = CompanionWriter(kube, lambda job, group, version, plural, name:
                                          self._ours(job, plural, name, group=group, version=version))

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    # ---- one reconcile ---------------------------------------------------------------------------

    def reconcile(self, key: str) -> Outcome:
        kind, _ = parse_key(key)
        cached = self.caches.get_job(key)
        if cached is None:
            self.memory.forget(key)
            return Outcome()
        # `stored` is the job as the API server has it; `job` is its model, what the planner reads
        # (for a TensorFlowJob, itself with its defaults; for a TFJob, its translation).
        stored = self.memory.freshest(key, cached)
        job = kind.model(stored)
        if job["metadata"].get("deletionTimestamp"):
            return Outcome()  # garbage collection removes the children
        namespace, name, uid = job["metadata"]["namespace"], job["metadata"]["name"], job["metadata"]["uid"]
        # Expectations are read before the cache (as client-go does): an ADDED event landing in
        # between then shows in the cache rather than vanishing from both.
        pending_creates = self.expectations.pending_creations(key)
        pods = self.caches.pods_of(uid)
        service = self.caches.get_service(namespace, name)
        # A same-named Service that is not ours is never created over and never deleted.
        foreign_service = service is not None and not owned_by(service, uid)
        policy_view, foreign_policy = (self._policy_view(namespace, name, uid)
                                       if kind.network_policy and self._policies_known(key, job) else (None, False))
        gang_view, foreign_group = self._gang_view(namespace, name, uid) if self.gang else (None, False)
        # Plan from the status the last pass left unwritten, if any; write (below) against `job`,
        # which holds what the server has.
        deferred = self.memory.take_deferred(key, job)
        planned = job if deferred is None else {**job, "status": deferred}
        decision = None
        if self.kueue_gate is not None and kind.kueue_gate and kueue.is_queued(planned):
            decision = self.kueue_gate.before_plan(planned)
        plan = plan_job(
            decision.job if decision else planned, pods, None if foreign_service else service,
            now=self.clock.wall(), node_ready=self.caches.node_ready,
            pending_deletes=self.expectations.pending_deletions(key), cluster_domain=self.cluster_domain,
            gate=decision.gate if decision else None, network_policy=policy_view, profiles=self.profiles,
            validate=lambda model: self.memory.validated(key, *kind.validation(stored, model)), kind=kind,
            gang_view=gang_view,
        )
        # Training progress (spec.progress): read by the poller, merged here into what is written anyway.
        plan.status = self.memory.progress.follow(
            key, job, progress_target({**job, "status": plan.status}, pods), plan.status)
        ignored = kind.ignored_fields(stored, gang_scheduling=self.gang is not None)
        if ignored and cond.find((planned.get("status") or {}).get("conditions") or [], cond.CREATED) is None:
            plan.events += [Event("Warning", "IgnoredField", note) for note in ignored]
        outcome = Outcome(requeue_after=plan.requeue_after)
        cache_version = cached["metadata"].get("resourceVersion")
        if plan.status.get("retriedFailures") != (job.get("status") or {}).get("retriedFailures"):
            # Count failures before deleting the failed pods: a crash in between must not lose one
            # (the status names the pods it counted, so none is counted twice either).
            updated = self._write_status(key, kind, job, stored, plan.status, cache_version)
            if updated is not None:
                stored = updated
                job = {**job, "metadata": updated["metadata"],
                       "status": kind.model_status(updated.get("status") or {})}
                outcome.status_written = True
        problems = self._delete_pods(key, plan.delete_pods, outcome)
        if plan.delete_service is not None:
            problems += self._delete_service(plan.delete_service, outcome)
        refusals: list[Refusal] = []  # what the API server would not take, in the order it said so
        policy_problems, hold_pods = self.companions.carry_out(
            NETWORK_POLICY, Step(plan.create_network_policy, plan.patch_network_policy, plan.delete_network_policy),
            job, foreign_policy, outcome, refusals)
        problems += policy_problems
        if gang_view is not None and self.pod_group is not None:  # both exactly when self.gang is set
            group_problems, hold_for_group = self.companions.carry_out(
                self.pod_group, Step(plan.create_pod_group, plan.patch_pod_group, plan.delete_pod_group),
                job, foreign_group, outcome, refusals)
            problems += group_problems
            hold_pods = hold_pods or hold_for_group
        if hold_pods:  # fail closed: no pod runs without its isolation, nor reaches a gang scheduler alone
            plan.create_pods = []
            if not (planned.get("status") or {}).get("startTime"):
                plan.status.pop("startTime", None)
        if foreign_service:
            if plan.create_service is not None:
                refusals.append(Refusal("Service", name, Cause.NAME_TAKEN))
            plan.create_service = None
        service_created = None
        if plan.create_service is not None:  # (None when a foreign Service holds the name)
            # Alongside the first pod batch rather than before it: one round trip less per new job.
            service_created = self._pool.submit(self._create_service, job, plan.create_service, outcome)
        if plan.create_pods:
            problems += self._create_pods(key, plan, job, outcome, pending_creates, refusals)
            _count_created_as_active(plan, pending_creates | set(outcome.created))
        if service_created is not None:
            problems += self._service_problems(name, service_created.result(), refusals)
        if refusals:  # the pure core says what they mean for the job; carry out what that adds
            folded = fold_refusals(plan, job, refusals, pods=pods, service=None if foreign_service else service,
                                   now=self.clock.wall(), pending_deletes=self.expectations.pending_deletions(key))
            problems += folded.problems + self._delete_pods(key, folded.delete_pods, outcome)
            if folded.delete_service is not None:
                problems += self._delete_service(folded.delete_service, outcome)
            outcome.requeue_after = plan.requeue_after
        if self._may_defer_status(plan, outcome, problems):
            self.memory.defer(key, job, plan.status)
            outcome.status_deferred = True
        elif self._write_status(key, kind, job, stored, plan.status, cache_version) is not None:
            outcome.status_written = True
        if decision is not None and self.kueue_gate is not None:
            holding = sum(1 for p in pods if podstate.phase(p) in ("Pending", "Running", "Unknown"))
            self.kueue_gate.after_plan(job, plan.status, decision.workload, holding)
        self._emit(job, plan, outcome)
        if plan.delete_job:
            problems += self._delete_job(kind, job, outcome)
        if problems:
            outcome.errors = problems
            raise RequeueError("; ".join(problems), outcome.retry_after)
        return outcome

    # ---- deletes -------------------------------------------------------------------------------

    def _delete_pods(self, key: str, deletions: list[PodDeletion], outcome: Outcome) -> list[str]:
        if not deletions:
            return []
        self.expectations.expect_deletions(key, [d.pod["metadata"]["uid"] for d in deletions])
        results = list(self._pool.map(self._delete_pod, deletions))
        failures = []
        for deletion, result in zip(deletions, results, strict=True):
            meta = deletion.pod["metadata"]
            if result is True:
                outcome.deleted.append(meta["name"])
                if self.metrics:
                    self.metrics.pods_deleted.labels(deletion.reason).inc()
            elif isinstance(result, ApiError):
                outcome.server_asked_to_wait(result)
                self.expectations.deletion_observed(key, meta["uid"])
                failures.append(f"delete pod {meta['name']}: {result}")
        return failures

    def _delete_pod(self, deletion: PodDeletion) -> bool | ApiError:
        """True when this call deleted the pod, False when it was gone already (404) or a newer pod
        holds the name (UID precondition failed: not ours to delete), the error otherwise."""
        meta = deletion.pod["metadata"]
        path = resource_path("", "v1", "pods", meta["namespace"], meta["name"])
        try:
            retry_transient(self.kube.delete)(path, uid=meta["uid"], grace_seconds=0 if deletion.force else None)
        except ApiError as error:
            if error.not_found or error.conflict:
                return False
            return error
        return True

    def _delete_service(self, service: Mapping[str, Any], outcome: Outcome) -> list[str]:
        meta = service["metadata"]
        try:
            retry_transient(self.kube.delete)(
                resource_path("", "v1", "services", meta["namespace"], meta["name"]), uid=meta["uid"])
            outcome.deleted.append(f"service/{meta['name']}")
        except ApiError as error:
            if not (error.not_found or error.conflict):
                return [f"delete service {meta['name']}: {error}"]
        return []

    def _delete_job(self, kind: JobKind, job: Mapping[str, Any], outcome: Outcome) -> list[str]:
        meta = job["metadata"]
        try:
            retry_transient(self.kube.delete)(
                resource_path(kind.group, kind.version, kind.plural, meta["namespace"], meta["name"]),
                uid=meta["uid"], propagation="Background")
            outcome.job_deleted = True
        except ApiError as error:
            if not (error.not_found or error.conflict):
                return [f"delete job: {error}"]
        return []

    # ---- the job's NetworkPolicy ------------------------------------------------------------------

    def _policies_known(self, key: str, job: Mapping[str, Any]) -> bool:
        """Whether this pass manages the job's NetworkPolicy. Not while the NetworkPolicy cache is
        not there: a job that wants none has nothing to manage then (no informer is started for it,
        so an operator whose jobs ask for no policy needs no grant on them), and a job that wants
        one is retried once the cache has filled -- before anything else, so no pod runs without
        the isolation the job asked for."""
        if self.policy_cache is None:
            return True
        wanted = netpol.wanted(job, self.network_policy_default)
        if self.policy_cache(wanted):
            return True
        if wanted:
            raise RequeueError(f"{key}: waiting for the NetworkPolicy cache before creating the job's objects")
        return False

    def _gang_view(self, namespace: str, name: str, job_uid: str) -> tuple[GangView, bool]:
        """What the planner may know of the job's PodGroup, and whether an object the job does not
        own holds its name."""
        assert self.gang is not None
        cached = self.caches.get_pod_group(namespace, name)
        foreign = cached is not None and not owned_by(cached, job_uid)
        return GangView(self.gang, None if foreign else cached), foreign

    def _policy_view(self, namespace: str, name: str, job_uid: str) -> tuple[PolicyView, bool]:
        """What the planner may know of the job's NetworkPolicy, and whether an object the job does
        not own holds its name."""
        cached = self.caches.get_network_policy(namespace, policy_name(name))
        foreign = cached is not None and not owned_by(cached, job_uid)
        return PolicyView(self.network_policy_default, None if foreign else cached), foreign

    # ---- creates -------------------------------------------------------------------------------

    def _create_service(self, job: Mapping[str, Any], body: dict[str, Any],
                        outcome: Outcome) -> tuple[ApiError | None, bool | None]:
        """Create the job's Service (on the create pool, beside the first pod batch): (None, None) when
        created, else the error and, for AlreadyExists, whether the existing Service is ours (None: it
        could not be read). The plan is left alone here: `_service_problems` folds the outcome into it
        on the worker's thread, so two threads never edit the job's conditions at once."""
        meta = body["metadata"]
        try:
            retry_transient(self.kube.create)(resource_path("", "v1", "services", meta["namespace"]), body)
        except ApiError as error:
            outcome.server_asked_to_wait(error)  # as for pods: the requeue must not come sooner
            return error, (self._ours(job, "services", meta["name"]) if error.already_exists else False)
        outcome.created.append(f"service/{meta['name']}")
        return None, None

    @staticmethod
    def _service_problems(name: str, created: tuple[ApiError | None, bool | None],
                          refusals: list[Refusal]) -> list[str]:
        error, owner = created
        if error is None or owner is True:
            return []  # created, or ours already (the cache was behind)
        if owner is None:
            return [f"create service {name}: it exists and its owner could not be read; retrying"]
        refusals.append(classify("Service", name, error))
        return []

    def _create_pods(self, key: str, plan: Plan, job: Mapping[str, Any], outcome: Outcome,
                     pending: frozenset[str], refusals: list[Refusal]) -> list[str]:
        todo = [p for p in plan.create_pods if p["metadata"]["name"] not in pending]
        if not todo:
            return []
        self.expectations.expect_creations(key, [p["metadata"]["name"] for p in todo])
        problems: list[str] = []
        start = 0
        batch = SLOW_START_INITIAL_BATCH
        failed = False
        while start < len(todo):
            chunk = todo[start:start + batch]
            errors = list(self._pool.map(self._create_pod, chunk))
            for pod, error in zip(chunk, errors, strict=True):
                name = pod["metadata"]["name"]
                if error is None:
                    outcome.created.append(name)
                    if self.metrics:
                        self.metrics.pods_created.inc()
                    continue
                outcome.server_asked_to_wait(error)
                owner = self._ours(job, "pods", name) if error.already_exists else False
                self.expectations.creation_observed(key, name)
                if owner is True:
                    continue  # the cache was behind (its ADDED may be handled already): at worst one more 409
                if owner is None:
                    problems.append(f"create pod {name}: it exists and its owner could not be read; retrying")
                else:
                    refusals.append(classify("Pod", name, error))
                failed = True
            start += len(chunk)
            if failed:  # slow start: a systematic error costs one batch, not every pod
                for pod in todo[start:]:
                    self.expectations.creation_observed(key, pod["metadata"]["name"])
                break
            batch *= 2
        return problems

    def _create_pod(self, pod: dict[str, Any]) -> ApiError | None:
        try:
            retry_transient(self.kube.create)(resource_path("", "v1", "pods", pod["metadata"]["namespace"]), pod)
        except ApiError as error:
            return error
        return None

    def _ours(self, job: Mapping[str, Any], plural: str, name: str, group: str = "",
              version: str = "v1") -> bool | None:
        """Whether the existing object of that name is controlled by this job; None when that
        cannot be told now (it vanished meanwhile, or the read failed): retry, never a conflict."""
        try:
            existing = retry_transient(self.kube.get)(
                resource_path(group, version, plural, job["metadata"]["namespace"], name))
        except ApiError:
            return None
        return owned_by(existing, job["metadata"]["uid"])

    # ---- status --------------------------------------------------------------------------------

    def _catch_up_after_conflict(self, key: str, job_path: str, job_uid: str, cache_version: str) -> None:
        """A 409 on the status write means the cache is behind the server: someone else changed the
        job, or our own write went through and only its answer was lost. Until the watch brings the
        newer version, every reconcile would send the same doomed patch (seen at 10 a second while
        a throttled watch was down), so read the job once and reconcile from that, exactly as from
        our own written status. If the read fails too, wait a while for the watch instead."""
        try:
            fresh = retry_transient(self.kube.get)(job_path)
        except ApiError as error:
            raise RequeueError(f"status write conflict, and the job could not be read: {error}",
                               max(error.retry_after or 0.0, STALE_CACHE_WAIT)) from error
        if fresh["metadata"].get("uid") != job_uid:
            return  # deleted and created anew: the cache will bring the new job
        self.memory.remember_written(key, cache_version, fresh)

    @staticmethod
    def _may_defer_status(plan: Plan, outcome: Outcome, problems: list[str]) -> bool:
        """Whether this pass's status can wait for the next reconcile: only when the pass did
        nothing but create, and at least one pod, whose ADDED event is sure to bring that reconcile
        (the informer delivers it, or a relist does). Failures, deletions and finished jobs are
        written at once."""
        created_pods = any("/" not in name for name in outcome.created)  # not service/..., networkpolicy/...
        return created_pods and not problems and not outcome.deleted and not plan.delete_job

    def _write_status(self, key: str, kind: JobKind, job: Mapping[str, Any], stored: Mapping[str, Any],
                      status: dict[str, Any], cache_version: str | None = None) -> Mapping[str, Any] | None:
        """Patch the status if it changed; return the updated job as stored (None when nothing was
        written). `job` is the model the planner computed `status` for, `stored` the job as the API
        server has it; `cache_version` is the resourceVersion the informer cache holds (for the overlay)."""
        old = stored.get("status") or {}
        # Cut to the CRD's limits: much of a status quotes pods, the scheduler or Kueue (tfjob_api.bounds).
        new = fit(kind.stored_status(job, status, old, format_time(self.clock.wall())), kind.status_schema())
        if old == new:
            return None
        meta = job["metadata"]
        path = resource_path(kind.group, kind.version, kind.plural, meta["namespace"], meta["name"], "status")
        try:
            try:
                updated = self._patch_status(path, meta, old, new)
            except ApiError as error:
                if error.status != 422 or "progress" not in new:
                    raise
                # Refused as invalid: what a pod reported must never keep the rest of the status from
                # being written (it would be refused on every reconcile, and the job never end).
                self._refused_status(job, error)
                updated = self._patch_status(path, meta, old, without_progress(new, str(error.message)))
        except ApiError as error:
            self.memory.forget_written(key)
            if error.not_found:
                return None
            if error.conflict:
                self._catch_up_after_conflict(key, path.removesuffix("/status"), meta["uid"],
                                              cache_version or meta["resourceVersion"])
            raise RequeueError(f"status write: {error}", error.retry_after) from error
        self.memory.remember_written(key, cache_version or meta["resourceVersion"], updated)
        self._count_transition(job.get("status") or {}, status)
        return updated

    def _patch_status(self, path: str, meta: Mapping[str, Any], old: Mapping[str, Any],
                      new: Mapping[str, Any]) -> dict[str, Any]:
        body = {"metadata": {"resourceVersion": meta["resourceVersion"]}, "status": merge_patch(old, new)}
        return retry_transient(self.kube.patch)(path, body)

    def _refused_status(self, job: Mapping[str, Any], error: ApiError) -> None:
        log.warning("status refused as invalid; writing it without progress", job=job["metadata"]["name"],
                    namespace=job["metadata"]["namespace"], error=str(error))
        if self.recorder is not None:
            self.recorder.record(job, "Warning", "StatusRefused",
                                 f"the API server refused the job's status, written again without its "
                                 f"progress: {error.message}")

    def _count_transition(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        if self.metrics is None or old.get("state") == new.get("state"):
            return
        if not old.get("state"):
            self.metrics.jobs_created.inc()
        state = new.get("state", "")
        current = cond.find(new.get("conditions") or [], state) or {}
        self.metrics.on_state_change(state, current.get("reason", ""))

    def _emit(self, job: Mapping[str, Any], plan: Plan, outcome: Outcome) -> None:
        """State changes one event each; creates and deletes one summary event per reconcile, so a
        1 000-worker job costs a few events rather than a thousand."""
        if self.recorder is None:
            return
        if outcome.created:
            self.recorder.record(job, "Normal", "SuccessfulCreate", _summary("Created", outcome.created))
        if outcome.deleted:
            reasons = sorted({d.reason for d in plan.delete_pods})
            why = f" ({', '.join(reasons)})" if reasons else ""
            self.recorder.record(job, "Normal", "SuccessfulDelete", _summary("Deleted", outcome.deleted) + why)
        for event in plan.events:
            self.recorder.record(job, event.type, event.reason, event.message)


def _summary(verb: str, names: list[str], shown: int = 10) -> str:
    listed = ", ".join(sorted(names)[:shown])
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return f"{verb} {len(names)} object(s): {listed}{more}"
