"""The examples' training programs end the way TensorFlow can save when their pods are deleted (a drain,
an eviction, a preemption, a suspension): on SIGTERM, not at the grace period's SIGKILL.

TensorFlow is no dependency of the project, so the parameter-server program's task functions are taken
from the program as the examples ship it and run against fakes; the all-reduce program's use of
PreemptionCheckpointHandler is read from its text. tests/real runs both with real TensorFlow."""

from __future__ import annotations

import ast
import pathlib
from collections.abc import Callable
from typing import Any

import pytest
import yaml

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "manifests" / "examples"


def program(example: str) -> str:
    [source] = [doc["data"]["train.py"] for doc in yaml.safe_load_all((EXAMPLES / example).read_text())
                if doc and doc["kind"] == "ConfigMap"]
    return str(source)


class Exited(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class Signals:
    """`signal.signal` that records the handler; `deliver()` runs it as a SIGTERM would."""

    SIGTERM = 15

    def __init__(self) -> None:
        self.handlers: dict[int, Callable[[int, Any], None]] = {}

    def signal(self, number: int, handler: Callable[[int, Any], None]) -> None:
        self.handlers[number] = handler

    def deliver(self) -> None:
        self.handlers[self.SIGTERM](self.SIGTERM, None)


class Told:
    """A threading.Event whose first waits time out and whose third runs the SIGTERM handler first."""

    def __init__(self, signals: Signals) -> None:
        self.signals, self.waits, self.set_ = signals, 0, False

    def set(self) -> None:
        self.set_ = True

    def is_set(self) -> bool:
        return self.set_

    def wait(self, _timeout: float) -> bool:
        self.waits += 1
        if self.waits == 3:
            self.signals.deliver()
        return self.set_


class Os:
    environ: dict[str, str] = {}

    @staticmethod
    def _exit(code: int) -> None:
        raise Exited(code)


class Time:
    def __init__(self) -> None:
        self.slept: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)


class Tf:
    class distribute:  # the name TensorFlow has
        @staticmethod
        def Server(*_args: Any, **_kwargs: Any) -> object:
            return object()


class Resolver:
    task_type, task_id, rpc_layer = "worker", 0, "grpc"

    def cluster_spec(self) -> dict[str, Any]:
        return {}


@pytest.mark.parametrize("example", ["parameter-server.yaml", "parameter-server-evaluator.yaml"])
def test_a_parameter_server_or_worker_told_to_stop_lingers_then_exits_143(example: str) -> None:
    tree = ast.parse(program(example))
    wanted = {"handle_sigterm", "serve"}
    functions: list[ast.stmt] = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in wanted]
    signals, clock, logged = Signals(), Time(), list[str]()
    namespace: dict[str, Any] = {"os": Os, "signal": signals, "time": clock, "tf": Tf, "log": logged.append,
                                 "TOLD_TO_STOP": Told(signals), "SIGTERM_EXIT": 143}
    exec(compile(ast.Module(body=functions, type_ignores=[]), "train.py", "exec"), namespace)
    with pytest.raises(Exited) as exited:
        namespace["serve"](Resolver(), "worker/0", "{}", 10.0)
    assert exited.value.code == 143
    assert clock.slept == [10.0]  # serves on for the chief's last checkpoint, then goes
    assert logged[-1] == "TASK worker/0 told to stop; serving 10s more for the chief's last checkpoint"


def test_the_parameter_server_chief_exits_143_after_the_checkpoint_of_the_epoch_in_flight() -> None:
    source = program("parameter-server.yaml")
    coordinate = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == "coordinate")
    text = ast.get_source_segment(source, coordinate) or ""
    saved, stopped = text.index("save(manager, chief_io"), text.index("if TOLD_TO_STOP.is_set()")
    assert saved < stopped < text.index("os._exit(SIGTERM_EXIT)")
    assert text.index("ClusterCoordinator(strategy)") < text.index("handle_sigterm()")


def test_the_allreduce_program_runs_every_step_through_a_preemption_checkpoint_handler() -> None:
    source = program("allreduce.yaml")
    calls = [node for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Call)]
    names = {ast.unparse(call.func) for call in calls}
    assert "tf.distribute.experimental.PreemptionCheckpointHandler" in names
    assert "handler.run" in names and "train_step" not in names  # no step outside the handler
    [config] = [c for c in calls if ast.unparse(c.func) == "tf.distribute.experimental.TerminationConfig"]
    assert ast.unparse(config.keywords[0]) == "exit_fn=saved_and_exit"
    [exit_fn] = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef) and n.name == "saved_and_exit"]
    assert ast.unparse(exit_fn.body[-1]) == "sys.exit(143)"  # after it logs the step it saved
