"""Leader election against an in-memory Lease API with optimistic concurrency and a fake clock.

The fake server behaves like the API server for one Lease: GET (404 when absent), POST
(AlreadyExists), PUT (409 Conflict unless the body carries the stored resourceVersion). Time only
moves when an elector sleeps or a test advances it, so every timing rule is checked exactly and
no test sleeps.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from controller.process.leader import (
    LeaderElectionConfig,
    LeaderElectionRecord,
    LeaderElector,
    default_identity,
    default_namespace,
    format_micro_time,
    parse_micro_time,
)
from kube import ApiError
from kube.clock import FakeClock

LEASE_PATH = "/apis/coordination.k8s.io/v1/namespaces/ops/leases/tfjob-operator"
START = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)


class FakeLeaseServer:
    def __init__(self) -> None:
        self.lease: dict[str, Any] | None = None
        self.version = 0
        self.failing = False
        self.requests: list[tuple[str, float | None]] = []
        self.before: Callable[[str], None] | None = None  # runs before each request; clears itself

    def request(self, method: str, path: str, *, query: Any = None, body: Any = None,
                content_type: str | None = None, timeout: float | None = None) -> dict[str, Any] | None:
        self.requests.append((method, timeout))
        if self.before is not None:
            self.before(method)
        if self.failing:
            raise ApiError(500, "InternalError", "etcd is down", method=method, path=path)
        if method == "GET":
            assert path == LEASE_PATH
            if self.lease is None:
                raise ApiError(404, "NotFound", "lease not found", method=method, path=path)
            return copy.deepcopy(self.lease)
        if method == "POST":
            assert path == LEASE_PATH.rsplit("/", 1)[0]
            if self.lease is not None:
                raise ApiError(409, "AlreadyExists", "lease exists", method=method, path=path)
            return self._store(body)
        if method == "PUT":
            assert path == LEASE_PATH
            assert self.lease is not None
            if body["metadata"].get("resourceVersion") != self.lease["metadata"]["resourceVersion"]:
                raise ApiError(409, "Conflict", "the object has been modified", method=method, path=path)
            return self._store(body)
        raise AssertionError(f"unexpected {method}")

    def _store(self, body: dict[str, Any]) -> dict[str, Any]:
        self.version += 1
        stored = copy.deepcopy(body)
        stored["metadata"]["resourceVersion"] = str(self.version)
        self.lease = stored
        return copy.deepcopy(stored)

    def spec(self) -> dict[str, Any]:
        assert self.lease is not None
        return self.lease["spec"]

    def overwrite_holder(self, holder: str, when: datetime) -> None:
        """Another process takes the Lease (e.g. after this one stalled)."""
        assert self.lease is not None
        spec = dict(self.lease["spec"], holderIdentity=holder, renewTime=format_micro_time(when))
        self._store({**self.lease, "spec": spec})


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(start=1000.0, wall=START)


@pytest.fixture
def server() -> FakeLeaseServer:
    return FakeLeaseServer()


def elector(server: FakeLeaseServer, clock: FakeClock, identity: str, **kwargs: Any) -> LeaderElector:
    timings = {k: kwargs.pop(k) for k in ("lease_duration", "renew_deadline", "retry_period") if k in kwargs}
    config = LeaderElectionConfig(namespace="ops", name="tfjob-operator", identity=identity, **timings)
    return LeaderElector(server, config, clock=clock,
                         jitter=lambda: 0.0, **kwargs)


# ---- acquiring -----------------------------------------------------------------------------------


def test_first_candidate_creates_the_lease_with_client_go_fields(server: FakeLeaseServer, clock: FakeClock) -> None:
    a = elector(server, clock, "a")

    assert a.try_acquire_or_renew(10.0)

    assert server.spec() == {
        "holderIdentity": "a", "leaseDurationSeconds": 15, "leaseTransitions": 0,
        "acquireTime": "2026-11-29T12:00:00.000000Z", "renewTime": "2026-11-29T12:00:00.000000Z",
    }
    assert a.leader() == "a"


def test_second_candidate_cannot_take_a_fresh_lease(server: FakeLeaseServer, clock: FakeClock) -> None:
    a, b = elector(server, clock, "a"), elector(server, clock, "b")
    assert a.try_acquire_or_renew(10.0)

    clock.step(5)
    assert not b.try_acquire_or_renew(10.0)

    assert server.spec()["holderIdentity"] == "a"
    assert b.leader() == "a"


def test_standby_takes_over_only_after_a_full_lease_without_renewal(server: FakeLeaseServer, clock: FakeClock) -> None:
    a, b = elector(server, clock, "a"), elector(server, clock, "b")
    assert a.try_acquire_or_renew(10.0)
    assert not b.try_acquire_or_renew(10.0)  # b observes a's record now

    clock.step(14.9)
    assert not b.try_acquire_or_renew(10.0)
    clock.step(0.2)
    assert b.try_acquire_or_renew(10.0)

    spec = server.spec()
    assert spec["holderIdentity"] == "b"
    assert spec["leaseTransitions"] == 1
    assert parse_micro_time(spec["acquireTime"]) == clock.wall()


def test_expiry_is_timed_from_local_observation_not_the_remote_renew_time(
        server: FakeLeaseServer, clock: FakeClock) -> None:
    # The holder's clock is an hour behind: its renewTime looks ancient, but it renews.
    a = elector(server, clock, "a")
    assert a.try_acquire_or_renew(10.0)
    server.overwrite_holder("a", START - timedelta(hours=1))
    b = elector(server, clock, "b")

    assert not b.try_acquire_or_renew(10.0)


def test_an_empty_holder_is_taken_at_once(server: FakeLeaseServer, clock: FakeClock) -> None:
    a, b = elector(server, clock, "a"), elector(server, clock, "b")
    assert a.try_acquire_or_renew(10.0)
    assert not b.try_acquire_or_renew(10.0)

    assert a.release()
    assert server.spec()["holderIdentity"] == ""
    assert server.spec()["leaseDurationSeconds"] == 1
    assert b.try_acquire_or_renew(10.0)
    assert server.spec()["holderIdentity"] == "b"
    assert server.spec()["leaseTransitions"] == 1


def test_renewal_moves_renew_time_and_keeps_acquire_time_and_transitions(
        server: FakeLeaseServer, clock: FakeClock) -> None:
    a = elector(server, clock, "a")
    assert a.try_acquire_or_renew(10.0)
    first = dict(server.spec())

    clock.step(2)
    assert a.try_acquire_or_renew(10.0)

    spec = server.spec()
    assert spec["acquireTime"] == first["acquireTime"]
    assert spec["leaseTransitions"] == first["leaseTransitions"]
    assert parse_micro_time(spec["renewTime"]) == START + timedelta(seconds=2)


def test_a_valid_leader_renews_with_one_write_and_no_read(server: FakeLeaseServer, clock: FakeClock) -> None:
    a = elector(server, clock, "a")
    assert a.try_acquire_or_renew(10.0)
    server.requests.clear()

    clock.step(2)
    assert a.try_acquire_or_renew(10.0)

    assert [method for method, _ in server.requests] == ["PUT"]


def test_racing_candidates_cannot_both_win_an_expired_lease(server: FakeLeaseServer, clock: FakeClock) -> None:
    old = elector(server, clock, "old")
    assert old.try_acquire_or_renew(10.0)
    a, b = elector(server, clock, "a"), elector(server, clock, "b")
    assert not a.try_acquire_or_renew(10.0)
    assert not b.try_acquire_or_renew(10.0)
    clock.step(16)

    # b's whole attempt runs between a's read and a's write; a's write carries a stale resourceVersion.
    def b_goes_first(method: str) -> None:
        if method == "GET":
            server.before = None
            assert b.try_acquire_or_renew(10.0)

    server.before = b_goes_first
    assert not a.try_acquire_or_renew(10.0)

    assert server.spec()["holderIdentity"] == "b"
    assert server.spec()["leaseTransitions"] == 1


def test_racing_creators_cannot_both_win(server: FakeLeaseServer, clock: FakeClock) -> None:
    a, b = elector(server, clock, "a"), elector(server, clock, "b")

    def b_creates_first(method: str) -> None:
        if method == "POST":
            server.before = None
            assert b.try_acquire_or_renew(10.0)

    server.before = b_creates_first
    assert not a.try_acquire_or_renew(10.0)

    assert server.spec()["holderIdentity"] == "b"


def test_release_by_a_non_holder_writes_nothing(server: FakeLeaseServer, clock: FakeClock) -> None:
    a, b = elector(server, clock, "a"), elector(server, clock, "b")
    assert a.try_acquire_or_renew(10.0)
    assert not b.try_acquire_or_renew(10.0)
    server.requests.clear()

    assert b.release()

    assert server.requests == []
    assert server.spec()["holderIdentity"] == "a"


# ---- the run loop ----------------------------------------------------------------------------------


def test_run_acquires_calls_back_and_returns_true_when_stopped(server: FakeLeaseServer, clock: FakeClock) -> None:
    stop = threading.Event()
    started: list[float] = []
    a = elector(server, clock, "a", on_started_leading=lambda: started.append(clock.now()))
    clock.on_sleep = lambda: stop.set() if len(clock.sleeps) >= 3 else None

    assert a.run(stop) is True

    assert started == [1000.0]
    assert a.is_leader()
    assert clock.sleeps == [2.0, 2.0, 2.0]  # renewed every retry period
    assert a.release()
    assert not a.is_leader()
    assert server.spec()["holderIdentity"] == ""


def test_acquire_waits_a_jittered_retry_period_between_attempts(server: FakeLeaseServer, clock: FakeClock) -> None:
    holder = elector(server, clock, "holder")
    assert holder.try_acquire_or_renew(10.0)
    stop = threading.Event()
    config = LeaderElectionConfig(namespace="ops", name="tfjob-operator", identity="b")
    b = LeaderElector(server, config, clock=clock,
                      jitter=lambda: 0.5, on_started_leading=stop.set)

    b.run(stop)

    assert clock.sleeps and all(s == pytest.approx(2.0 * (1 + 0.5 * 1.2)) for s in clock.sleeps)
    assert server.spec()["holderIdentity"] == "b"
    # Took over within one jittered retry after the holder's lease ran out (observed at t=1000).
    assert 1015.0 <= clock.now() <= 1015.0 + 2.0 * 2.2


def test_run_gives_up_after_the_renew_deadline_and_before_the_lease_expires(
        server: FakeLeaseServer, clock: FakeClock) -> None:
    lost: list[float] = []
    a = elector(server, clock, "a", on_lost_leadership=lambda: lost.append(clock.now()))
    last_renewal: list[float] = []

    def fail_after_two_renewals() -> None:
        if len(clock.sleeps) == 2:
            last_renewal.append(server.version)
            server.failing = True

    clock.on_sleep = fail_after_two_renewals

    assert a.run(threading.Event()) is False

    assert not a.is_leader()
    assert len(lost) == 1
    # The last successful write happened at t=1002 (acquire at 1000, renew at 1002, then 500s).
    # Failing rounds start at 1004; giving up at 1004 + 10 is before others may take over at 1002 + 15.
    assert lost[0] == pytest.approx(1014.0)
    assert lost[0] < 1002.0 + 15.0
    assert server.spec()["holderIdentity"] == "a"


def test_run_stops_leading_at_once_when_another_holder_appears(server: FakeLeaseServer, clock: FakeClock) -> None:
    lost: list[float] = []
    a = elector(server, clock, "a", on_lost_leadership=lambda: lost.append(clock.now()))
    clock.on_sleep = lambda: server.overwrite_holder("intruder", clock.wall()) if len(clock.sleeps) == 1 else None

    assert a.run(threading.Event()) is False

    assert lost == [1002.0]  # the first renewal after the takeover, not the renew deadline later
    assert a.leader() == "intruder"


def test_every_request_is_bounded_by_the_renew_deadline(server: FakeLeaseServer, clock: FakeClock) -> None:
    a = elector(server, clock, "a", renew_deadline=3.0, lease_duration=4.0, retry_period=0.5)
    clock.on_sleep = lambda: setattr(server, "failing", True)

    assert a.run(threading.Event()) is False

    timeouts = [t for _, t in server.requests]
    assert timeouts and all(t is not None and 0 < t <= 3.0 for t in timeouts)


def test_new_leader_callback_reports_each_holder_once(server: FakeLeaseServer, clock: FakeClock) -> None:
    seen: list[str] = []
    a = elector(server, clock, "a")
    b = elector(server, clock, "b", on_new_leader=seen.append)
    assert a.try_acquire_or_renew(10.0)
    assert not b.try_acquire_or_renew(10.0)
    clock.step(1)
    assert a.try_acquire_or_renew(10.0)
    assert not b.try_acquire_or_renew(10.0)
    clock.step(16)
    assert b.try_acquire_or_renew(10.0)

    assert seen == ["a", "b"]


# ---- health --------------------------------------------------------------------------------------


def test_standby_is_healthy_only_while_it_can_read_the_lease(server: FakeLeaseServer, clock: FakeClock) -> None:
    a, b = elector(server, clock, "a"), elector(server, clock, "b")
    assert not b.healthy()  # has not talked to the API yet
    assert a.try_acquire_or_renew(10.0)
    assert not b.try_acquire_or_renew(10.0)
    assert b.healthy()

    server.failing = True
    clock.step(10)
    assert not b.try_acquire_or_renew(10.0)
    assert b.healthy()
    clock.step(6)
    assert not b.healthy()


# ---- configuration and helpers -------------------------------------------------------------------


@pytest.mark.parametrize(("lease", "renew", "retry"), [
    (10.0, 10.0, 2.0),   # renew deadline must be shorter than the lease
    (15.0, 2.4, 2.0),    # renew deadline must exceed retry * 1.2
    (15.0, 10.0, 0.0),   # retry must be positive
])
def test_config_rejects_timings_client_go_rejects(lease: float, renew: float, retry: float) -> None:
    with pytest.raises(ValueError):
        LeaderElectionConfig(namespace="ops", name="l", identity="a", lease_duration=lease, renew_deadline=renew,
                             retry_period=retry)


def test_default_timings_are_client_go_s() -> None:
    config = LeaderElectionConfig(namespace="ops", name="l", identity="a")
    assert (config.lease_duration, config.renew_deadline, config.retry_period) == (15.0, 10.0, 2.0)


def test_fractional_lease_duration_is_rounded_up_in_the_lease() -> None:
    config = LeaderElectionConfig(namespace="ops", name="l", identity="a", lease_duration=4.2, renew_deadline=3,
                                  retry_period=0.5)
    assert config.lease_seconds == 5


def test_records_round_trip_through_the_lease_spec() -> None:
    record = LeaderElectionRecord("a", 15, START, START + timedelta(microseconds=250), 3)
    assert LeaderElectionRecord.from_lease({"spec": record.to_spec()}) == record
    assert record.to_spec()["renewTime"] == "2026-11-29T12:00:00.000250Z"


def test_identity_is_hostname_plus_a_random_suffix() -> None:
    first, second = default_identity(), default_identity()
    assert first != second
    assert first.rsplit("_", 1)[0] == second.rsplit("_", 1)[0]


def test_lease_namespace_comes_from_flag_then_env_then_service_account(tmp_path: Any) -> None:
    sa_file = tmp_path / "namespace"
    sa_file.write_text("tfjob-system\n")
    missing = str(tmp_path / "absent")

    assert default_namespace("flag-ns", {"POD_NAMESPACE": "env-ns"}, str(sa_file)) == "flag-ns"
    assert default_namespace("", {"POD_NAMESPACE": "env-ns"}, str(sa_file)) == "env-ns"
    assert default_namespace("", {}, str(sa_file)) == "tfjob-system"
    assert default_namespace("", {}, missing) is None


def test_write_fence_closes_once_the_lease_has_not_been_renewed_within_the_deadline(
        server: FakeLeaseServer, clock: FakeClock) -> None:
    leader = elector(server, clock, "a")
    assert leader.try_acquire_or_renew(5.0)
    leader._leading = True  # what run() sets on acquiring
    assert leader.holds_lease_now()
    clock.step(leader.config.renew_deadline + 0.1)  # frozen (SIGSTOP) past the renew deadline
    assert not leader.holds_lease_now()
    assert leader.try_acquire_or_renew(5.0)  # a renewal reopens it
    assert leader.holds_lease_now()


def test_a_renewal_answered_after_a_freeze_does_not_reopen_the_write_fence(
        server: FakeLeaseServer, clock: FakeClock) -> None:
    leader = elector(server, clock, "a")
    assert leader.try_acquire_or_renew(5.0)
    leader._leading = True
    # Frozen (SIGSTOP) after sending a renewal and before reading its answer, past the renew deadline.
    server.before = lambda _method: clock.step(leader.config.renew_deadline + 0.1)
    assert leader.try_acquire_or_renew(5.0)
    assert not leader.holds_lease_now()
