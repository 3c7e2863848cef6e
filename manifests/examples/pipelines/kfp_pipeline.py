"""Train with a TensorFlowJob as one step of a Kubeflow Pipelines (v2) pipeline.

The step submits the job with the project's Python client (`tfjobs.TfJobClient`), streams the
logs of all its pods into the step's log, and waits on the job's status with the same kind of
success and failure conditions as an Argo `resource` template (see argo-workflow.yaml): the step
fails as soon as FAILURE_CONDITION matches, succeeds once SUCCESS_CONDITION does, and returns the
job's name. tests/integration/controller/test_user_tools.py runs `train_step` against the local
cluster and checks both conditions against real job statuses.

Compile it (needs the `kfp` package, 2.x):

    python manifests/examples/pipelines/kfp_pipeline.py train-mnist.yaml

The step's image needs this project installed (STEP_PACKAGES), and the step's ServiceAccount the
permissions of rbac.yaml. The module imports `kfp` only when compiling, so its step can also run
(and be tested) as a plain function. (No `from __future__ import annotations` here: kfp reads
the step's annotations as types.)
"""

import sys
from typing import Any

SUCCESS_CONDITION = "status.state == Succeeded"
FAILURE_CONDITION = "status.state == Failed"

STEP_IMAGE = "python:3.11-slim"
STEP_PACKAGES = ["tfjob-operator==0.1.0"]  # this project, from wherever your build is published

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
               success_condition: str = SUCCESS_CONDITION, failure_condition: str = FAILURE_CONDITION,
               follow_logs: bool = True) -> str:
    """Submit the TensorFlowJob in `manifest` with `workers` workers, print its pods' logs, and wait
    until `success_condition` holds (return the job's name) or `failure_condition` does (raise).

    Self-contained (imports inside), as a Kubeflow Pipelines lightweight component must be.
    """
    from tfjobs import TfJobClient

    with TfJobClient.connect(namespace=namespace or None) as client:
        job = client.create_from_yaml(manifest, overrides={"worker.replicas": workers})
        name = job["metadata"]["name"]
        print(f"created TensorFlowJob {job['metadata']['namespace']}/{name}", flush=True)
        if follow_logs:
            for line in client.logs(name, follow=True, on_error=lambda message: print("warning:", message)):
                print(f"[{line.prefix}] {line.text}", flush=True)
        client.wait_for(name, success=success_condition, failure=failure_condition, timeout=timeout,
                        on_progress=lambda p: print(f"{p.name}: {p.state}, restarts {p.restarts}", flush=True))
        print(f"TensorFlowJob {name} met {success_condition!r}", flush=True)
        return name


def build_pipeline() -> Any:
    """The pipeline, built with the kfp SDK (imported here, so the module loads without it)."""
    from kfp import dsl

    train = dsl.component(base_image=STEP_IMAGE, packages_to_install=STEP_PACKAGES)(train_step)

    @dsl.pipeline(name="train-mnist", description="Train MNIST with a TensorFlowJob and wait for it")
    def pipeline(workers: int = 2, timeout: str = "24h") -> None:
        train(manifest=MNIST_JOB, workers=workers, timeout=timeout)

    return pipeline


if __name__ == "__main__":
    from kfp import compiler

    compiler.Compiler().compile(build_pipeline(), sys.argv[1] if len(sys.argv) > 1 else "train-mnist.yaml")
