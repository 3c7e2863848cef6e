"""What the operator knows of each reporting job's progress: where to read it, when next, the recent
history, and the `status.progress` the job should show. One entry per job with `spec.progress`, none
for any other job; thread-safe (the poller records, the reconcilers read).

The reconciler says where to read (`follow`, on every reconcile: level-triggered, so a recreated pod
or a finished job is followed at once) and merges what is known into the status it writes anyway; the
poller asks what is `due` and `record`s each answer, and enqueues the job only when its status should
change. An answer that breaks the rules (`tfheartbeat.progress.checked`) keeps the last valid report
and shows why in `status.progress.problem`; an unreachable endpoint (the trainer has not started it
yet, the pod is restarting) changes nothing. The first step a new process of the reporting pod reports
is compared with the last step read before (`controller.progress.resume`): `status.progress.lastResume`,
and an event when the job's status first shows it. Per-job Prometheus series follow the entries and go
with them (`forget`, when the job is deleted).

An endpoint that misbehaves — its answer is over the size limit, or it did not finish answering
within the read's deadline — is `slow`: it is read less often (its period doubled per strike, up to
`MAX_BACKOFF`) and, by the poller, on a lane of its own, so it costs the honest jobs nothing. One
answer in time clears its record.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple, Protocol

from controller.job.draft import Event
from controller.job.progress import Target, is_over
from controller.progress import resume
from controller.progress.estimate import Sample, add_sample, fraction_done, remaining_seconds
from controller.progress.status import merge_progress, progress_status
from kube.clock import REAL_CLOCK, Clock
from tfheartbeat.progress import ProgressError, checked

MAX_BACKOFF = 600.0
"""The longest wait between two reads of a misbehaving endpoint, in seconds."""


class Due(NamedTuple):
    """A job whose progress is to be read now."""

    key: str
    target: Target
    slow: bool  # its endpoint misbehaved at the last read


class ProgressMetrics(Protocol):
    """The per-job gauges (`controller.metrics.ControllerMetrics`)."""

    def set_progress(self, namespace: str, job: str, report: Mapping[str, Any], fraction: float | None,
                     remaining: float | None) -> None: ...
    def forget_progress(self, namespace: str, job: str) -> None: ...


@dataclass
class _Entry:
    target: Target | None  # None: not read now (the pod is not running, the job is over)
    due: float
    namespace: str = ""
    job: str = ""
    report: dict[str, Any] | None = None
    samples: tuple[Sample, ...] = ()
    updated: datetime | None = None
    remaining: float | None = None
    problem: str | None = None
    progress: dict[str, Any] | None = field(default=None)
    strikes: int = 0  # reads in a row that were too large or too slow
    stepped: tuple[dict[str, Any], str] | None = None  # the last report with a step, and where it came from
    resumed: dict[str, Any] | None = None  # status.progress.lastResume (controller.progress.resume)


class ProgressBook:
    def __init__(self, clock: Clock = REAL_CLOCK, metrics: ProgressMetrics | None = None) -> None:
        self._clock = clock
        self._metrics = metrics
        self._lock = threading.Lock()
        self._entries: dict[str, _Entry] = {}

    # ---- the reconciler's side ---------------------------------------------------------------------

    def follow(self, key: str, job: Mapping[str, Any], target: Target | None,
               status: Mapping[str, Any], events: list[Event] | None = None) -> dict[str, Any]:
        """Read the job's progress at `target` from now on (None: stop reading; what is known stays),
        and return `status` with the progress the job should show merged in (a new dict). When that
        shows a resume the job's status (`job`'s) does not show yet, an event saying so is added to
        `events`."""
        progress = None
        with self._lock:
            entry = self._entries.get(key)
            if entry is None and target is not None:
                meta = job["metadata"]
                entry = self._entries[key] = _Entry(target, self._clock.now(), meta["namespace"], meta["name"])
            elif entry is not None and entry.target != target:
                entry.target, entry.due = target, self._clock.now()
            if entry is not None:
                progress = copy.deepcopy(entry.progress)
        merged = merge_progress(status, progress, over=is_over({"status": status}))
        announced = resume.event(job.get("status") or {}, merged) if events is not None else None
        if announced is not None and events is not None:
            events.append(announced)
        return merged

    def forget(self, key: str) -> None:
        """The job is gone."""
        with self._lock:
            entry = self._entries.pop(key, None)
        if entry is not None and self._metrics is not None:
            self._metrics.forget_progress(entry.namespace, entry.job)

    # ---- the poller's side -------------------------------------------------------------------------

    def due(self) -> list[Due]:
        """The jobs to read now; each is due again one period after it was due (so a late poll tick does
        not stretch the period), and never before now."""
        now = self._clock.now()
        ready = []
        with self._lock:
            for key, entry in self._entries.items():
                if entry.target is not None and entry.due <= now:
                    entry.due = max(entry.due + entry.target.period, now)
                    ready.append(Due(key, entry.target, entry.strikes > 0))
        return ready

    def slow(self, key: str, target: Target) -> None:
        """The endpoint at `target` misbehaved (too large an answer, or none in time): read it less often."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry.target != target:
                return
            entry.strikes += 1
            entry.due = self._clock.now() + min(target.period * 2 ** min(entry.strikes, 16), MAX_BACKOFF)

    def record(self, key: str, target: Target, answer: Any, refused: str | None = None, *,
               slow: bool = False) -> bool:
        """Keep what the pod at `target` answered (`refused`: why its answer was no report at all, e.g.
        not JSON or too large; `slow`: the endpoint misbehaved, see `slow`); True when the job's status
        should change."""
        if slow:
            self.slow(key, target)
        try:
            if refused is not None:
                raise ProgressError(refused)
            report, problem = checked(answer), None
        except ProgressError as error:
            report, problem = None, f"refused the report of {target.pod}: {error}"
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry.target != target:
                return False  # forgotten or moved on while the answer was on its way
            if not slow:
                entry.strikes = 0
            if report is not None and report.get("step") is not None:
                self._resume(entry, report, target)
            if report is not None and report != entry.report:
                self._advance(entry, report)
            entry.problem = problem
            before, entry.progress = entry.progress, self._progress(entry, target)
            changed = entry.progress != before
            snapshot = (entry.report, entry.samples)
        if changed and report is not None and self._metrics is not None:
            latest, samples = snapshot
            self._metrics.set_progress(entry.namespace, entry.job, latest or {},
                                       fraction_done(latest or {}), remaining_seconds(samples))
        return changed

    def _resume(self, entry: _Entry, report: dict[str, Any], target: Target) -> None:
        """Note a resume when this report with a step comes from another process than the last one."""
        if entry.stepped is not None:
            before, before_from = entry.stepped
            entry.resumed = resume.resumed(before, before_from, report, target.incarnation,
                                           self._clock.wall()) or entry.resumed
        entry.stepped = (report, target.incarnation)

    def _advance(self, entry: _Entry, report: dict[str, Any]) -> None:
        entry.report = report
        entry.updated = self._clock.wall()
        fraction = fraction_done(report)
        if fraction is not None:
            entry.samples = add_sample(entry.samples, Sample(self._clock.now(), fraction))
        entry.remaining = remaining_seconds(entry.samples)

    def _progress(self, entry: _Entry, target: Target) -> dict[str, Any] | None:
        if entry.report is None and entry.problem is None:
            return entry.progress
        if entry.updated is None:  # refused before any valid report
            entry.updated = self._clock.wall()
        return progress_status(entry.report or {}, reported_by=target.pod, updated=entry.updated,
                               remaining=entry.remaining, problem=entry.problem, resumed=entry.resumed)
