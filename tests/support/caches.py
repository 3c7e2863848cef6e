"""A stand-in for the controller's informer caches, for reconciler tests: one job, its pods, its
Service, its NetworkPolicy, its PodGroup and its (scheduling.k8s.io) Workload, as plain dicts (the
reconciler's `Caches` protocol)."""

from __future__ import annotations

from typing import Any


class FakeCaches:
    def __init__(self, job: dict[str, Any] | None, pods: list[dict[str, Any]] | None = None,
                 service: dict[str, Any] | None = None, policy: dict[str, Any] | None = None,
                 key: str | None = None, pod_group: dict[str, Any] | None = None,
                 workload: dict[str, Any] | None = None, events: list[dict[str, Any]] | None = None) -> None:
        """With `key`, asking for any other job key fails the test."""
        self.job, self.pods, self.service, self.policy, self.key = job, pods or [], service, policy, key
        self.pod_group, self.workload, self.events = pod_group, workload, events or []
        self.pod_group_reads = self.workload_reads = 0

    def get_job(self, key: str) -> dict[str, Any] | None:
        assert self.key is None or key == self.key, f"asked for {key}, not {self.key}"
        return self.job

    def pods_of(self, job_uid: str) -> list[dict[str, Any]]:
        return self.pods

    def get_service(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.service

    def node_ready(self, name: str) -> bool | None:
        return True

    def get_owned(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        if kind == "NetworkPolicy":
            return self.get_network_policy(namespace, name)
        if kind == "PodGroup":
            return self.get_pod_group(namespace, name)
        if kind == "Workload":
            self.workload_reads += 1
            return self.workload if self.workload and self.workload["metadata"]["name"] == name else None
        raise AssertionError(f"no {kind} in these caches")

    def pod_group_events(self, pod_group: dict[str, Any] | None) -> list[dict[str, Any]]:
        return [e for e in self.events if pod_group and e["involvedObject"]["uid"] == pod_group["metadata"]["uid"]]

    def get_network_policy(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.policy if self.policy and self.policy["metadata"]["name"] == name else None

    def get_pod_group(self, namespace: str, name: str) -> dict[str, Any] | None:
        self.pod_group_reads += 1
        return self.pod_group if self.pod_group and self.pod_group["metadata"]["name"] == name else None
