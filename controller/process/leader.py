"""Leader election on a `coordination.k8s.io/v1` Lease, so only one operator replica reconciles.

The algorithm and default timings are client-go's (`tools/leaderelection`), because operators are
expected to behave like every other controller in the cluster:

* A candidate reads the Lease. If nobody holds it, or the holder has not renewed it for
  `leaseDurationSeconds` *as measured on this process's own monotonic clock* (from the moment the
  record last changed, so clock skew between machines does not matter), the candidate writes
  itself in as holder. Every write carries the `resourceVersion` it read, so two candidates racing
  for the same Lease cannot both win: the loser gets 409 Conflict and tries again later.
* The leader renews every `retry_period`. A renewal round that has not succeeded after
  `renew_deadline` means the lease is lost; since renew_deadline < lease_duration, the leader
  gives up before any standby may take over. Observing another holder also ends leadership at
  once (client-go keeps retrying until the deadline; stopping sooner is never less safe).
* On shutdown the leader releases the Lease (empty holder, 1 s duration) so a standby takes over
  within one retry period instead of waiting out the lease.

The elector is a plain object driven by `run(stop)` on a thread of the caller's choosing. Time is
injected (`clock`, `jitter`) so the unit tests run the whole protocol against a
fake API server without sleeping. It talks to the API through `Kube.request` only, with per-request
timeouts bounded by the renew deadline.
"""

from __future__ import annotations

import math
import random
import socket
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Protocol

import structlog

from kube import ApiError, resource_path
from kube.clock import REAL_CLOCK, Clock
from tfjob_api.timeutil import parse_time

log = structlog.get_logger(__name__)

JITTER_FACTOR = 1.2
"""client-go's acquire loop waits retry_period * (1 + rand * 1.2) between attempts."""

SERVICE_ACCOUNT_NAMESPACE_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"


class LeaseClient(Protocol):
    """The part of `kube.Kube` the elector uses."""

    def request(self, method: str, path: str, *, query: Mapping[str, Any] | None = None, body: Any = None,
                content_type: str | None = None, timeout: float | None = None) -> dict[str, Any] | None: ...


@dataclass(frozen=True)
class LeaderElectionConfig:
    namespace: str
    name: str
    identity: str
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        if not self.namespace or not self.name or not self.identity:
            raise ValueError("leader election needs a namespace, a lease name and an identity")
        if self.retry_period <= 0:
            raise ValueError("retry period must be positive")
        if self.lease_duration <= self.renew_deadline:
            raise ValueError("lease duration must be greater than the renew deadline")
        if self.renew_deadline <= JITTER_FACTOR * self.retry_period:
            raise ValueError(f"renew deadline must be greater than retry period * {JITTER_FACTOR}")

    @property
    def lease_seconds(self) -> int:
        """`spec.leaseDurationSeconds` is a whole number; round up so others never wait too little."""
        return max(1, math.ceil(self.lease_duration))


@dataclass(frozen=True)
class LeaderElectionRecord:
    """The Lease's spec, in client-go's terms."""

    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: datetime | None = None
    renew_time: datetime | None = None
    lease_transitions: int = 0

    @classmethod
    def from_lease(cls, lease: Mapping[str, Any]) -> LeaderElectionRecord:
        spec = lease.get("spec") or {}
        return cls(
            holder_identity=spec.get("holderIdentity") or "",
            lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=parse_micro_time(spec.get("acquireTime")),
            renew_time=parse_micro_time(spec.get("renewTime")),
            lease_transitions=int(spec.get("leaseTransitions") or 0),
        )

    def to_spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "holderIdentity": self.holder_identity,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "leaseTransitions": self.lease_transitions,
        }
        if self.acquire_time is not None:
            spec["acquireTime"] = format_micro_time(self.acquire_time)
        if self.renew_time is not None:
            spec["renewTime"] = format_micro_time(self.renew_time)
        return spec


def format_micro_time(moment: datetime) -> str:
    """A `MicroTime` as the API server writes it: RFC 3339 with microseconds, UTC."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# A MicroTime parses like any RFC 3339 timestamp (fromisoformat keeps the microseconds).
parse_micro_time = parse_time


def default_identity() -> str:
    """Hostname (the pod name in a cluster) plus a random suffix, unique across restarts."""
    return f"{socket.gethostname()}_{uuid.uuid4().hex[:12]}"


def default_namespace(flag: str, environ: Mapping[str, str],
                      service_account_file: str = SERVICE_ACCOUNT_NAMESPACE_FILE) -> str | None:
    """The Lease's namespace: the flag, else $POD_NAMESPACE, else the pod's own; None if unknown."""
    if flag:
        return flag
    if environ.get("POD_NAMESPACE"):
        return environ["POD_NAMESPACE"]
    try:
        with open(service_account_file, encoding="utf-8") as handle:
            return handle.read().strip() or None
    except OSError:
        return None


class LeaderElector:
    def __init__(
        self,
        client: LeaseClient,
        config: LeaderElectionConfig,
        *,
        on_started_leading: Callable[[], None] | None = None,
        on_lost_leadership: Callable[[], None] | None = None,
        on_new_leader: Callable[[str], None] | None = None,
        clock: Clock = REAL_CLOCK,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self.client = client
        self.config = config
        self.path = resource_path("coordination.k8s.io", "v1", "leases", config.namespace, config.name)
        self._on_started_leading = on_started_leading
        self._on_lost_leadership = on_lost_leadership
        self._on_new_leader = on_new_leader
        self._clock = clock
        self._jitter = jitter
        self._lease: dict[str, Any] | None = None  # the last Lease object read or written
        self._observed: LeaderElectionRecord | None = None
        self._observed_at = 0.0  # monotonic time the observed record last changed
        self._last_contact: float | None = None  # monotonic time of the last successful Lease request
        self._renewed_at: float | None = None  # monotonic time this process last wrote the Lease as holder
        self._leading = False
        self._reported_leader = ""

    @property
    def identity(self) -> str:
        return self.config.identity

    def is_leader(self) -> bool:
        """True between acquiring the Lease and losing or releasing it."""
        return self._leading

    def leader(self) -> str:
        """The holder this process last observed ('' if none)."""
        return self._observed.holder_identity if self._observed is not None else ""

    def healthy(self) -> bool:
        """Leading, or standing by with a Lease read that succeeded within one lease duration."""
        if self._leading:
            return True
        if self._last_contact is None:
            return False
        return self._clock.now() - self._last_contact <= self.config.lease_duration

    # ---- the loops -------------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> bool:
        """Acquire the Lease, then renew it until `stop` is set or it is lost.

        Returns False if leadership was lost (the caller must stop reconciling and exit), True if
        `stop` ended it. It does not release the Lease: the caller first stops its workers, then
        calls `release()`, so no reconcile runs after the Lease is handed over.
        """
        if not self._acquire(stop):
            return True
        self._leading = True
        log.info("became leader", lease=f"{self.config.namespace}/{self.config.name}", identity=self.identity)
        if self._on_started_leading is not None:
            self._on_started_leading()
        if self._renew(stop):
            return True
        self._leading = False
        log.error("leader lease lost", lease=f"{self.config.namespace}/{self.config.name}", identity=self.identity,
                  holder=self.leader())
        if self._on_lost_leadership is not None:
            self._on_lost_leadership()
        return False

    def _acquire(self, stop: threading.Event) -> bool:
        log.info("attempting to acquire leader lease", lease=f"{self.config.namespace}/{self.config.name}",
                 identity=self.identity)
        retry = self.config.retry_period
        while not stop.is_set():
            if self.try_acquire_or_renew(self.config.renew_deadline):
                return True
            self._pause(stop, retry + self._jitter() * JITTER_FACTOR * retry)
        return False

    def _renew(self, stop: threading.Event) -> bool:
        """Renew every retry period; False once a round fails for renew_deadline or another holds it."""
        while not stop.is_set():
            deadline = self._clock.now() + self.config.renew_deadline
            renewed = False
            while not stop.is_set():
                remaining = deadline - self._clock.now()
                if remaining <= 0:
                    break
                if self.try_acquire_or_renew(remaining):
                    renewed = True
                    break
                if self._observed is not None and self._observed.holder_identity != self.identity:
                    return False  # someone else holds it now: stop at once
                self._pause(stop, min(self.config.retry_period, max(0.0, deadline - self._clock.now())))
            if stop.is_set():
                return True
            if not renewed:
                return False
            self._pause(stop, self.config.retry_period)
        return True

    def _pause(self, stop: threading.Event, seconds: float) -> None:
        self._clock.sleep(seconds, stop)

    # ---- one attempt -----------------------------------------------------------------------------

    def try_acquire_or_renew(self, timeout: float) -> bool:
        """One client-go `tryAcquireOrRenew`: True if this process holds the Lease afterwards."""
        now = self._clock.wall()
        desired = LeaderElectionRecord(
            holder_identity=self.identity, lease_duration_seconds=self.config.lease_seconds,
            acquire_time=now, renew_time=now, lease_transitions=0,
        )
        # Fast path: a leader whose lease is still valid writes over the Lease it last saw.
        if self._holds_observed() and self._lease_valid() and self._lease is not None and self._observed is not None:
            renewal = replace(desired, acquire_time=self._observed.acquire_time,
                              lease_transitions=self._observed.lease_transitions)
            try:
                self._write(renewal, timeout)
                return True
            except ApiError as error:
                log.debug("optimistic lease renewal failed; reading the lease", error=str(error))

        try:
            lease = self._call("GET", self.path, timeout=timeout)
        except ApiError as error:
            if not error.not_found:
                log.warning("cannot read leader lease", error=str(error))
                return False
            return self._create(desired, timeout)

        self._last_contact = self._clock.now()
        self._lease = lease
        old = LeaderElectionRecord.from_lease(lease)
        self._observe(old)
        if old.holder_identity and self._lease_valid() and not self._holds_observed():
            return False  # held by someone else whose lease has not expired
        if self._holds_observed():
            desired = replace(desired, acquire_time=old.acquire_time, lease_transitions=old.lease_transitions)
        else:
            desired = replace(desired, lease_transitions=old.lease_transitions + 1)
        try:
            self._write(desired, timeout)
        except ApiError as error:
            if error.conflict:
                log.debug("lease changed under us; retrying", error=str(error))
            else:
                log.warning("cannot update leader lease", error=str(error))
            return False
        return True

    def release(self, timeout: float | None = None) -> bool:
        """Give the Lease up (empty holder, 1 s duration) if this process holds it."""
        if not self._holds_observed() or self._observed is None or self._lease is None:
            self._leading = False
            return True
        now = self._clock.wall()
        record = LeaderElectionRecord(holder_identity="", lease_duration_seconds=1, acquire_time=now,
                                      renew_time=now, lease_transitions=self._observed.lease_transitions)
        self._leading = False
        try:
            self._write(record, timeout if timeout is not None else self.config.renew_deadline)
        except ApiError as error:
            log.warning("cannot release leader lease; it expires on its own", error=str(error))
            return False
        log.info("released leader lease", lease=f"{self.config.namespace}/{self.config.name}", identity=self.identity)
        return True

    # ---- helpers ---------------------------------------------------------------------------------

    def _holds_observed(self) -> bool:
        return self._observed is not None and self._observed.holder_identity == self.identity

    def _lease_valid(self) -> bool:
        if self._observed is None:
            return False
        return self._observed_at + self._observed.lease_duration_seconds > self._clock.now()

    def _observe(self, record: LeaderElectionRecord) -> None:
        if record != self._observed:
            self._observed = record
            self._observed_at = self._clock.now()
        holder = record.holder_identity
        if holder and holder != self._reported_leader:
            self._reported_leader = holder
            if holder != self.identity:
                log.info("new leader observed", leader=holder)
            if self._on_new_leader is not None:
                self._on_new_leader(holder)

    def _create(self, record: LeaderElectionRecord, timeout: float) -> bool:
        body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": self.config.name, "namespace": self.config.namespace},
                "spec": record.to_spec()}
        collection = resource_path("coordination.k8s.io", "v1", "leases", self.config.namespace)
        sent_at = self._clock.now()
        try:
            created = self._call("POST", collection, body=body, timeout=timeout)
        except ApiError as error:
            if not error.already_exists:
                log.warning("cannot create leader lease", error=str(error))
            return False
        self._stored(created, record, sent_at)
        return True

    def _write(self, record: LeaderElectionRecord, timeout: float) -> None:
        """PUT the Lease last seen with `record` as its spec; its resourceVersion makes it conditional."""
        assert self._lease is not None
        body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": dict(self._lease.get("metadata") or {}), "spec": record.to_spec()}
        sent_at = self._clock.now()
        self._stored(self._call("PUT", self.path, body=body, timeout=timeout), record, sent_at)

    def _stored(self, lease: dict[str, Any], record: LeaderElectionRecord, sent_at: float) -> None:
        self._last_contact = self._clock.now()
        self._lease = lease
        self._observe(LeaderElectionRecord.from_lease(lease) if lease.get("spec") else record)
        if self._holds_observed():
            # Counted from when the renewal was sent, not answered: a process frozen between the two
            # wakes up holding an answer that is as old as the request (and may have been replaced
            # meanwhile), so the write fence must stay closed until a fresh renewal.
            self._renewed_at = sent_at

    def holds_lease_now(self) -> bool:
        """Leading, and the Lease was renewed within the renew deadline by this process's own clock.

        The write fence: a leader that was frozen (or starved) longer than that may have been
        replaced, so it must not write until a renewal proves otherwise (it exits instead)."""
        return (self._leading and self._renewed_at is not None
                and self._clock.now() - self._renewed_at < self.config.renew_deadline)

    def _call(self, method: str, path: str, *, body: Any = None, timeout: float) -> dict[str, Any]:
        result = self.client.request(method, path, body=body, timeout=max(0.5, timeout))
        if result is None:
            raise ApiError(0, "InvalidResponse", "empty response body", method=method, path=path)
        return result
