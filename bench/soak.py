"""The soak: every feature at once for a set time, under a mixed stream of jobs and faults (`make soak`).

Why: each feature (Kueue queueing and preemption, topology-aware scheduling, gang scheduling,
NetworkPolicy, failure rules, progress, suspension, scaling, TTL) is tested alone and in one composed
story; a platform team runs them all together for days, with the operator, Kueue and the API server
restarting under it. The soak runs that for `--minutes` (SOAK_MINUTES, 30 by default) on a world of
its own (bench/_soak_world.py: a devcluster, Kueue, two racks of KWOK hosts, the operator with
`--kueue=on --kubeflow-tfjob=on --gang-scheduler=kubernetes --network-policy=on`):

* **jobs** (bench/_soak_jobs.py): both kinds, two priorities (Kueue preempts the low), 1-3 one-CPU
  workers in one rack, TensorFlowJobs with a FailJob rule (some drawn to hit it) and progress, some
  with a TTL, some created suspended; the soak keeps at most MAX_ACTIVE unfinished;
* **actions**, one every ACTION_EVERY seconds: suspend a job (resumed a minute later), scale one,
  delete one mid-run; finished jobs without a TTL are deleted by the soak;
* **faults**, one every FAULT_EVERY seconds in a shuffled rotation: the operator SIGKILLed and
  restarted (only in the first OPERATOR_KILLS_UNTIL of the run, so the last incarnation lives long
  enough for its RSS to mean something), a pod evicted, a pod deleted, Kueue restarted, the API server
  restarted, a rack host NotReady for a minute;
* **invariants** (bench/_soak_checks.py), checked every TICK seconds and at the end: no two live
  pods for one slot, no pod without its job, the ClusterQueue's reservation equal to the Workloads',
  no admitted Workload whose job has no pod, no unfinished job without a reason, no disruption
  counted against backoffLimit, nothing left owned by a deleted job; at the end, after a drain (no
  more jobs or faults, suspended jobs resumed), every job finished and, once all are deleted, the
  queue empty and nothing left.

It prints a summary (jobs by kind and outcome, actions, faults by kind, violations by rule, the
operator's RSS, its error-level log lines), writes it to bench/results/soak.json and exits 1 on any
violation.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import _soak_checks as checks
from bench import _soak_jobs as jobs
from bench._harness import RESULTS, log, machine, wait_until
from bench._soak_world import NAMESPACE, World, pick, world
from kube import ApiError, resource_path

TICK = 5.0
SUBMIT_EVERY = 8.0
ACTION_EVERY = 30.0
FAULT_EVERY = 50.0
NODE_DOWN_FOR = 60.0
SUSPENDED_FOR = 60.0
MAX_ACTIVE = 8
OPERATOR_KILLS_UNTIL = 0.5  # of the run
RSS_WARM_UP = 120.0  # seconds after an operator start
DRAIN_TIMEOUT = 900.0
FAULTS = ("operator-kill", "pod-evict", "pod-delete", "kueue-restart", "apiserver-restart", "node-notready")
GRACE = {"orphan-pod": 90.0, "quota-mismatch": 60.0, "quota-without-pods": 60.0, "stuck-job": 90.0, "leftover": 90.0}


@dataclass
class Tracked:
    plan: jobs.JobPlan
    uid: str
    workers: int
    resume_at: float | None = None
    outcome: str = ""  # Succeeded, Failed, or deleted-* once gone


@dataclass
class Soak:
    world: World
    minutes: float
    rng: random.Random
    tracked: dict[str, Tracked] = field(default_factory=dict)
    gone_uids: set[str] = field(default_factory=set)
    actions: Counter[str] = field(default_factory=Counter)
    faults: Counter[str] = field(default_factory=Counter)
    fault_errors: list[str] = field(default_factory=list)
    ledger: checks.Ledger = field(default_factory=checks.Ledger)
    lasting: dict[str, checks.Lasting] = field(default_factory=lambda: {r: checks.Lasting(g) for r, g in GRACE.items()})
    rss: list[list[tuple[float, int]]] = field(default_factory=lambda: [[]])
    down_node: tuple[str, float] | None = None
    rotation: list[str] = field(default_factory=list)
    ticks: int = 0
    failed_ticks: int = 0

    # ------------------------------------------------------------------ the run

    def run(self) -> None:
        start = time.monotonic()
        end = start + self.minutes * 60
        next_submit = next_action = start
        next_fault = start + FAULT_EVERY
        number = 0
        while (now := time.monotonic()) < end:
            if now >= next_submit and self.active() < MAX_ACTIVE:
                number += 1
                self.submit(jobs.draw(self.rng, number))
                next_submit = now + SUBMIT_EVERY
            if now >= next_action:
                self.act()
                next_action = now + ACTION_EVERY
            if now >= next_fault:
                self.fault(operator_kills=(now - start) < OPERATOR_KILLS_UNTIL * (end - start))
                next_fault = time.monotonic() + FAULT_EVERY
            self.housekeeping(time.monotonic())
            self.check()
            time.sleep(TICK)  # the pace of the stream, not a synchronisation: every check polls
        log(f"{self.minutes:g} min done: {number} jobs submitted; draining")

    def active(self) -> int:
        return sum(1 for t in self.tracked.values() if not t.outcome)

    def submit(self, plan: jobs.JobPlan) -> None:
        try:
            created = self.world.api.create(self.path(plan.kind), jobs.body(plan, NAMESPACE))
        except ApiError as error:
            self.fault_errors.append(f"submit {plan.name}: {error}")
            return
        self.tracked[plan.name] = Tracked(plan, created["metadata"]["uid"], plan.workers,
                                          resume_at=time.monotonic() + SUSPENDED_FOR if plan.suspended else None)

    def path(self, kind: str, name: str | None = None) -> str:
        return resource_path("kubeflow.org", "v1", jobs.plural(kind), NAMESPACE, name)

    def act(self) -> None:
        """One of: suspend a running job, scale one, delete one mid-run."""
        running = [t for t in self.tracked.values() if not t.outcome and t.resume_at is None]
        target: Tracked | None = pick(self.rng, running)
        if target is None:
            return
        action = self.rng.choice(("suspend", "suspend", "scale", "scale", "delete"))
        name, kind = target.plan.name, target.plan.kind
        try:
            if action == "suspend":
                self.world.api.patch(self.path(kind, name), jobs.suspend_patch(kind, True))
                target.resume_at = time.monotonic() + SUSPENDED_FOR
            elif action == "scale":
                target.workers = 1 + target.workers % 3  # 1 → 2 → 3 → 1
                self.world.api.patch(self.path(kind, name), jobs.scale_patch(kind, target.workers))
            else:
                self.world.api.delete(self.path(kind, name), propagation="Background")
                target.outcome = "deleted-running"
            self.actions[action] += 1
        except ApiError as error:
            self.fault_errors.append(f"{action} {name}: {error}")

    def fault(self, operator_kills: bool) -> None:
        if not self.rotation:
            self.rotation = list(FAULTS)
            self.rng.shuffle(self.rotation)
        kind = self.rotation.pop()
        if kind == "operator-kill" and not operator_kills:
            kind = "pod-evict"
        if kind == "node-notready" and self.down_node is not None:
            kind = "pod-delete"
        try:
            if not self.inject(kind):
                return
            self.faults[kind] += 1
            log(f"fault: {kind}")
        except Exception as error:  # a fault that could not be injected is reported, not fatal
            self.fault_errors.append(f"{kind}: {error!r}"[:300])

    def inject(self, kind: str) -> bool:
        w = self.world
        live = [p for p in w.pods() if checks.is_live_pod(p) and (p.get("status") or {}).get("phase") == "Running"]
        if kind == "operator-kill":
            w.kill_operator()
            self.rss.append([])
        elif kind in ("pod-evict", "pod-delete"):
            pod = pick(self.rng, live)
            if pod is None:
                return False
            (w.evict_pod if kind == "pod-evict" else w.delete_pod)(pod)
        elif kind == "kueue-restart":
            w.restart_kueue()
        elif kind == "apiserver-restart":
            w.restart_apiserver()
        else:
            busy = sorted({p["spec"].get("nodeName") for p in live} & set(w.rack_nodes))
            node = pick(self.rng, busy) or pick(self.rng, w.rack_nodes)
            w.node_ready(node, False)
            self.down_node = (node, time.monotonic() + NODE_DOWN_FOR)
        return True

    def housekeeping(self, now: float) -> None:
        """Resume jobs due, bring the NotReady node back, delete finished jobs without a TTL, and
        note the jobs that are gone."""
        w = self.world
        try:
            if self.down_node is not None and now >= self.down_node[1]:
                w.node_ready(self.down_node[0], True)
                self.down_node = None
            listed = {j["metadata"]["name"]: j for j in w.jobs()}
            for name, tracked in self.tracked.items():
                job = listed.get(name)
                if job is None or job["metadata"]["uid"] != tracked.uid:
                    if not tracked.outcome.startswith("deleted"):
                        tracked.outcome = f"deleted-{tracked.outcome or 'unfinished'}"
                    self.gone_uids.add(tracked.uid)
                    continue
                if tracked.resume_at is not None and now >= tracked.resume_at:
                    w.api.patch(self.path(tracked.plan.kind, name), jobs.suspend_patch(tracked.plan.kind, False))
                    tracked.resume_at = None
                    self.actions["resume"] += 1
                if checks.is_terminal(job) and not tracked.outcome:
                    tracked.outcome = "Succeeded" if checks._true(job, "Succeeded") else "Failed"
                    if tracked.plan.ttl is None:
                        w.api.delete(self.path(tracked.plan.kind, name), propagation="Background")
        except (ApiError, OSError) as error:
            self.fault_errors.append(f"housekeeping: {error!r}"[:300])

    # ------------------------------------------------------------------ the invariants

    def check(self, final: bool = False) -> None:
        w = self.world
        try:
            pods, all_jobs, workloads, queue = w.pods(), w.jobs(), w.workloads(), w.cluster_queue()
            owned = w.owned_objects()
        except (ApiError, OSError):
            self.failed_ticks += 1  # the API server may be restarting: the next tick looks again
            return
        self.ticks += 1
        now = time.monotonic()
        self.rss[-1].append((now - w.operator.started_at, w.operator.rss()))
        job_uids = {j["metadata"]["uid"] for j in all_jobs}
        failing = {t.uid for t in self.tracked.values() if t.plan.fails}
        immediate = [*checks.duplicate_slots(pods), *checks.counted_disruptions(all_jobs, failing)]
        lasting = {"orphan-pod": checks.orphan_pods(pods, job_uids),
                   "quota-mismatch": checks.quota_mismatch(queue, workloads),
                   "quota-without-pods": checks.quota_without_pods(workloads, pods),
                   "stuck-job": checks.stuck_jobs(all_jobs),
                   "leftover": checks.leftovers(owned, self.gone_uids - job_uids)}
        found = list(immediate)
        for rule, findings in lasting.items():
            found += findings if final else self.lasting[rule].update(findings, now)
        for finding in self.ledger.add(found):
            log(f"VIOLATION {finding.rule} {finding.subject}: {finding.detail}")

    # ------------------------------------------------------------------ the end

    def drain(self) -> None:
        """No more jobs or faults: resume what is suspended, bring the node back, let every job finish,
        then delete them all; the final checks run on what is left."""
        w = self.world
        if self.down_node is not None:
            w.node_ready(self.down_node[0], True)
            self.down_node = None
        for tracked in self.tracked.values():
            if tracked.resume_at is not None:
                tracked.resume_at = 0.0
        deadline = time.monotonic() + DRAIN_TIMEOUT
        while self.active() and time.monotonic() < deadline:
            self.housekeeping(time.monotonic())
            self.check()
            time.sleep(TICK)
        for tracked in self.tracked.values():
            if not tracked.outcome:
                self.ledger.add([checks.Finding("lost-job", tracked.plan.name,
                                                f"not finished {DRAIN_TIMEOUT:g}s into the drain")])
        for job in w.jobs():
            w.api.delete(self.path(job["kind"], job["metadata"]["name"]), propagation="Background")
        self.housekeeping(time.monotonic())
        emptied = wait_until(lambda: not w.jobs() and not w.pods() and not _reserving(w.cluster_queue())
                             and not w.workloads(), 180, interval=2.0)
        self.housekeeping(time.monotonic())
        self.check(final=True)
        if not emptied:
            self.ledger.add([checks.Finding("not-emptied", NAMESPACE, "jobs, pods, Workloads or reservations left "
                                            "3 minutes after every job was deleted")])

    def summary(self, error_lines: Counter[str]) -> dict[str, Any]:
        self.ledger.add([checks.Finding("operator-error-log", event, f"{count} error-level line(s)")
                         for event, count in error_lines.items()])
        outcomes = Counter(t.outcome or "unfinished" for t in self.tracked.values())
        kinds = Counter(t.plan.kind for t in self.tracked.values())
        first = next((s for s in self.rss if s), [])
        last = self.rss[-1] if self.rss[-1] else first
        start_rss, _ = checks.rss_growth(first, RSS_WARM_UP)
        last_warm, end_rss = checks.rss_growth(last, RSS_WARM_UP)
        return {
            "minutes": self.minutes, "jobs": len(self.tracked), "jobs_by_kind": dict(kinds),
            "outcomes": dict(outcomes), "failing_by_rule": sum(t.plan.fails for t in self.tracked.values()),
            "actions": dict(self.actions), "faults": dict(self.faults), "fault_errors": self.fault_errors[:20],
            "checks": self.ticks, "checks_skipped": self.failed_ticks,
            "violations": len(self.ledger.first), "violations_by_rule": dict(self.ledger.by_rule()),
            "violation_details": [f"{f.rule} {f.subject}: {f.detail}" for f in self.ledger.first.values()][:50],
            "operator_starts": len(self.rss),
            "rss_mib": {"first_start_warm": _mib(start_rss), "last_start_warm": _mib(last_warm), "end": _mib(end_rss),
                        "last_incarnation_minutes": round((last[-1][0] if last else 0) / 60, 1),
                        "peak": _mib(max((r for s in self.rss for _, r in s), default=0))},
            "operator_error_lines": sum(error_lines.values()), "operator_errors": dict(error_lines.most_common(10)),
        }


def _reserving(cluster_queue: dict[str, Any]) -> int:
    return int((cluster_queue.get("status") or {}).get("reservingWorkloads") or 0)


def _mib(value: int) -> float:
    return round(value / 2**20, 1)


def error_lines(log_path: Path) -> Counter[str]:
    try:
        return checks.error_lines(log_path.read_text(errors="replace").splitlines())
    except OSError:
        return Counter()


def print_summary(result: dict[str, Any]) -> None:
    print("\n=== soak summary ===")
    for key in ("minutes", "jobs", "jobs_by_kind", "outcomes", "failing_by_rule", "actions", "faults", "checks",
                "checks_skipped", "operator_starts", "rss_mib", "operator_error_lines", "operator_errors",
                "violations", "violations_by_rule"):
        print(f"{key:>22}: {result[key]}")
    for line in result["violation_details"]:
        print(f"  VIOLATION {line}")
    for line in result["fault_errors"]:
        print(f"  (could not act) {line}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--seed", type=int, default=46)
    args = parser.parse_args(argv)
    log_dir = RESULTS / "soak-logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    (log_dir / "operator.log").unlink(missing_ok=True)
    with world(log_dir) as w:
        soak = Soak(w, args.minutes, random.Random(args.seed))
        try:
            soak.run()
            soak.drain()
        finally:
            w.operator.stop()
        result = soak.summary(error_lines(w.operator.log_path))
    result = {"benchmark": "soak", "machine": machine(), "seed": args.seed, **result}
    (RESULTS / "soak.json").write_text(json.dumps(result, indent=2, default=str) + "\n")
    print_summary(result)
    return 1 if result["violations"] else 0


if __name__ == "__main__":
    sys.exit(main())
