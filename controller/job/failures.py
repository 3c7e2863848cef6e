"""Failed pods in a job's plan: what each means (its failure rules), the counts and the budgets.

The planner's part of docs/design.md §4 on failures, as a part of the plan draft that
`controller.job.plan`'s planner is built from (it was one section of that module; it grew with the
failure rules). Each failed pod gets a `controller.job.failurepolicy.Decision`: FailJob fails the
job at once (reason `PodFailurePolicy` when a rule said so, `ReplicaFailed` for the restart policy),
Ignore replaces the pod uncounted (a disruption, or a rule), Count replaces it and counts, RestartJob
replaces every pod and counts. Counted failures raise `status.restartCount` (against the job-wide
`backoffLimit`) and the role's count (against its own `backoffLimit`, `controller.job.budgets`);
over either, the job fails with `BackoffLimitExceeded`. A rule that decided shows in the Restarting
or Failed condition's message and in an event. Pure, like the rest of the plan.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.job import budgets, disruptions, stalled
from controller.job.draft import Event, PlanDraft
from controller.job.failurepolicy import FAIL_JOB, IGNORE, RESTART_JOB, Decision, Failure, decide, failure_of
from tfconfig import role_replicas
from tfjob_api import conditions as cond
from tfjob_api import podstate
from tfjob_api.defaults import BACKOFF_LIMIT, RESTART_POLICY

RULE_REASON = "PodFailurePolicy"


class FailureHandling(PlanDraft):
    """The failure rules of the plan draft (`_failures`), and the Restarting condition."""

    _counted_failed_pods: set[str]
    _role_restarts: dict[str, int] | None = None

    def _failures(self) -> bool:
        """Handle failed pods; True when the job failed for good."""
        published = int(self.status.get("restartCount") or 0)
        retried: list[Mapping[str, Any]] = []
        matched: list[str] = []  # what the rules said of the retried pods
        restart_all = self.spec.get("restartScope") == "All"
        for (role, _index), pods in sorted(self.observed.by_slot.items()):
            for pod in pods:
                if podstate.is_terminating(pod) or podstate.uid(pod) in self.pending_deletes | self.deleting:
                    continue  # being deleted: a pod restarted with its group for a disruption is never judged
                if podstate.phase(pod) != "Failed":
                    continue
                failure = failure_of(self.job, role, pod)
                if not role_replicas(self.spec, role):
                    if failure.disrupted:
                        self._replace_uncounted(pod, failure, Decision(IGNORE))
                    continue  # else a scaled-down role's pod: `_rescale` removes it
                decision = decide(self.spec, failure)
                if decision.action == FAIL_JOB:
                    self._fail_for(pod, failure, decision)
                    return True
                if decision.action == IGNORE:
                    self._replace_uncounted(pod, failure, decision)
                    continue
                restart_all = restart_all or decision.action == RESTART_JOB
                if decision.rule is not None:
                    matched.append(f"{podstate.name(pod)} ({failure.describe()}) matched {decision.source()}: "
                                   f"{decision.action}")
                retried.append(pod)
        return self._retry(retried, matched, restart_all, published)

    def _retry(self, retried: list[Mapping[str, Any]], matched: list[str], restart_all: bool,
               published: int) -> bool:
        """Count the retried failures, fail the job past a budget, else replace the pods."""
        restarts = self._count_restarts(retried)
        limit = self.spec.get("backoffLimit", BACKOFF_LIMIT)  # None: no limit
        stalls = self._stalls(retried, restarts > published)
        of_limit = f"of backoffLimit {limit}" if limit is not None else "(no backoffLimit)"
        if limit is not None and restarts > limit:
            why = f" The last restarts: {stalls}." if stalls else ""
            self.fail("BackoffLimitExceeded", f"{self.kind} {self.name} has failed {restarts} times, "
                       f"more than backoffLimit={limit}.{why}")
            return True
        over = budgets.exceeded(self.spec, self.role_restarts())
        if over is not None:
            role, count, role_limit = over
            self.fail("BackoffLimitExceeded", f"{self.kind} {self.name} has failed: its {role} pods failed "
                       f"{count} times, more than spec.{role}.backoffLimit={role_limit}.")
            return True
        if stalls and not retried:  # in-place restarts only: the job stays Running; an event says why
            self.out.events.append(Event("Warning", "Stalled", f"{stalls} (restart {restarts} {of_limit})."))
        if not retried:
            return False
        names = ", ".join(podstate.name(p) for p in retried)
        if restart_all:
            for pod in self.live_pods():
                self.delete(pod, "RestartScopeAll")
            scope = "restartScope All" if self.spec.get("restartScope") == "All" else \
                f"RestartJob; restart {restarts} {of_limit}"
            message = f"Pod(s) {names} failed; restarting every pod of the job ({scope})."
        else:
            for pod in retried:
                self.delete(pod, "PodFailed")
            message = f"Pod(s) {names} failed; recreating (restart {restarts} {of_limit})."
        if matched:
            message += f" {'; '.join(matched)}."
        if stalls:
            message += f" {stalls}."
        self._restarting(RULE_REASON if matched else "Stalled" if stalls else "PodFailed", message)
        return False

    def _fail_for(self, pod: Mapping[str, Any], failure: Failure, decision: Decision) -> None:
        """Fail the job for one pod's failure: by a rule, or by the role's restart policy."""
        role = failure.role
        if decision.rule is not None:
            self.fail(RULE_REASON, f"{self.kind} {self.name} failed: {role} pod {podstate.name(pod)} failed "
                       f"({failure.describe()}) and matched {decision.source()}: FailJob.")
            return
        code = failure.exit_code
        why = f"exit code {code}" if code is not None else "pod failed"
        if stalled.failed_pod_stalled(self.job, role, pod):
            why += "; most likely stalled: its stall rule's liveness probe found no progress"
        policy = self.spec[role].get("restartPolicy", RESTART_POLICY)
        self.fail("ReplicaFailed", f"{self.kind} {self.name} failed: {role} pod {podstate.name(pod)} "
                   f"failed ({why}) and its restartPolicy is {policy}.")

    def _replace_uncounted(self, pod: Mapping[str, Any], failure: Failure, decision: Decision) -> None:
        """Replace a failed pod without counting it: a disruption, or a rule's Ignore."""
        if decision.rule is None:
            self.delete(pod, "Disrupted")
            self.out.events.append(Event("Normal", "PodDisrupted", f"Pod {podstate.name(pod)} was disrupted "
                                         f"({(pod.get('status') or {}).get('reason', 'DisruptionTarget')}); "
                                         "replacing it (not counted against backoffLimit)."))
            return
        self.delete(pod, RULE_REASON)
        self._restarting(RULE_REASON, f"Pod {podstate.name(pod)} failed ({failure.describe()}) and matched "
                         f"{decision.source()}: Ignore; replacing it (not counted against backoffLimit).")

    def _stalls(self, retried: list[Mapping[str, Any]], counted_more: bool) -> str:
        """Which of this pass's restarts a stall rule most likely caused, as a sentence ("" if none):
        failed pods being retried, and pods restarted in place since the count was last written."""
        found = []
        for pod in retried:
            role = (podstate.slot(pod) or ("", 0))[0]
            if stalled.failed_pod_stalled(self.job, role, pod):
                found.append(stalled.describe(pod))
        if counted_more:
            for pod in self.live_pods():
                role = (podstate.slot(pod) or ("", 0))[0]
                if pod not in retried and role and stalled.restarted_after_stall(self.job, role, pod, self.now):
                    found.append(stalled.describe(pod))
        if not found:
            return ""
        return (f"Stalled: {', '.join(found)} killed while the stall rule found no progress "
                "(the liveness probe's Unhealthy events on the pod have the details)")

    def _count_restarts(self, retried: list[Mapping[str, Any]]) -> int:
        """Whole-pod failures retried by the controller plus in-place container restarts, for the job
        and for each role.

        `retriedFailures` (`retriedFailuresByRole` per role) persists the first kind (and the in-place
        restarts of pods it removed); live pods contribute their current container restart counts;
        a published count never goes down (a pod deleted by someone else takes its in-place
        restarts with it)."""
        fresh = [p for p in retried if podstate.uid(p) not in self._counted_failed_pods]
        base = int(self.status.get("retriedFailures") or 0)
        by_role: dict[str, int] = dict(self.status.get(budgets.PERSISTED) or {})
        for pod in fresh:
            role = (podstate.slot(pod) or ("", 0))[0]
            by_role[role] = by_role.get(role, 0) + 1 + podstate.container_restarts(pod)
            base += 1 + podstate.container_restarts(pod)
        if fresh or "retriedFailures" in self.status:
            self.status["retriedFailures"] = base
        if by_role:
            self.status[budgets.PERSISTED] = by_role
        self._counted_failed_pods.update(podstate.uid(p) for p in fresh)
        live_by_role: dict[str, int] = {}
        for pod in self.live_pods():
            if pod not in retried and not self._restart_on_hold(pod):
                role = (podstate.slot(pod) or ("", 0))[0]
                live_by_role[role] = live_by_role.get(role, 0) + podstate.container_restarts(pod)
        counts = budgets.published_counts(self.status)
        for role in set(by_role) | set(live_by_role):
            counts[role] = max(counts.get(role, 0), by_role.get(role, 0) + live_by_role.get(role, 0))
        self._role_restarts = counts
        total = max(int(self.status.get("restartCount") or 0), base + sum(live_by_role.values()))
        self.status["restartCount"] = total
        return total

    def _restart_on_hold(self, pod: Mapping[str, Any]) -> bool:
        """Whether a member's in-place restarts of a restartScope All job wait to be counted: its latest
        came less than `disruptions.NODE_LOSS_HOLD` ago, time for a lost node to show (a requeue comes
        back for the count); a group restart for that node takes the pod uncounted meanwhile."""
        if self.spec.get("restartScope") != "All" or not disruptions.is_member(pod):
            return False
        left = disruptions.hold_left(pod, self.now)
        if left is None:
            return False
        self.out.requeue_in(left.total_seconds())
        return True

    def role_restarts(self) -> dict[str, int]:
        """Each role's restart count: as counted by this plan, else as last published."""
        if self._role_restarts is None:
            return budgets.published_counts(self.status)
        return self._role_restarts

    def _restarting(self, reason: str, message: str) -> None:
        if self.condition(cond.RESTARTING, True, reason, message):
            warning = reason in ("PodFailed", "Stalled", RULE_REASON)
            self.out.events.append(Event("Warning" if warning else "Normal", reason, message))
        self.condition_false(cond.RUNNING, reason, message)

