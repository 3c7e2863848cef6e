"""The parameter-server examples' training program rides out a replaced worker: the chief's `run_steps`
runs the steps a lost task cost again, on new input iterators, until the epoch has all its steps
(docs/production.md, "The parameter-server example when a worker is replaced").

TensorFlow is no dependency of the project, so the functions are taken from the program as the
examples ship it (their ConfigMap) and run against a fake coordinator, fake errors and a fake clock;
tests/real/test_repair_and_scaling.py runs the whole program with real TensorFlow on a real node."""

from __future__ import annotations

import ast
import pathlib
from collections.abc import Callable
from typing import Any

import pytest
import yaml

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "manifests" / "examples"
PROGRAMS = ("parameter-server.yaml", "parameter-server-evaluator.yaml")
PACE = 0.125
RETRY_SECONDS = 300.0


def program(example: str) -> str:
    [source] = [doc["data"]["train.py"] for doc in yaml.safe_load_all((EXAMPLES / example).read_text())
                if doc and doc["kind"] == "ConfigMap"]
    return str(source)


class Unavailable(Exception):
    pass


class OutOfRange(Exception):
    pass


class Cancelled(Exception):
    pass


class NotFound(Exception):
    """An error no lost task explains (say, a variable the parameter server does not have)."""


class Clock:
    """time.monotonic and time.sleep that only move when the program sleeps."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class Value:
    def __init__(self, result: float | Exception) -> None:
        self.result = result

    def fetch(self) -> float:
        if isinstance(self.result, Exception):
            raise self.result
        return self.result


class Coordinator:
    """Runs each scheduled step at once: `outcome(iterator)` is its loss or its error; `join()` raises
    the first error since the last join, as ClusterCoordinator does."""

    def __init__(self, outcome: Callable[[str], float | Exception]) -> None:
        self.outcome = outcome
        self.scheduled: list[str] = []
        self.errors: list[Exception] = []

    def schedule(self, function: Any, args: tuple[Iterators]) -> Value:
        [iterator] = args
        self.scheduled.append(iterator.name)
        result = self.outcome(iterator.name)
        if isinstance(result, Exception):
            self.errors.append(result)
        return Value(result)

    def join(self) -> None:
        errors, self.errors = self.errors, []
        if errors:
            raise errors[0]


class Iterators:
    """The per-worker iterators of one `iter()` (only the chief's steps read them)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __next__(self) -> Any:
        raise AssertionError("the chief never reads the workers' iterators itself")


class Dataset:
    """A per-worker dataset: each `iter()` makes a new set of iterators, named it-2, it-3, ..."""

    def __init__(self) -> None:
        self.made = 0

    def __iter__(self) -> Iterators:
        self.made += 1
        return Iterators(f"it-{self.made + 1}")


def chief_functions(source: str, clock: Clock, logged: list[str]) -> dict[str, Any]:
    """`run_steps` and what it calls, from the program's own text, with fakes for TensorFlow."""
    tree = ast.parse(source)
    wanted = {"summary", "run_steps"}
    functions: list[ast.stmt] = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name in wanted]
    assert {f.name for f in functions if isinstance(f, ast.FunctionDef)} == wanted
    namespace: dict[str, Any] = {"time": clock, "log": logged.append, "RETRY_PAUSE_SECONDS": 2.0,
                                 "TRANSIENT_ERRORS": (Unavailable, OutOfRange, Cancelled)}
    exec(compile(ast.Module(body=functions, type_ignores=[]), "train.py", "exec"), namespace)
    return namespace


@pytest.fixture(params=PROGRAMS)
def source(request: pytest.FixtureRequest) -> str:
    return program(request.param)


def test_both_parameter_server_examples_ship_the_same_program() -> None:
    assert program(PROGRAMS[0]) == program(PROGRAMS[1])


def test_an_epoch_without_failures_runs_its_steps_once_on_the_same_iterators(source: str) -> None:
    clock, logged = Clock(), list[str]()
    coordinator, dataset = Coordinator(lambda iterator: 0.5), Dataset()
    run_steps = chief_functions(source, clock, logged)["run_steps"]
    losses, iterator = run_steps(coordinator, None, dataset, Iterators("it-1"), 20, PACE, RETRY_SECONDS)
    assert losses == [0.5] * 20 and iterator.name == "it-1"
    assert coordinator.scheduled == ["it-1"] * 20 and dataset.made == 0 and logged == []
    assert clock.now == pytest.approx(20 * PACE)  # the steps spread over the epoch


def test_steps_a_replaced_worker_cost_run_again_on_new_iterators_until_the_epoch_is_complete(source: str) -> None:
    # The 5th and 6th steps fail: one whose iterator ended, one cancelled with it.
    failures = {4: OutOfRange("End of sequence\n\t [[{{node IteratorGetNext}}]]"), 5: Cancelled("cancelled")}
    count = iter(range(100))

    def outcome(iterator: str) -> float | Exception:
        return failures.get(next(count), 1.0)

    clock, logged = Clock(), list[str]()
    coordinator, dataset = Coordinator(outcome), Dataset()
    run_steps = chief_functions(source, clock, logged)["run_steps"]
    losses, iterator = run_steps(coordinator, None, dataset, Iterators("it-1"), 20, PACE, RETRY_SECONDS)
    assert losses == [1.0] * 20
    assert coordinator.scheduled == ["it-1"] * 20 + ["it-2"] * 2  # the two lost steps, on new iterators
    assert iterator.name == "it-2" and dataset.made == 1
    assert logged == ["2 steps lost to OutOfRange (End of sequence); running them again on new input iterators"]


def test_an_error_no_lost_task_explains_ends_the_epoch_at_once(source: str) -> None:
    coordinator = Coordinator(lambda iterator: NotFound("Resource localhost/w1 does not exist"))
    run_steps = chief_functions(source, Clock(), [])["run_steps"]
    with pytest.raises(NotFound):
        run_steps(coordinator, None, Dataset(), Iterators("it-1"), 20, PACE, RETRY_SECONDS)


def test_the_chief_gives_up_when_no_step_succeeds_for_the_retry_time(source: str) -> None:
    clock, logged = Clock(), list[str]()
    coordinator = Coordinator(lambda iterator: Unavailable("errors resolving mnist-ps-worker-0"))
    run_steps = chief_functions(source, clock, logged)["run_steps"]
    with pytest.raises(Unavailable):
        run_steps(coordinator, None, Dataset(), Iterators("it-1"), 20, PACE, RETRY_SECONDS)
    assert RETRY_SECONDS < clock.now < RETRY_SECONDS + 10
    assert len(logged) > 10 and all("20 steps lost to Unavailable" in line for line in logged)


def test_a_step_that_succeeds_restarts_the_retry_time(source: str) -> None:
    # Every other pass loses one step: the failures go on far longer than the retry time, but never
    # without a step succeeding in between, so the epoch completes.
    count = iter(range(10_000))

    def outcome(iterator: str) -> float | Exception:
        return Unavailable("transient") if next(count) % 2 else 1.0

    clock = Clock()
    run_steps = chief_functions(source, clock, [])["run_steps"]
    losses, _ = run_steps(Coordinator(outcome), None, Dataset(), Iterators("it-1"), 400, 2.0, 30.0)
    assert len(losses) == 400 and clock.now > 30.0
