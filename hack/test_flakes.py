"""Run the test suite several times under load and report every test that failed even once.

A flaky test is a race the suite lost on a busy machine, so the runs are made busy on purpose, the
way a developer's machine or a shared CI host is: another local cluster (a control plane of its own,
with KWOK nodes) and a CPU-bound process run beside the tests for the whole time. The report lists
each run (outcome counts, wall time) and every test that failed or errored in any run, with how
often; it is printed, and written as Markdown (for bench/RESULTS.md) where `--report` says.

    python hack/test_flakes.py --runs 3 -- tests -m "(not real or real_ci) and not tools" -n 3 --dist loadgroup

Exits 1 when any test failed once (or a run collected nothing), 0 otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from devcluster.cluster import Cluster  # noqa: E402 - after the repository is on the path

BURNER = "while True:\n    pass\n"


@dataclass
class Run:
    number: int
    exit_code: int
    seconds: float
    counts: Counter[str] = field(default_factory=Counter)
    failed: list[str] = field(default_factory=list)


def outcomes(junit: Path) -> tuple[Counter[str], list[str]]:
    """Counts per outcome and the ids of the tests that failed or errored, from a JUnit XML report."""
    counts: Counter[str] = Counter()
    failed: list[str] = []
    if not junit.exists():
        return counts, failed
    for case in ElementTree.parse(junit).getroot().iter("testcase"):
        test = f"{case.get('classname', '')}::{case.get('name', '')}"
        kinds = {child.tag for child in case}
        if kinds & {"failure", "error"}:
            counts["failed" if "failure" in kinds else "error"] += 1
            failed.append(test)
        elif "skipped" in kinds:
            counts["skipped"] += 1
        else:
            counts["passed"] += 1
    return counts, failed


@contextlib.contextmanager
def neighbour_cluster(folder: Path) -> Iterator[Cluster]:
    """Another local cluster on the machine, for the whole of the runs."""
    cluster = Cluster(folder)
    try:
        cluster.up(nodes=2)
        yield cluster
    finally:
        cluster.down()


@contextlib.contextmanager
def cpu_burner() -> Iterator[subprocess.Popen[bytes]]:
    """One process spinning on a core at the tests' own priority."""
    burner = subprocess.Popen([sys.executable, "-c", BURNER])
    try:
        yield burner
    finally:
        burner.kill()
        burner.wait()


def run_suite(number: int, pytest_args: Sequence[str], folder: Path) -> Run:
    junit = folder / f"run-{number}.xml"
    started = time.monotonic()
    argv = [sys.executable, "-m", "pytest", *pytest_args, f"--junitxml={junit}", "-p", "no:cacheprovider"]
    done = subprocess.run(argv, cwd=ROOT, env={**os.environ, "TFJOB_TEST_LOG_DIR": str(folder / f"logs-{number}")})
    counts, failed = outcomes(junit)
    return Run(number, done.returncode, time.monotonic() - started, counts, failed)


def report(runs: Sequence[Run], load: str) -> str:
    lines = [f"Under load: {load}.", "", "| run | exit | passed | failed | errors | skipped | wall |",
             "|---|---|---|---|---|---|---|"]
    for run in runs:
        c = run.counts
        lines.append(f"| {run.number} | {run.exit_code} | {c['passed']} | {c['failed']} | {c['error']} | "
                     f"{c['skipped']} | {run.seconds / 60:.1f} min |")
    flaky = Counter(test for run in runs for test in run.failed)
    lines += ["", f"Tests that failed at least once: {len(flaky)}"]
    lines += [f"* {test} — {times} of {len(runs)} runs" for test, times in flaky.most_common()]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--report", type=Path, help="also write the report (Markdown) here")
    parser.add_argument("--no-neighbour", action="store_true", help="no second cluster (the CPU burner still runs)")
    parser.add_argument("pytest_args", nargs="*", help="the suite to run (after --)")
    options = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="tfjob-test-flakes-"))
    runs: list[Run] = []
    with contextlib.ExitStack() as stack:
        if not options.no_neighbour:
            stack.enter_context(neighbour_cluster(folder / "neighbour"))
        stack.enter_context(cpu_burner())
        load = ("a CPU-bound process" if options.no_neighbour
                else "another local cluster (2 KWOK nodes) and a CPU-bound process")
        for number in range(1, options.runs + 1):
            print(f"test-flakes: run {number} of {options.runs}", flush=True)
            runs.append(run_suite(number, options.pytest_args, folder))
            print(report(runs, load), flush=True)
    text = report(runs, load)
    if options.report:
        options.report.write_text(text)
    print(f"test-flakes: JUnit reports and logs in {folder}")
    broken = any(run.failed or not sum(run.counts.values()) or run.exit_code != 0 for run in runs)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
