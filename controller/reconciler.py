"""Carry out one job's plan against the API server: the only place the controller writes.

`Reconciler.reconcile(key)` is three phases. Observe: read the job, its pods, its Service and
its object of each owned type (`controller.owned`: the NetworkPolicy, the PodGroup, ...) from the
read side it is given (`Caches`: the informer caches, `controller.caches.JobCaches`, never the API
server) into one `controller.observation.Observation`. Plan: ask the pure
`controller.job.plan.plan_job` what to do. Act: carry the plan out, step by step in `ACT_ORDER`,
which is where every ordering rule below lives:

* the status first when the failure count changed or the job finishes (`Plan.status_first`);
* deletes first (UID preconditions, so a recreated pod of the same name is never hit; 404 and a
  UID mismatch both mean "already gone"), with expectations raised before the call;
* then each owned object, in its declared order (below);
* then the Service (alongside the first pod batch) and pod creates in parallel, in slow-start
  batches (8, 16, 32, ...), so a systematic error (quota, invalid template) costs a few calls, not
  hundreds. client-go's controllers start at 1; a TF job usually has a handful of pods, and creating
  them in one round rather than three (1, 2, 2 for five pods) gets the job's pods to the scheduler
  and the endpoint controllers together;
* then the status through the status subresource, only when it changed, as a merge patch guarded
  by the resourceVersion it was computed from -- except right after a pass that only created pods:
  the next reconcile (soon after they all start, or `first_status_wait` later) writes it, planned from
  the unwritten one (so its timestamps stand): no status write on the creation path, and "Created"
  and "Running" in one write when the pods run by then. Kept only in memory: lost in a crash, recomputed;
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

The job's owned objects -- its NetworkPolicy and its gang scheduler's PodGroup (docs/production.md),
when it wants them, and any other declared type -- are written before its pods
(`controller.companions`), and those the pods wait for fail closed: while one cannot be created (a
name conflict, a refusal), no pod is created, so a job that asked for isolation never runs without
it, and no pod reaches a gang scheduler before its group. A policy the API server rejects (an
invalid `allowFrom` peer) fails the job with `InvalidNetworkPolicy`, a PodGroup it rejects with
`InvalidSchedulingPolicy`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

import structlog

from controller.companions import CompanionWriter
from controller.events import EventRecorder
from controller.job.children import DeclaredChild, Step
from controller.job.draft import Event, Plan, PodDeletion
from controller.job.gang import GangView
from controller.job.kinds import JobKind, parse_key
from controller.job.mergepatch import merge_patch
from controller.job.netpol import KIND as NETWORK_POLICY_KIND
from controller.job.netpol import PolicyView
from controller.job.plan import PlanInputs, plan_job
from controller.job.progress import target as progress_target
from controller.job.refusals import Cause, Refusal, fold_refusals
from controller.kueue import protocol as kueue
from controller.kueue.multikueue import MultiKueueGate
from controller.memory import JobMemory
from controller.metrics import ControllerMetrics
from controller.observation import Acting, Observation, ObservedChild
from controller.options import DEFAULTS, ControllerOptions
from controller.outcome import Outcome, classify, owned_by
from controller.owned import OwnedType, Writer, declarations, written_by
from kube import ApiError, Kube, resource_path
from kube.clock import REAL_CLOCK, Clock
from kube.retry import retry_transient
from tfjob_api import conditions as cond
from tfjob_api import podstate
from tfjob_api.bounds import fit, without_progress
from tfjob_api.timeutil import format_time

log = structlog.get_logger(__name__)


class Caches(Protocol):
    """The read side the reconciler needs (`controller.caches.JobCaches`): informer caches, never mutated."""

    def get_job(self, key: str) -> Mapping[str, Any] | None: ...
    def pods_of(self, job_uid: str) -> list[Mapping[str, Any]]: ...
    def get_service(self, namespace: str, name: str) -> Mapping[str, Any] | None: ...
    def get_owned(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None: ...
    def pod_group_events(self, pod_group: Mapping[str, Any] | None) -> list[Mapping[str, Any]]: ...
    def node_ready(self, name: str) -> bool | None: ...


STALE_CACHE_WAIT = 1.0  # seconds before retrying a conflicting status write when the job cannot be read
SLOW_START_INITIAL_BATCH = 8  # pods created at once before the first error check; then doubling


class RequeueError(Exception):
    """The reconcile did what it could; try again after a rate-limited delay, and not before
    `retry_after` seconds when the API server asked for that (Retry-After)."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Reconciler:
    def __init__(
        self, kube: Kube, caches: Caches,
        options: ControllerOptions = DEFAULTS,
        *,
        memory: JobMemory | None = None,
        recorder: EventRecorder | None = None,
        metrics: ControllerMetrics | None = None,
        clock: Clock = REAL_CLOCK,
        kueue_gate: MultiKueueGate | None = None,
        owned_cache: Callable[[str, bool], bool] | None = None,
        owned: Sequence[OwnedType] | None = None,
    ) -> None:
        """`caches` is the read side (`controller.caches.JobCaches` in the controller); `options`
        give the cluster domain, the NetworkPolicy default, the start-up profiles for new pods and
        the size of the create pool. `owned` are the owned types (`controller.owned`; by default those of
        `options`), of which it writes the companions. `owned_cache(kind, wanted)` says whether the cache
        of a lazy owned type (the NetworkPolicy's) can answer for a job, and starts it when the job wants
        such an object (`JobCaches.owned_cache`); None: it always can."""
        self.owned_cache = owned_cache
        self.owned = written_by(tuple(owned) if owned is not None else declarations(options), Writer.COMPANION)
        self.kube = kube
        self.kueue_gate = kueue_gate
        self.network_policy_default = options.network_policy_default
        self.profiles = options.profiles
        self.caches = caches
        self.memory = memory if memory is not None else JobMemory(clock)
        self.expectations = self.memory.expectations
        self.recorder = recorder
        self.metrics = metrics
        self.cluster_domain, self.first_status_wait = options.cluster_domain, options.first_status_wait
        self.clock = clock
        self._pool = ThreadPoolExecutor(max_workers=options.create_parallelism, thread_name_prefix="create")
        self.gang = options.gang
        self.companions = CompanionWriter(kube, lambda job, group, version, plural, name:
                                          self._ours(job, plural, name, group=group, version=version))

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    # ---- one reconcile: observe, plan, act ----------------------------------------------------------

    def reconcile(self, key: str) -> Outcome:
        seen = self._observe(key)
        if seen is None:
            return Outcome()
        return self._act(seen, self._plan(seen))

    def _observe(self, key: str) -> Observation | None:
        """The job and its children from the caches (None: nothing to do for the key)."""
        kind, _ = parse_key(key)
        cached = self.caches.get_job(key)
        if cached is None:
            self.memory.forget(key)
            return None
        # `stored`: the job as the API server has it; `job`: its model, what the planner reads (kinds.py).
        stored = self.memory.freshest(key, cached)
        job = kind.model(stored)
        if kind.dispatched(stored) and self.kueue_gate is not None:  # MultiKueue runs it on a worker
            self.kueue_gate.keep_dispatched(job)  # only its Workload is kept here
        if job["metadata"].get("deletionTimestamp") or kind.dispatched(stored):
            return None  # garbage collection removes the children; a dispatched job has none here
        namespace, name, uid = job["metadata"]["namespace"], job["metadata"]["name"], job["metadata"]["uid"]
        # Expectations are read before the cache (as client-go does): an ADDED event landing in
        # between then shows in the cache rather than vanishing from both.
        pending_creates = self.expectations.pending_creations(key)
        pods = self.caches.pods_of(uid)
        service = self.caches.get_service(namespace, name)
        # A same-named Service that is not ours is never created over and never deleted.
        foreign_service = service is not None and not owned_by(service, uid)
        owned = self._observe_owned(key, kind, job)
        # Plan from the status the last pass left unwritten, if any; write against `job` (the server's).
        deferred = self.memory.take_deferred(key, job)
        planned = job if deferred is None else {**job, "status": deferred}
        decision = None
        if self.kueue_gate is not None and self.kueue_gate.queues(kind) and kueue.is_queued(planned):
            decision = self.kueue_gate.before_plan(planned)
        return Observation(key, kind, cached["metadata"].get("resourceVersion"), stored, job, planned,
                           pending_creates, pods, None if foreign_service else service, foreign_service,
                           owned, decision)

    def _observe_owned(self, key: str, kind: JobKind, job: Mapping[str, Any]) -> dict[str, ObservedChild]:
        """Each owned type's object of the job, for the types this pass manages."""
        meta = job["metadata"]
        found: dict[str, ObservedChild] = {}
        for declared in self.owned:
            if not declared.for_kind(kind) or not self._cache_answers(key, job, declared):
                continue
            cached = self.caches.get_owned(declared.kind, meta["namespace"], declared.object_name(meta["name"]))
            foreign = cached is not None and not owned_by(cached, meta["uid"])
            found[declared.kind] = ObservedChild(None if foreign else cached, foreign)
        return found

    def _cache_answers(self, key: str, job: Mapping[str, Any], declared: OwnedType) -> bool:
        """Whether this pass manages the job's object of a lazy type. Not while its cache is not
        there: a job that wants none has nothing to manage then (no informer is started for it, so
        an operator whose jobs ask for no NetworkPolicy needs no grant on them), and a job that
        wants one is retried once the cache has filled -- before anything else, so no pod runs
        without, say, the isolation the job asked for."""
        if not declared.lazy or self.owned_cache is None:
            return True
        wanted = declared.wanted(job)
        if self.owned_cache(declared.kind, wanted):
            return True
        if wanted:
            raise RequeueError(f"{key}: waiting for the {declared.kind} cache before creating the job's objects")
        return False

    def _plan(self, seen: Observation) -> Plan:
        """What to do, from the observation alone (plus the progress the poller read)."""
        key, kind, stored, job, decision = seen.key, seen.kind, seen.stored, seen.job, seen.decision
        policy = seen.owned.get(NETWORK_POLICY_KIND)
        group = seen.owned.get(self.gang.kind) if self.gang is not None else None
        plan = plan_job(PlanInputs(
            decision.job if decision else seen.planned, seen.pods, seen.service, now=self.clock.wall(), kind=kind,
            node_ready=self.caches.node_ready, pending_deletes=self.expectations.pending_deletions(key),
            cluster_domain=self.cluster_domain, gate=decision.gate if decision else None, profiles=self.profiles,
            network_policy=PolicyView(self.network_policy_default, policy.existing) if policy else None,
            validate=lambda model: self.memory.validated(key, *kind.validation(stored, model)),
            gang_view=GangView(self.gang, group.existing, self.caches.pod_group_events(group.existing))
            if self.gang is not None and group else None,
            children={d.kind: DeclaredChild(seen.owned[d.kind].existing, d.rule)
                      for d in self.owned if d.rule is not None and d.kind in seen.owned}))
        # Training progress (spec.progress): read by the poller, merged here into what is written anyway.
        plan.status = self.memory.progress.follow(
            key, seen.planned, progress_target({**job, "status": plan.status}, seen.pods), plan.status, plan.events)
        ignored = kind.ignored_fields(stored, gang_scheduling=self.gang is not None)
        if ignored and cond.find((seen.planned.get("status") or {}).get("conditions") or [], cond.CREATED) is None:
            plan.events += [Event("Warning", "IgnoredField", note) for note in ignored]
        return plan

    def _act(self, seen: Observation, plan: Plan) -> Outcome:
        """Carry the plan out, one step after the other in `ACT_ORDER`; every ordering rule of the
        writes is that order."""
        acting = Acting(seen, plan, seen.job, seen.stored, Outcome(requeue_after=plan.requeue_after))
        for step in ACT_ORDER:
            step(self, acting)
        if acting.problems:
            acting.outcome.errors = acting.problems
            raise RequeueError("; ".join(acting.problems), acting.outcome.retry_after)
        return acting.outcome

    # ---- the act phase's steps, in `ACT_ORDER` ------------------------------------------------------

    def _count_failures_first(self, acting: Acting) -> None:
        """Write the status first when the failure count changed or the plan finishes the job: a
        crash between deleting the pods and writing must neither lose a failure nor revive a
        finished job (the status names the pods it counted, so none is counted twice either)."""
        seen, plan = acting.seen, acting.plan
        if not plan.status_first(acting.job.get("status") or {}):
            return
        updated = self._write_status(seen.key, seen.kind, acting.job, acting.stored, plan.status, seen.cache_version)
        if updated is not None:
            acting.stored = updated
            acting.job = {**acting.job, "metadata": updated["metadata"],
                          "status": seen.kind.model_status(updated.get("status") or {})}
            acting.outcome.status_written = True

    def _delete_children(self, acting: Acting) -> None:
        """Deletes before creates (UID preconditions, expectations raised before the call)."""
        plan = acting.plan
        acting.problems += self._delete_pods(acting.seen.key, plan.delete_pods, acting.outcome)
        if plan.delete_service is not None:
            acting.problems += self._delete_service(plan.delete_service, acting.outcome)

    def _write_owned(self, acting: Acting) -> None:
        """The owned objects, each type in its declared order, before the pods: while one the pods
        wait for cannot be created, no pod is (fail closed)."""
        for declared in self.owned:
            observed = acting.seen.owned.get(declared.kind)
            if observed is None:
                continue
            problems, missing = self.companions.carry_out(
                declared.companion, acting.plan.children.get(declared.kind, Step()), acting.job,
                observed.foreign, acting.outcome, acting.refusals)
            acting.problems += problems
            acting.hold_pods = acting.hold_pods or (missing and declared.holds_pods)
        if acting.hold_pods:
            acting.plan.create_pods = []
            if not (acting.seen.planned.get("status") or {}).get("startTime"):
                acting.plan.status.pop("startTime", None)

    def _create_service_and_pods(self, acting: Acting) -> None:
        """The Service alongside the first pod batch rather than before it (one round trip less per
        new job); never over a foreign Service of the same name."""
        seen, plan = acting.seen, acting.plan
        if seen.foreign_service:
            if plan.create_service is not None:
                acting.refusals.append(Refusal("Service", seen.name, Cause.NAME_TAKEN))
            plan.create_service = None
        if plan.create_service is not None:
            acting.service_created = self._pool.submit(self._create_service, acting.job, plan.create_service,
                                                       acting.outcome)
        if plan.create_pods:
            acting.problems += self._create_pods(seen.key, plan, acting.job, acting.outcome, seen.pending_creates,
                                                 acting.refusals)
            plan.count_created_as_active(seen.pending_creates | set(acting.outcome.created))
        if acting.service_created is not None:
            acting.problems += self._service_problems(seen.name, acting.service_created.result(), acting.refusals)

    def _fold_refusals(self, acting: Acting) -> None:
        """What the API server refused, folded by the pure core into the plan; carry out what that adds."""
        if not acting.refusals:
            return
        seen, plan = acting.seen, acting.plan
        folded = fold_refusals(plan, acting.job, acting.refusals, pods=seen.pods, service=seen.service,
                               now=self.clock.wall(), pending_deletes=self.expectations.pending_deletions(seen.key))
        acting.problems += folded.problems + self._delete_pods(seen.key, folded.delete_pods, acting.outcome)
        if folded.delete_service is not None:
            acting.problems += self._delete_service(folded.delete_service, acting.outcome)
        acting.outcome.requeue_after = plan.requeue_after

    def _write_status_after_writes(self, acting: Acting) -> None:
        """The status after the writes it reports, or left to the reconcile the created pods bring."""
        seen, plan, outcome = acting.seen, acting.plan, acting.outcome
        if self._may_defer_status(plan, outcome, acting.problems):
            self.memory.defer(seen.key, acting.job, plan.status)
            outcome.status_deferred = True
            outcome.requeue_in(self.first_status_wait)  # unless the pods' last start brings it sooner
        elif self._write_status(seen.key, seen.kind, acting.job, acting.stored, plan.status,
                                seen.cache_version) is not None:
            outcome.status_written = True

    def _tell_kueue(self, acting: Acting) -> None:
        decision = acting.seen.decision
        if decision is not None and self.kueue_gate is not None and not acting.outcome.status_deferred:
            holding = sum(1 for p in acting.seen.pods if podstate.phase(p) in ("Pending", "Running", "Unknown"))
            self.kueue_gate.after_plan(acting.job, acting.plan.status, decision.workload, holding)

    def _delete_job_last(self, acting: Acting) -> None:
        """The job's own deletion (its TTL expired) comes last: everything before reports on it."""
        if acting.plan.delete_job:
            acting.problems += self._delete_job(acting.seen.kind, acting.job, acting.outcome)

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
                updated = self._patch_status(key, path, meta, old, new)
            except ApiError as error:
                if error.status != 422 or "progress" not in new:
                    raise
                # Refused as invalid: what a pod reported must never keep the rest of the status from
                # being written (it would be refused on every reconcile, and the job never end).
                self._refused_status(job, error)
                updated = self._patch_status(key, path, meta, old, without_progress(new, str(error.message)))
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

    def _patch_status(self, key: str, path: str, meta: Mapping[str, Any], old: Mapping[str, Any],
                      new: Mapping[str, Any]) -> dict[str, Any]:
        body = {"metadata": {"resourceVersion": meta["resourceVersion"]}, "status": merge_patch(old, new)}
        with self.memory.writing(key, meta["resourceVersion"]):  # its echo can beat its answer
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

    def _emit_events(self, acting: Acting) -> None:
        """State changes one event each; creates (but a job's first, told by its Created condition) and
        deletes one summary event per reconcile: a 1 000-worker job costs a few events, not a thousand."""
        if self.recorder is None:
            return
        job, plan, outcome = acting.job, acting.plan, acting.outcome
        if outcome.created and not (plan.creates_told_by_condition and not (acting.problems or acting.refusals)):
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


# The act phase, in order: each step's docstring says why it comes where it does.
ACT_ORDER: tuple[Callable[[Reconciler, Acting], None], ...] = (
    Reconciler._count_failures_first,  # before deleting the failed pods or a finished job's
    Reconciler._delete_children,  # deletes before creates
    Reconciler._write_owned,  # before the pods, which may wait for them
    Reconciler._create_service_and_pods,
    Reconciler._fold_refusals,  # once every create has answered
    Reconciler._write_status_after_writes,  # reports what the writes did
    Reconciler._tell_kueue,  # after the status it reports: MultiKueue copies a worker's status once
    Reconciler._emit_events,
    Reconciler._delete_job_last,
)
