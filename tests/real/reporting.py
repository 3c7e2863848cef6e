"""A trainer that reports progress, as the real-node tests submit it: a few lines of Python importing the
repository's own `tfheartbeat`, mounted from a ConfigMap into the stock TensorFlow image (what a
user's image with `pip install`-ed tfheartbeat would run), in a job with `spec.progress`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.real.kubectl import Kubectl

ROOT = Path(__file__).resolve().parents[2]
IMAGE = "tensorflow/tensorflow:2.21.0"
PERIOD = 10  # the shortest read period the API accepts


def code_config_map(name: str, script: str) -> dict[str, Any]:
    """The trainer and the tfheartbeat package, as one ConfigMap (keys cannot hold a `/`)."""
    data = {"train.py": script}
    for source in sorted((ROOT / "tfheartbeat").glob("*.py")):
        data[f"tfheartbeat.{source.name}"] = source.read_text()
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def reporting_job(name: str, role: str = "worker") -> dict[str, Any]:
    items = [{"key": "train.py", "path": "train.py"}] + [
        {"key": f"tfheartbeat.{p.name}", "path": f"tfheartbeat/{p.name}"}
        for p in sorted((ROOT / "tfheartbeat").glob("*.py"))]
    container = {"name": "tensorflow", "image": IMAGE, "imagePullPolicy": "IfNotPresent",
                 "command": ["python", "/code/train.py"],
                 "env": [{"name": "PYTHONPATH", "value": "/code"}, {"name": "PYTHONUNBUFFERED", "value": "1"},
                         {"name": "TF_CPP_MIN_LOG_LEVEL", "value": "2"}],
                 "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                 "volumeMounts": [{"name": "code", "mountPath": "/code"}]}
    return {
        "apiVersion": "kubeflow.org/v1", "kind": "TensorFlowJob", "metadata": {"name": name},
        "spec": {"progress": {"periodSeconds": PERIOD}, role: {
            "replicas": 1, "restartPolicy": "Never",
            "template": {"spec": {"terminationGracePeriodSeconds": 2, "containers": [container],
                                  "volumes": [{"name": "code", "configMap": {"name": f"{name}-code", "items": items}}]}},
        }},
    }


def submit(kubectl: Kubectl, name: str, script: str, role: str = "worker") -> None:
    kubectl("apply", "-f", "-", input=yaml.safe_dump_all([code_config_map(f"{name}-code", script),
                                                         reporting_job(name, role)]))


def progress(kubectl: Kubectl, name: str) -> dict[str, Any]:
    return (kubectl.job(name).get("status") or {}).get("progress") or {}
