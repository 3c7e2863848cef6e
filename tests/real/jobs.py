"""Helpers of the real-node tests: apply an example as a user would, with the storage it names, and
read a job's expected task slots from its spec."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.real.kubectl import Kubectl

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "manifests" / "examples"
STORAGE = EXAMPLES / "storage"
ROLES = ("chief", "ps", "worker", "evaluator")


def documents(example: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((EXAMPLES / example).read_text()) if d]


def job_of(example: str) -> dict[str, Any]:
    return next(d for d in documents(example) if d["kind"] == "TensorFlowJob")


def claims_of(job: dict[str, Any]) -> set[str]:
    """The PersistentVolumeClaims the job's pods mount."""
    names = set()
    for role in ROLES:
        spec = ((job["spec"].get(role) or {}).get("template") or {}).get("spec") or {}
        for volume in spec.get("volumes") or []:
            if "persistentVolumeClaim" in volume:
                names.add(volume["persistentVolumeClaim"]["claimName"])
    return names


def slots_of(job: dict[str, Any]) -> list[tuple[str, int]]:
    """(role, index) of every pod the job has (replicas default to 1)."""
    return [(role, index) for role in ROLES if role in job["spec"]
            for index in range(int(job["spec"][role].get("replicas", 1)))]


def provide_storage(kubectl: Kubectl, job: dict[str, Any]) -> None:
    """The examples' claim and, since the local cluster has no provisioner, a hostPath volume bound to
    it: the example's own PersistentVolume under a name of this namespace (a volume binds one claim
    for life, and every test has a namespace of its own)."""
    if not claims_of(job):
        return
    assert claims_of(job) == {"mnist-data"}, f"an example mounts a claim the storage folder lacks: {claims_of(job)}"
    kubectl("apply", "-f", str(STORAGE / "mnist-data-pvc.yaml"))
    volume = yaml.safe_load((STORAGE / "mnist-data-local-pv.yaml").read_text())
    volume["metadata"]["name"] = f"{kubectl.namespace}-mnist-data"
    volume["spec"]["hostPath"]["path"] = f"/tmp/tfjob-real-tests/{kubectl.namespace}"
    volume["spec"]["claimRef"] = {"namespace": kubectl.namespace, "name": "mnist-data"}
    kubectl("apply", "-f", "-", input=yaml.safe_dump(volume))


def apply_example(kubectl: Kubectl, example: str) -> dict[str, Any]:
    """`kubectl apply -f` the example unchanged (after its storage); return its job document."""
    job = job_of(example)
    provide_storage(kubectl, job)
    kubectl("apply", "-f", str(EXAMPLES / example))
    return job
