"""Benchmark: what the informer cache costs per pod, and how fast watch events are decoded.

Two questions, both answered against a baseline measured in the same run:

1. **Memory per cached pod** (tracemalloc): pods decoded one watch line at a time (as they arrive)
   and kept in an `informers.Store`, slimmed (managedFields dropped, the default) versus unslimmed,
   and, for scale, the same pods kept as the typed client's `V1Pod` models.
2. **Events per second**: decoding a watch event as raw JSON (`json.loads`, what the informers do),
   the whole informer path (decode + slim + store + indexers + a handler that enqueues a key), and
   decoding into client models the way `kubernetes.watch.Watch` does (`json.loads`, then
   `json.dumps` of the object and `ApiClient.deserialize` into `V1Pod`, through
   `bench._typed_models.decode_as_model`).

The pods are generated locally and look like the TF worker pods the controller creates, as the API
server returns them from a KWOK node: labels, owner reference, TF_CONFIG, the service-account token
volume, five conditions, a container status and two managedFields entries (controller and kubelet).

Run: `python -m bench.bench_informers`. Prints a table and writes `bench/results/informers.json`.
"""

from __future__ import annotations

import gc
import json
import platform
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench._typed_models import decode_as_model
from controller.job import podcache
from informers.informer import SharedInformer
from informers.store import Store
from informers.testing import FakeListerWatcher

PODS = 2_000
EVENTS = 3_000
EVENT_PODS = 300  # the events are updates of this many pods: a steady state, not a growing cache
REPEATS = 3
RESULTS = Path(__file__).resolve().parent / "results" / "informers.json"

JOB_LABEL = "tensorflowjob.kubeflow.org"


def _fields(*names: str, **nested: dict[str, Any]) -> dict[str, Any]:
    """A managedFields `fieldsV1` set: `{".": {}, "f:a": {}, ...}` plus nested sets."""
    return {".": {}, **{f"f:{n}": {} for n in names}, **nested}


def _managed_fields(labels: dict[str, str], job_uid: str, when: str) -> list[dict[str, Any]]:
    """What the controller (spec, metadata) and KWOK (status) own, as the API server records it."""
    container = _fields(
        "args", "command", "image", "imagePullPolicy", "name", "terminationMessagePath", "terminationMessagePolicy",
        **{
            "f:env": _fields(**{'k:{"name":"TF_CONFIG"}': _fields("name", "value")}),
            "f:ports": _fields(
                **{'k:{"containerPort":2222,"protocol":"TCP"}': _fields("containerPort", "name", "protocol")}
            ),
            "f:resources": _fields(**{"f:limits": _fields("cpu", "memory"), "f:requests": _fields("cpu", "memory")}),
        },
    )
    spec = {
        "f:containers": {'k:{"name":"tensorflow"}': container},
        **{f"f:{n}": {} for n in ("dnsPolicy", "enableServiceLinks", "hostname", "restartPolicy", "schedulerName",
                                   "securityContext", "subdomain", "terminationGracePeriodSeconds")},
    }
    metadata = {
        "f:annotations": _fields(f"{JOB_LABEL}/cluster-spec-hash"),
        "f:labels": _fields(*labels),
        "f:ownerReferences": {".": {}, f'k:{{"uid":"{job_uid}"}}': {}},
    }
    condition_types = ("ContainersReady", "Initialized", "Ready")
    status = {
        "f:conditions": {f'k:{{"type":"{t}"}}': _fields("lastProbeTime", "lastTransitionTime", "status", "type")
                         for t in condition_types},
        "f:podIPs": _fields(**{'k:{"ip":"10.0.0.1"}': _fields("ip")}),
        **{f"f:{n}": {} for n in ("containerStatuses", "hostIP", "hostIPs", "phase", "podIP", "startTime")},
    }
    entry = {"operation": "Update", "apiVersion": "v1", "time": when, "fieldsType": "FieldsV1"}
    return [
        {"manager": "tfjob-controller", **entry, "fieldsV1": {"f:metadata": metadata, "f:spec": spec}},
        {"manager": "kwok", **entry, "subresource": "status", "fieldsV1": {"f:status": status}},
    ]


def _spec(name: str, job: str, tf_config: str, node: str) -> dict[str, Any]:
    token_volume = "kube-api-access-abcde"
    sources = [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace",
                                    "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
    ]
    container = {
        "name": "tensorflow",
        "image": "tensorflow/tensorflow:2.21.0",
        "command": ["python", "/opt/mnist/train.py"],
        "args": ["--epochs=10", "--batch-size=256"],
        "ports": [{"name": "tfjob-port", "containerPort": 2222, "protocol": "TCP"}],
        "env": [{"name": "TF_CONFIG", "value": tf_config}],
        "resources": {"limits": {"cpu": "4", "memory": "16Gi"}, "requests": {"cpu": "4", "memory": "16Gi"}},
        "volumeMounts": [{"name": token_volume, "readOnly": True,
                          "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}],
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "imagePullPolicy": "IfNotPresent",
    }
    tolerations = [
        {"key": f"node.kubernetes.io/{key}", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
        for key in ("not-ready", "unreachable")
    ]
    return {
        "volumes": [{"name": token_volume, "projected": {"defaultMode": 420, "sources": sources}}],
        "containers": [container],
        "restartPolicy": "OnFailure",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "serviceAccountName": "default",
        "serviceAccount": "default",
        "nodeName": node,
        "securityContext": {},
        "hostname": name,
        "subdomain": job,
        "schedulerName": "default-scheduler",
        "tolerations": tolerations,
        "priority": 0,
        "enableServiceLinks": True,
        "preemptionPolicy": "PreemptLowerPriority",
    }


def _status(index: int, when: str) -> dict[str, Any]:
    pod_ip = f"10.244.{index // 250}.{index % 250}"
    conditions = [
        {"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": when}
        for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")
    ]
    container_status = {
        "name": "tensorflow",
        "state": {"running": {"startedAt": when}},
        "lastState": {},
        "ready": True,
        "restartCount": 0,
        "image": "tensorflow/tensorflow:2.21.0",
        "imageID": "docker.io/tensorflow/tensorflow@sha256:" + "ab" * 32,
        "containerID": f"containerd://{index:064x}",
        "started": True,
    }
    return {
        "phase": "Running",
        "conditions": conditions,
        "hostIP": "10.0.0.1",
        "hostIPs": [{"ip": "10.0.0.1"}],
        "podIP": pod_ip,
        "podIPs": [{"ip": pod_ip}],
        "startTime": when,
        "qosClass": "Guaranteed",
        "containerStatuses": [container_status],
    }


def make_pod(index: int, *, workers: int = 8, ps: int = 2) -> dict[str, Any]:
    """One realistic TF worker pod as the API server returns it."""
    job, ns = f"mnist-{index // workers}", "team-a"
    name = f"{job}-worker-{index % workers}"
    job_uid = f"6f1d2c3b-0000-4000-8000-{index // workers:012d}"
    when = "2026-11-29T14:00:00Z"
    cluster = {
        "ps": [f"{job}-ps-{i}.{job}.{ns}.svc:2222" for i in range(ps)],
        "worker": [f"{job}-worker-{i}.{job}.{ns}.svc:2222" for i in range(workers)],
    }
    task = {"type": "worker", "index": index % workers}
    tf_config = json.dumps({"cluster": cluster, "task": task, "environment": "cloud"})
    labels = {
        f"{JOB_LABEL}/job-name": job,
        f"{JOB_LABEL}/replica-type": "worker",
        f"{JOB_LABEL}/replica-index": str(index % workers),
        "app": "mnist",
    }
    owner = {"apiVersion": "kubeflow.org/v1", "kind": "TensorFlowJob", "name": job, "uid": job_uid}
    metadata = {
        "name": name,
        "namespace": ns,
        "uid": f"0a1b2c3d-{index:04d}-4e5f-9a8b-{index:012d}",
        "resourceVersion": str(100_000 + index),
        "creationTimestamp": when,
        "labels": labels,
        "annotations": {f"{JOB_LABEL}/cluster-spec-hash": f"{index:016x}"},
        "ownerReferences": [{**owner, "controller": True, "blockOwnerDeletion": True}],
        "managedFields": _managed_fields(labels, job_uid, when),
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": _spec(name, job, tf_config, f"kwok-node-{index % 4}"),
        "status": _status(index, when),
    }


def watch_lines(count: int, *, distinct: int | None = None) -> list[bytes]:
    """`count` MODIFIED events, over `distinct` pods (each pod changes again and again) or all different."""
    lines = []
    for i in range(count):
        obj = make_pod(i % (distinct or count))
        obj["metadata"]["resourceVersion"] = str(200_000 + i)
        lines.append(json.dumps({"type": "MODIFIED", "object": obj}).encode())
    return lines


# --- memory ------------------------------------------------------------------------------------------


def traced_bytes_per_item(build: Callable[[], Any], count: int) -> float:
    """Bytes still allocated by `build()` (which keeps `count` items) divided by `count`."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = build()
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    del kept
    return (after - before) / count


def store_of(lines: list[bytes], *, slimmed: bool, projected: bool = False) -> Store:
    store = Store(transform=podcache.project) if projected else Store(transform=None) if not slimmed else Store()
    for line in lines:
        store.add(json.loads(line)["object"])
    return store


def models_of(lines: list[bytes]) -> list[Any]:
    return [decode_as_model(json.dumps(json.loads(line)["object"]), "V1Pod") for line in lines]


# --- throughput --------------------------------------------------------------------------------------


def best_rate(run: Callable[[], None], count: int) -> float:
    """Events per second of the fastest of REPEATS runs."""
    best = float("inf")
    for _ in range(REPEATS):
        gc.collect()
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return count / best


def decode_raw(lines: list[bytes]) -> None:
    for line in lines:
        json.loads(line)


def decode_models(lines: list[bytes]) -> None:
    # What kubernetes.watch.Watch.unmarshal_event does for every event.
    for line in lines:
        event = json.loads(line)
        decode_as_model(json.dumps(event["object"]), "V1Pod")


def through_informer(lines: list[bytes]) -> None:
    informer = SharedInformer(FakeListerWatcher(), name="pods")
    queued: set[str] = set()
    informer.add_event_handler(on_update=lambda old, new: queued.add(new["metadata"]["name"]),
                               on_add=lambda obj: queued.add(obj["metadata"]["name"]))
    for line in lines:
        event = json.loads(line)
        informer.on_event(event["type"], event["object"])


# --- report ------------------------------------------------------------------------------------------


def measure() -> dict[str, Any]:
    pod_lines = watch_lines(PODS)
    event_lines = watch_lines(EVENTS, distinct=EVENT_PODS)
    raw_json_bytes = sum(len(line) for line in pod_lines) / PODS
    unslimmed = traced_bytes_per_item(lambda: store_of(pod_lines, slimmed=False), PODS)
    slimmed = traced_bytes_per_item(lambda: store_of(pod_lines, slimmed=True), PODS)
    projected = traced_bytes_per_item(lambda: store_of(pod_lines, slimmed=True, projected=True), PODS)
    models = traced_bytes_per_item(lambda: models_of(pod_lines), PODS)
    raw_rate = best_rate(lambda: decode_raw(event_lines), EVENTS)
    informer_rate = best_rate(lambda: through_informer(event_lines), EVENTS)
    model_rate = best_rate(lambda: decode_models(event_lines), EVENTS)
    return {
        "benchmark": "informers",
        "python": platform.python_version(),
        "machine": platform.machine(),
        "pods": PODS,
        "events": EVENTS,
        "event_pods": EVENT_PODS,
        "pod_json_bytes": round(raw_json_bytes),
        "memory_bytes_per_pod": {
            "store_unslimmed": round(unslimmed),
            "store_slimmed": round(slimmed),
            "store_projected_by_the_controller": round(projected),
            "client_models": round(models),
        },
        "slimmed_vs_unslimmed": round(slimmed / unslimmed, 3),
        "projected_vs_unslimmed": round(projected / unslimmed, 3),
        "events_per_s": {
            "raw_json_decode": round(raw_rate),
            "raw_json_through_informer": round(informer_rate),
            "client_models_decode": round(model_rate),
        },
        "raw_vs_models_speedup": round(raw_rate / model_rate, 1),
        "informer_vs_models_speedup": round(informer_rate / model_rate, 1),
    }


def main() -> None:
    result = measure()
    memory, rates = result["memory_bytes_per_pod"], result["events_per_s"]
    print(f"pods: {result['pods']} (JSON {result['pod_json_bytes']} B each), "
          f"events: {result['events']} (updates of {result['event_pods']} pods)")
    print(f"{'memory per cached pod':<36} {'bytes':>10} {'vs unslimmed':>13}")
    for label, key in (("store, unslimmed", "store_unslimmed"), ("store, slimmed (default)", "store_slimmed"),
                       ("store, projected (controller's pods)", "store_projected_by_the_controller"),
                       ("client V1Pod models", "client_models")):
        print(f"{label:<36} {memory[key]:>10} {memory[key] / memory['store_unslimmed']:>13.2f}")
    print(f"{'watch events decoded':<36} {'events/s':>10} {'vs models':>13}")
    for label, key in (("raw JSON (json.loads)", "raw_json_decode"),
                       ("raw JSON through informer + store", "raw_json_through_informer"),
                       ("client models (V1Pod)", "client_models_decode")):
        print(f"{label:<36} {rates[key]:>10} {rates[key] / rates['client_models_decode']:>13.1f}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(f"written {RESULTS.relative_to(Path.cwd()) if RESULTS.is_relative_to(Path.cwd()) else RESULTS}")


if __name__ == "__main__":
    main()
