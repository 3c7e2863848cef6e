"""Train with a TensorFlowJob as one step of a Kubeflow Pipelines (v2) pipeline.

The step submits the job with the project's Python client (`tfjobs.TfJobClient`), streams the
logs of all its pods into the step's log, and waits on the job's status with the same kind of
success and failure conditions as an Argo `resource` template (see argo-workflow.yaml): the step
fails as soon as FAILURE_CONDITION matches, succeeds once SUCCESS_CONDITION does, and returns the
job's name. One deadline (`timeout`) covers all of it, creation, waiting and log following: a job
that never starts ends the step then, with the job's state and why in the error, and the job is
deleted rather than left to start later with nobody watching.

Compile it (needs the `kfp` package, 2.x):

    python manifests/examples/pipelines/kfp_pipeline.py train-mnist.yaml \
        [--package 'tfjob-client @ https://wheels.example.com/tfjob_client-0.1.0-py3-none-any.whl'] \
        [--index-url https://pypi.example.com/simple] [--image my-registry/step:1]

The step's image needs the client distribution, `tfjob-client` (the packages tfjobs, tfjob_api,
tfconfig and tfheartbeat): by default the step pip-installs STEP_PACKAGES into STEP_IMAGE when it
starts; `--package` (repeatable: a requirement, a wheel's URL) and `--index-url` point it at your
build, and `--image` with `--no-packages` uses an image that already has it. The step's
ServiceAccount needs the permissions of rbac.yaml.

Why it is shaped so: a Kubeflow Pipelines lightweight component runs the source of one function
alone, so `train_step` imports inside and keeps its helpers nested, and its defaults are literals
(tests/unit/test_pipeline_kfp_compile.py runs the compiled program to check it defines the step on
its own). The pipeline never caches the step: a cached result would skip the training. The module
imports `kfp` only when compiling, so the step also runs (and is tested) as a plain function. (No
`from __future__ import annotations` here: kfp reads the step's annotations as types.)
"""

import argparse
import sys
from typing import Any

SUCCESS_CONDITION = "status.state == Succeeded"
FAILURE_CONDITION = "status.state == Failed"

STEP_IMAGE = "python:3.11-slim"
# The client distribution built from this project; point the step at your index or wheel (above).
STEP_PACKAGES = ["tfjob-client==0.1.0"]

MNIST_JOB = """
apiVersion: kubeflow.org/v1
kind: TensorFlowJob
metadata:
  generateName: mnist-
spec:
  backoffLimit: 3
  cleanPodPolicy: All
  ttlSecondsAfterFinished: 3600
  chief:
    replicas: 1
    restartPolicy: ExitCode
    template:
      spec:
        containers:
        - name: tensorflow
          image: tensorflow/tensorflow:2.21.0
          command: ["python", "/code/train.py"]
  worker:
    replicas: 2
    restartPolicy: OnFailure
    template:
      spec:
        containers:
        - name: tensorflow
          image: tensorflow/tensorflow:2.21.0
          command: ["python", "/code/train.py"]
"""


def train_step(manifest: str, workers: int = 2, timeout: str = "24h", namespace: str = "",
               success_condition: str = "status.state == Succeeded",
               failure_condition: str = "status.state == Failed",
               follow_logs: bool = True, delete_unfinished: bool = True) -> str:
    """Submit the TensorFlowJob in `manifest` with `workers` workers, print its pods' logs, and wait
    until `success_condition` holds (return the job's name) or `failure_condition` does (raise
    tfjobs.JobFailed at once, even while the job still runs).

    `timeout` (seconds, or a duration such as "90s", "1h30m") bounds the whole step: past it the
    step raises TimeoutError naming the job's state and why. When the step fails or times out while
    the job has not finished, it deletes the job (unless `delete_unfinished` is false); a finished
    job is left as it is (its ttlSecondsAfterFinished applies). Self-contained (imports and helpers
    inside), as a Kubeflow Pipelines lightweight component must be.
    """
    import re
    import threading
    import time

    from tfjobs import JobFailed, JobNotFound, Progress, TfJobClient, WaitTimeout

    def seconds(duration: str) -> float:
        text = str(duration).strip()
        if re.fullmatch(r"\d+(\.\d+)?", text):
            return float(text)
        parts = re.findall(r"(\d+(?:\.\d+)?)(ms|h|m|s)", text)
        if not text or "".join(number + unit for number, unit in parts) != text:
            raise ValueError(f"invalid timeout {duration!r} (use seconds, or e.g. 90s, 30m, 1h30m)")
        units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
        return sum(float(number) * units[unit] for number, unit in parts)

    printing = threading.Lock()

    def say(*parts: object) -> None:
        # The log follower prints from its own thread: one line at a time, never two run together.
        with printing:
            print(*parts, flush=True)

    limit = seconds(timeout)
    deadline = time.monotonic() + limit

    def left() -> float:
        return max(deadline - time.monotonic(), 0.0)

    def print_logs(name: str, job_namespace: str) -> None:
        # Its own client, so the wait never shares a connection with the log readers. Following
        # ends by itself once the job has finished and every log is read, or at the deadline.
        try:
            with TfJobClient.connect(namespace=job_namespace) as reader:
                for line in reader.logs(name, follow=True, timeout=left(),
                                        on_error=lambda message: say("warning:", message)):
                    say(f"[{line.prefix}] {line.text}")
        except Exception as error:  # the logs are a courtesy: the wait decides the step
            say(f"warning: stopped following the logs of {name}: {error}")

    shown: list[Progress] = []

    def show(progress: Progress) -> None:
        if not progress.same_as(shown[-1] if shown else None):
            say(f"{progress.name}: {progress.state or 'Pending'}, restarts {progress.restarts}"
                  + (f" - {progress.detail}" if progress.detail else ""))
            shown.append(progress)

    with TfJobClient.connect(namespace=namespace or None) as client:
        job = client.create_from_yaml(manifest, overrides={"worker.replicas": workers})
        name, job_namespace = job["metadata"]["name"], job["metadata"]["namespace"]
        say(f"created TensorFlowJob {job_namespace}/{name}")
        follower = None
        if follow_logs:
            follower = threading.Thread(target=print_logs, args=(name, job_namespace), daemon=True)
            follower.start()

        def abandon(state: str) -> str:
            if not delete_unfinished or state in ("Succeeded", "Failed"):
                return ""
            try:
                client.delete(name, namespace=job_namespace)
            except JobNotFound:
                return ""
            return f"; deleted TensorFlowJob {job_namespace}/{name}"

        try:
            client.wait_for(name, success=success_condition, failure=failure_condition, timeout=left(),
                            on_progress=show, namespace=job_namespace)
        except WaitTimeout as timed_out:
            last = shown[-1] if shown else None
            state = (last.state if last is not None else "") or "Pending"
            why = f" ({last.detail})" if last is not None and last.detail else ""
            raise TimeoutError(f"TensorFlowJob {job_namespace}/{name} did not meet {success_condition!r} within "
                               f"the step's timeout of {timeout}: it is {state}{why}{abandon(state)}") from timed_out
        except JobFailed as failed:
            say(f"TensorFlowJob {name} failed: {failed}{abandon(failed.state)}")
            raise
        finally:
            if follower is not None:  # the last lines of a finished job, within the deadline
                follower.join(min(left(), 30.0))
        say(f"TensorFlowJob {name} met {success_condition!r}")
        return name


def build_pipeline(image: str = STEP_IMAGE, packages: list[str] | None = None,
                   index_urls: list[str] | None = None) -> Any:
    """The pipeline, built with the kfp SDK (imported here, so the module loads without it).

    `packages` (default STEP_PACKAGES; [] when `image` already has the client) are pip-installed
    into `image` when the step starts, from `index_urls` when given (else pip's default index)."""
    from kfp import dsl

    train = dsl.component(base_image=image, packages_to_install=STEP_PACKAGES if packages is None else packages,
                          pip_index_urls=index_urls or None)(train_step)

    @dsl.pipeline(name="train-mnist", description="Train MNIST with a TensorFlowJob and wait for it")
    def pipeline(workers: int = 2, timeout: str = "24h") -> None:
        # Never cached: a cached result would skip the training and hand back an old job's name.
        train(manifest=MNIST_JOB, workers=workers, timeout=timeout).set_caching_options(False)

    return pipeline


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description="Compile the train-mnist pipeline to a YAML file.")
    parser.add_argument("output", nargs="?", default="train-mnist.yaml", help="the file to write")
    parser.add_argument("--image", default=STEP_IMAGE, help=f"the step's image (default {STEP_IMAGE})")
    parser.add_argument("--package", action="append", dest="packages", metavar="REQUIREMENT",
                        help=f"what the step pip-installs, repeatable: a requirement or a wheel's URL "
                             f"(default {' '.join(STEP_PACKAGES)})")
    parser.add_argument("--no-packages", action="store_true", help="install nothing: the image has the client")
    parser.add_argument("--index-url", action="append", dest="index_urls", metavar="URL",
                        help="the package index to install from, repeatable (default: pip's)")
    args = parser.parse_args(argv)
    if args.no_packages and args.packages:
        parser.error("--package and --no-packages exclude each other")
    packages = [] if args.no_packages else args.packages

    from kfp import compiler

    compiler.Compiler().compile(build_pipeline(args.image, packages, args.index_urls), args.output)


if __name__ == "__main__":
    main(sys.argv[1:])
