"""Expectations: raised before writes, lowered by informer events, expiring after a TTL."""

from __future__ import annotations

from controller.expectations import Expectations
from kube.clock import FakeClock


def test_fresh_key_is_satisfied() -> None:
    assert Expectations().satisfied("ns/j")


def test_expected_creation_is_pending_until_observed() -> None:
    expectations = Expectations()
    expectations.expect_creations("ns/j", ["j-worker-0", "j-worker-1"])
    assert expectations.pending_creations("ns/j") == {"j-worker-0", "j-worker-1"}
    expectations.creation_observed("ns/j", "j-worker-0")
    assert not expectations.satisfied("ns/j")
    expectations.creation_observed("ns/j", "j-worker-1")
    assert expectations.satisfied("ns/j")


def test_duplicate_observation_is_harmless() -> None:
    expectations = Expectations()
    expectations.expect_creations("ns/j", ["a"])
    expectations.creation_observed("ns/j", "a")
    expectations.creation_observed("ns/j", "a")
    assert expectations.satisfied("ns/j")


def test_expected_deletion_is_tracked_by_uid() -> None:
    expectations = Expectations()
    expectations.expect_deletions("ns/j", ["uid-1"])
    assert expectations.pending_deletions("ns/j") == {"uid-1"}
    expectations.deletion_observed("ns/j", "uid-1")
    assert expectations.satisfied("ns/j")


def test_expectations_expire_after_the_ttl() -> None:
    clock = FakeClock()
    expectations = Expectations(ttl=300, clock=clock)
    expectations.expect_creations("ns/j", ["a"])
    expectations.expect_deletions("ns/j", ["u"])
    clock.step(299.9)
    assert not expectations.satisfied("ns/j")
    clock.step(0.1)
    assert expectations.satisfied("ns/j")


def test_keys_are_independent_and_forget_clears_one() -> None:
    expectations = Expectations()
    expectations.expect_creations("ns/a", ["a-worker-0"])
    expectations.expect_creations("ns/b", ["b-worker-0"])
    expectations.forget("ns/a")
    assert expectations.satisfied("ns/a")
    assert not expectations.satisfied("ns/b")
