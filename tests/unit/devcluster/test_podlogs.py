"""Unit tests of the devcluster's pod-logs agent: what it writes for a pod (`plan_pod`, pure) and
how it writes it to files (`Agent.apply`). The agent against a real cluster (KWOK serving the
files to `kubectl logs`) is tested in tests/integration/test_devcluster_logs.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from devcluster.api import ApiError
from devcluster.podlogs import LOG_ANNOTATION, Agent, PodLog, Write, cri_line, logs_object, plan_pod

NOW = "2030-01-01T00:00:10.000000Z"
STARTED = "2030-01-01T00:00:05Z"
TF_CONFIG = json.dumps({"cluster": {"chief": ["j-chief-0.j.ns.svc:2222"],
                                    "worker": ["j-worker-0.j.ns.svc:2222", "j-worker-1.j.ns.svc:2222"]},
                        "task": {"type": "worker", "index": 1}})


def pod(*, uid: str = "u1", state: dict[str, Any] | None = None, restarts: int = 0, log: str | None = None,
        last: dict[str, Any] | None = None, env: bool = True, containers: tuple[str, ...] = ("tensorflow",)) -> dict[str, Any]:
    annotations = {LOG_ANNOTATION: log} if log is not None else {}
    specs = [{"name": name, "image": "tf:2", **({"env": [{"name": "TF_CONFIG", "value": TF_CONFIG}]} if env else {})}
             for name in containers]
    statuses = []
    if state is not None:
        for name in containers:
            status: dict[str, Any] = {"name": name, "restartCount": restarts, "state": state}
            if last:
                status["lastState"] = {"terminated": last}
            statuses.append(status)
    return {"metadata": {"name": "j-worker-1", "namespace": "ns", "uid": uid, "annotations": annotations},
            "spec": {"nodeName": "kwok-node-1", "containers": specs},
            "status": {"containerStatuses": statuses}}


RUNNING = {"running": {"startedAt": STARTED}}


def texts(writes: list[Write]) -> list[str]:
    return [text for write in writes for _, text in write.lines]


def test_a_started_container_logs_its_node_and_its_tf_config_task() -> None:
    _, writes = plan_pod(pod(state=RUNNING), None, NOW)

    lines = texts(writes)
    assert "kwok-node-1" in lines[0] and "'tensorflow'" in lines[0]
    assert lines[1] == "TF_CONFIG task: worker 1 (cluster: chief x1, worker x2)"
    assert lines[2] == "started TensorFlow server at j-worker-1.j.ns.svc:2222"
    assert all(when == STARTED for write in writes for when, _ in write.lines)
    assert writes[0].new_file


def test_a_container_without_tf_config_says_so() -> None:
    _, writes = plan_pod(pod(state=RUNNING, env=False), None, NOW)

    assert texts(writes)[-1] == "no TF_CONFIG in the environment"


def test_the_log_annotation_follows_the_start_lines() -> None:
    _, writes = plan_pod(pod(state=RUNNING, log="epoch 1\nepoch 2\n"), None, NOW)

    assert texts(writes)[-2:] == ["epoch 1", "epoch 2"]


def test_lines_added_to_the_annotation_are_appended_once() -> None:
    record, _ = plan_pod(pod(state=RUNNING, log="epoch 1"), None, NOW)

    record, writes = plan_pod(pod(state=RUNNING, log="epoch 1\nepoch 2"), record, NOW)
    _, again = plan_pod(pod(state=RUNNING, log="epoch 1\nepoch 2"), record, NOW)

    assert texts(writes) == ["epoch 2"] and not writes[0].new_file
    assert again == []


def test_an_edited_annotation_is_appended_in_full() -> None:
    record, _ = plan_pod(pod(state=RUNNING, log="a\nb"), None, NOW)

    _, writes = plan_pod(pod(state=RUNNING, log="x\ny"), record, NOW)

    assert texts(writes) == ["x", "y"]


def test_a_terminated_container_ends_its_log_with_the_exit_code() -> None:
    record, _ = plan_pod(pod(state=RUNNING), None, NOW)
    ended = {"terminated": {"exitCode": 3, "reason": "Error", "startedAt": STARTED, "finishedAt": "2030-01-01T00:00:09Z"}}

    _, writes = plan_pod(pod(state=ended), record, NOW)

    assert writes[0].lines == (("2030-01-01T00:00:09Z", "simulated container 'tensorflow' exited with code 3 (Error)"),)


def test_a_pod_first_seen_terminated_gets_its_whole_log_at_once() -> None:
    ended = {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": STARTED, "finishedAt": STARTED}}

    _, writes = plan_pod(pod(state=ended, log="done"), None, NOW)

    lines = texts(writes)
    assert lines[1].startswith("TF_CONFIG task: worker 1")
    assert lines[-2:] == ["done", "simulated container 'tensorflow' exited with code 0 (Completed)"]


def test_an_in_place_restart_ends_the_old_log_and_starts_a_new_one() -> None:
    record, _ = plan_pod(pod(state=RUNNING), None, NOW)
    restarted = pod(state={"running": {"startedAt": "2030-01-01T00:00:08Z"}}, restarts=1,
                    last={"exitCode": 1, "reason": "Error", "finishedAt": "2030-01-01T00:00:07Z"})

    _, writes = plan_pod(restarted, record, NOW)

    assert texts([writes[0]]) == ["simulated container 'tensorflow' exited with code 1 (Error)"]
    assert not writes[0].rotate
    assert writes[1].rotate and not writes[1].new_file
    assert texts([writes[1]])[1].startswith("TF_CONFIG task: worker 1")


def test_a_new_pod_of_the_same_name_starts_a_fresh_log() -> None:
    record, _ = plan_pod(pod(state=RUNNING, log="old"), None, NOW)

    _, writes = plan_pod(pod(uid="u2", state=RUNNING, log="old"), record, NOW)

    assert writes[0].new_file
    assert texts(writes)[-1] == "old"


def test_a_container_not_started_yet_gets_an_empty_log_file() -> None:
    record, writes = plan_pod(pod(state={"waiting": {"reason": "ContainerCreating"}}), None, NOW)

    assert writes == [Write("tensorflow", (), new_file=True)]
    _, started = plan_pod(pod(state=RUNNING), record, NOW)
    assert len(texts(started)) == 3 and not started[0].new_file


def test_times_in_a_log_never_go_back() -> None:
    record = PodLog("u1")
    record, _ = plan_pod(pod(state=RUNNING, log="a"), record, "2030-01-01T00:00:20.000000Z")

    _, writes = plan_pod(pod(state=RUNNING, log="a\nb"), record, "2030-01-01T00:00:19.000000Z")

    assert writes[0].lines[0][0] == "2030-01-01T00:00:20.000000Z"


def test_lines_are_written_in_the_cri_format_kwok_reads() -> None:
    assert cri_line("2030-01-01T00:00:05Z", "hello") == "2030-01-01T00:00:05Z stdout F hello\n"


def test_the_logs_object_points_kwok_at_each_containers_files(tmp_path: Path) -> None:
    obj = logs_object("ns", "p", tmp_path, ["tensorflow", "sidecar"])

    assert obj["metadata"] == {"name": "p", "namespace": "ns"}
    assert obj["spec"]["logs"][1] == {"containers": ["sidecar"], "logsFile": str(tmp_path / "sidecar.log"),
                                      "previousLogsFile": str(tmp_path / "sidecar.previous.log"), "follow": True}


def test_the_agent_appends_rotates_and_replaces_files(tmp_path: Path) -> None:
    agent = Agent(api=None, root=tmp_path)  # type: ignore[arg-type]  # apply() makes no API call
    folder = tmp_path / "ns" / "p"
    current, previous = folder / "c.log", folder / "c.previous.log"

    agent.apply(folder, Write("c", (("t1", "one"),), new_file=True))
    agent.apply(folder, Write("c", (("t2", "two"),)))
    assert current.read_text() == cri_line("t1", "one") + cri_line("t2", "two")

    agent.apply(folder, Write("c", (("t3", "three"),), rotate=True))
    assert previous.read_text() == cri_line("t1", "one") + cri_line("t2", "two")
    assert current.read_text() == cri_line("t3", "three")

    agent.apply(folder, Write("c", (), new_file=True))
    assert current.read_text() == "" and not previous.exists()


class FakeApi:
    """Records the agent's calls; `existing` answers a create with 409 and a GET with that object."""

    def __init__(self, existing: dict[str, Any] | None = None) -> None:
        self.calls: list[tuple[str, str]] = []
        self.existing = existing

    def post(self, path: str, body: Any) -> Any:
        self.calls.append(("POST", path))
        if self.existing is not None:
            raise ApiError("POST", path, 409, {"reason": "AlreadyExists"})
        return body

    def get(self, path: str) -> Any:
        self.calls.append(("GET", path))
        return self.existing

    def request(self, method: str, path: str, body: Any = None) -> Any:
        self.calls.append((method, path))
        return body


LOGS = "/apis/kwok.x-k8s.io/v1alpha1/namespaces/ns/logs"


def test_the_agent_points_kwok_at_a_pods_files_once(tmp_path: Path) -> None:
    api = FakeApi()
    agent = Agent(api, tmp_path)  # type: ignore[arg-type]

    agent.handle("ADDED", pod(state={"waiting": {}}))
    agent.handle("MODIFIED", pod(state=RUNNING))

    assert api.calls == [("POST", LOGS)]
    assert (tmp_path / "ns" / "j-worker-1" / "tensorflow.log").read_text().count(" stdout F ") == 3


def test_the_agent_corrects_a_logs_object_left_by_an_earlier_pod(tmp_path: Path) -> None:
    api = FakeApi(existing={"metadata": {"resourceVersion": "7"}, "spec": {"logs": []}})

    Agent(api, tmp_path).handle("ADDED", pod(state=RUNNING))  # type: ignore[arg-type]

    assert api.calls == [("POST", LOGS), ("GET", f"{LOGS}/j-worker-1"), ("PUT", f"{LOGS}/j-worker-1")]


def test_a_deleted_pods_files_go_and_its_successor_is_set_up_again(tmp_path: Path) -> None:
    api = FakeApi()
    agent = Agent(api, tmp_path)  # type: ignore[arg-type]
    agent.handle("ADDED", pod(state=RUNNING))

    agent.handle("DELETED", pod(state=RUNNING))
    assert not (tmp_path / "ns").exists()

    agent.handle("ADDED", pod(uid="u2", state=RUNNING))
    assert api.calls == [("POST", LOGS), ("POST", LOGS)]
