"""Unit tests for bench/profile_split.py: which work and which kind of code a sampled stack is charged to."""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

_PATH = Path(__file__).resolve().parents[2] / "bench" / "profile_split.py"
_SPEC = importlib.util.spec_from_file_location("bench_profile_split_under_test", _PATH)
assert _SPEC is not None and _SPEC.loader is not None
profile_split = importlib.util.module_from_spec(_SPEC)
sys.modules[_SPEC.name] = profile_split
_SPEC.loader.exec_module(profile_split)

STATUS_PATCH = ("worker-N;controller/controller.py:_worker;controller/reconciler.py:reconcile;"
                "controller/reconciler.py:_write_status;kube/retry.py:wrapped;kube/client.py:patch;"
                "kube/client.py:request;kube/transport.py:request;http/client.py:getresponse;"
                "python3.11/socket.py:readinto;python3.11/ssl.py:recv_into")
WATCH_DECODE = ("informer-pods-N;informers/reflector.py:_watch;kube/watch.py:__iter__;"
                "json/__init__.py:loads;json/decoder.py:decode")
PLANNING = "worker-N;controller/controller.py:_worker;controller/reconciler.py:reconcile;job/plan.py:plan"
CREATE = ("create_N;python3.11/threading.py:run;controller/reconciler.py:_create_pod;kube/client.py:create;"
          "kube/client.py:_send;json/__init__.py:dumps;json/encoder.py:encode")


def test_a_status_patch_waiting_for_its_answer_is_status_work_blocked_at_the_sample() -> None:
    thread, *frames = STATUS_PATCH.split(";")
    assert profile_split.purpose(thread, frames) == "status"
    assert profile_split.mechanism(frames) == "blocked at the sample"


def test_a_status_patch_encrypting_its_body_is_status_work_in_tls() -> None:
    thread, *frames = STATUS_PATCH.replace("python3.11/socket.py:readinto;python3.11/ssl.py:recv_into",
                                           "python3.11/ssl.py:sendall").split(";")
    assert (profile_split.purpose(thread, frames), profile_split.mechanism(frames)) == ("status", "TLS + sockets")


def test_decoding_a_watch_event_is_watch_work_in_json() -> None:
    thread, *frames = WATCH_DECODE.split(";")
    assert (profile_split.purpose(thread, frames), profile_split.mechanism(frames)) == ("watch → cache", "JSON")


def test_planning_is_the_reconciles_own_python() -> None:
    thread, *frames = PLANNING.split(";")
    assert (profile_split.purpose(thread, frames), profile_split.mechanism(frames)) == ("reconcile",
                                                                                         "operator Python")


def test_split_weights_each_stack_by_its_count_and_totals_them() -> None:
    cells, total = profile_split.split([f"{STATUS_PATCH} 300", f"{WATCH_DECODE} 100", f"{CREATE} 600"])
    assert total == 1000
    assert cells[("status", "blocked at the sample")] == 300
    assert cells[("create/delete children", "JSON")] == 600
    table = profile_split.table(cells, total, 1e-6)
    assert "| create/delete children | 0.00 s (60 %)" in table


def test_writing_an_owned_type_is_child_work() -> None:
    frames = ["controller/controller.py:_worker", "controller/reconciler.py:reconcile",
              "controller/reconciler.py:_act", "controller/reconciler.py:_write_owned",
              "controller/companions.py:carry_out", "kube/client.py:create"]
    assert profile_split.purpose("worker-N", frames) == "create/delete children"


def test_every_child_write_names_a_function_the_reconciler_defines() -> None:
    """A renamed reconciler function would silently move its CPU to "reconcile"."""
    source = (Path(__file__).resolve().parents[2] / "controller" / "reconciler.py").read_text(encoding="utf-8")
    defined = {node.name for node in ast.walk(ast.parse(source))
               if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    named = {entry.split(":", 1)[1] for entry in profile_split._CHILD_WRITES} | {"_write_status"}
    assert named - defined == set()
