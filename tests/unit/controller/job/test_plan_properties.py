"""Validation and the planner on generated jobs: neither raises, and the plan keeps its promises.

Every generated job (strategies in tests/support/fuzzing.py) — valid edge cases, invalid mutations,
arbitrary JSON where the fields go — and every generated set of observed pods and prior status goes
through `validate_job` and the pure planner `plan_job`: neither raises; validation names the mutated
field; the plan only deletes pods it was shown (each once), creates only into empty slots with the
job as controller, never sets contradictory conditions, never lowers restartCount, leaves a finished
job finished, and fails an invalid one with InvalidSpec. No cluster: the same candidates go through
`kubectl apply` in tests/integration/controller/chaos/test_bad_input.py.

Hypothesis draws new examples on every run; a failure prints the seed to replay it with
(`pytest --hypothesis-seed=<n>`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.job.kinds import TENSORFLOWJOB
from controller.job.plan import PlanInputs, plan_job
from controller.job.validation import validate_job
from tests.support.fuzzing import JOB_UID, Candidate, candidates, job_statuses, names, observed_pods, wild_specs
from tests.support.jobs import tfjob
from tfjob_api import podstate
from tfjob_api.defaults import apply_defaults

NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)
EXAMPLES = 300


def true_conditions(status: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in status.get("conditions") or [] if isinstance(c, dict) and c.get("status") == "True"}


def plan_problems(job: dict[str, Any], pods: list[dict[str, Any]], prior: dict[str, Any]) -> list[str]:
    """What is wrong with the planner's answer for one job (it must not raise)."""
    plan = plan_job(PlanInputs(job, pods, None, now=NOW, node_ready=lambda node: None if not node else node != "dead", kind=TENSORFLOWJOB))
    problems = []
    shown = {p["metadata"]["uid"] for p in pods}
    deleted = [d.pod["metadata"]["uid"] for d in plan.delete_pods]
    if len(deleted) != len(set(deleted)) or not set(deleted) <= shown:
        problems.append(f"deletes {deleted} of pods {sorted(shown)}")
    occupied = {podstate.slot(p) for p in pods} - {None}
    created = [p["metadata"]["name"] for p in plan.create_pods]
    if len(created) != len(set(created)):
        problems.append(f"creates a name twice: {created}")
    for pod in plan.create_pods:
        if podstate.slot(pod) in occupied:
            problems.append(f"creates {pod['metadata']['name']} into an occupied slot")
        owners = [r for r in pod["metadata"].get("ownerReferences") or [] if r.get("controller")]
        if [r.get("uid") for r in owners] != [JOB_UID]:
            problems.append(f"{pod['metadata']['name']} is not controlled by the job: {owners}")
    after = true_conditions(plan.status)
    if "Succeeded" in after and "Failed" in after:
        problems.append("Succeeded and Failed both True")
    if "Running" in after and ({"Succeeded", "Failed"} & set(after)):
        problems.append(f"Running True beside {sorted({'Succeeded', 'Failed'} & set(after))}")
    before = true_conditions(prior)
    if isinstance(prior.get("restartCount"), int) and plan.status.get("restartCount", 0) < prior["restartCount"]:
        problems.append(f"restartCount went down: {prior['restartCount']} -> {plan.status.get('restartCount')}")
    finished = {"Succeeded", "Failed"} & set(before)
    if finished:
        if plan.create_pods or plan.create_service:
            problems.append(f"a {sorted(finished)} job creates {created}")
        if not finished <= set(after):
            problems.append(f"a {sorted(finished)} job stopped being so: {sorted(after)}")
    elif validate_job(job):
        if after.get("Failed", {}).get("reason") != "InvalidSpec":
            problems.append(f"an invalid job was not failed with InvalidSpec: {sorted(after)}")
        if plan.create_pods:
            problems.append(f"an invalid job creates {created}")
    return problems



@settings(max_examples=EXAMPLES, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.one_of(candidates(), st.builds(lambda n, s: Candidate(tfjob(n, s), "wild"), names(), wild_specs())),
       st.data())
def test_validation_and_the_planner_never_raise_and_keep_their_promises_on_generated_jobs(
        candidate: Candidate, data: st.DataObject) -> None:
    problems = validate_job(candidate.job)
    assert all(isinstance(p.path, str) and p.message for p in problems), problems
    if candidate.kind == "rejected":
        assert any(candidate.field in str(p) for p in problems), (candidate.note, problems)
    elif candidate.kind == "invalid-spec":
        assert problems, candidate.note
    elif candidate.kind in ("valid", "bad-template"):
        assert not problems, problems
    job = apply_defaults(candidate.job)
    job["metadata"].update(namespace="ns", uid=JOB_UID, generation=1, resourceVersion="7")
    prior = data.draw(job_statuses(), label="prior status")
    job["status"] = prior
    pods = data.draw(observed_pods(job["metadata"]["name"]), label="observed pods")
    wrong = plan_problems(job, pods, prior)
    assert not wrong, wrong
