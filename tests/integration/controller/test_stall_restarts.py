"""A container restarted after its stall rule's liveness probe, as the local cluster's kubelet
simulation plays it (an in-place restart whose last termination is SIGTERM's 143): the restart counts
against backoffLimit and the job says `Stalled`. (KWOK runs no probes; the probes themselves are
tested against real files in tests/unit/controller/job/test_stall_probe_command.py.)"""

from __future__ import annotations

from typing import Any

RESTART_IN_PLACE = "sim.tensorflowjob.kubeflow.org/restart-in-place"


def test_a_liveness_kill_restarted_in_place_is_counted_and_reported_as_stalled(tfjobs: Any) -> None:
    worker = tfjobs.role(1, exit_code=143, exit_after="2s", annotations={RESTART_IN_PLACE: "true"})
    worker["stall"] = {"timeoutSeconds": 60}
    tfjobs.create("hung", worker=worker, backoffLimit=100)
    tfjobs.wait_for(lambda: (tfjobs.status("hung").get("restartCount") or 0) >= 1, 60, "a counted restart")
    stalled = tfjobs.wait_for(lambda: [e for e in tfjobs.events("hung") if e["reason"] == "Stalled"], 30,
                              "a Stalled event on the job")
    assert stalled[0]["type"] == "Warning"
    assert "hung-worker-0 (exit code 143) killed while the stall rule found no progress" in stalled[0]["message"]
    assert tfjobs.status("hung")["state"] == "Running"


def test_the_same_restart_without_a_stall_rule_is_not_called_a_stall(tfjobs: Any) -> None:
    worker = tfjobs.role(1, exit_code=143, exit_after="2s", annotations={RESTART_IN_PLACE: "true"})
    tfjobs.create("crash", worker=worker, backoffLimit=100)
    tfjobs.wait_for(lambda: (tfjobs.status("crash").get("restartCount") or 0) >= 2, 60, "two counted restarts")
    assert [e for e in tfjobs.events("crash") if e["reason"] == "Stalled"] == []
