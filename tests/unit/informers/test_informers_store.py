"""The store: keys, reads and writes, indexers, relist replace with tombstones, slimming, read-only checks."""

from __future__ import annotations

import copy
import threading

import pytest

from informers.store import (
    CONTROLLER_UID_INDEX,
    LAST_APPLIED_ANNOTATION,
    NAMESPACE_INDEX,
    CacheMutationError,
    DeletedFinalStateUnknown,
    Store,
    controller_of,
    object_key,
    share_strings,
    slim,
    slim_and_share,
    split_key,
)
from informers.testing import pod


def node(name: str, rv: str = "1") -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "resourceVersion": rv}}


# --- keys --------------------------------------------------------------------------------------------


def test_namespaced_objects_are_keyed_namespace_slash_name() -> None:
    assert object_key(pod("p", "1", namespace="team-a")) == "team-a/p"


def test_cluster_scoped_objects_are_keyed_by_name() -> None:
    assert object_key(node("n1")) == "n1"


def test_split_key_inverts_object_key() -> None:
    assert split_key("team-a/p") == ("team-a", "p")
    assert split_key("n1") == (None, "n1")


def test_an_object_without_a_name_has_no_key() -> None:
    with pytest.raises(ValueError):
        object_key({"metadata": {}})


# --- reads and writes --------------------------------------------------------------------------------


def test_add_get_update_delete() -> None:
    store = Store()
    assert store.add(pod("p", "1")) is None
    first = store.get("default/p")
    assert first is not None and first["metadata"]["resourceVersion"] == "1"
    assert store.update(pod("p", "2")) is first
    assert store.delete(pod("p", "3")) is not None
    assert store.get("default/p") is None and len(store) == 0


def test_delete_of_an_unknown_object_returns_none() -> None:
    assert Store().delete(pod("ghost", "1")) is None


def test_list_and_list_keys_return_every_object() -> None:
    store = Store()
    for name in ("a", "b", "c"):
        store.add(pod(name, "1"))
    assert sorted(store.list_keys()) == ["default/a", "default/b", "default/c"]
    assert len(store.list()) == 3 and "default/b" in store


def test_get_object_finds_by_the_objects_key() -> None:
    store = Store()
    store.add(pod("p", "1"))
    assert store.get_object({"metadata": {"name": "p", "namespace": "default"}}) is not None


# --- indexers ----------------------------------------------------------------------------------------


def test_namespace_index_groups_objects_by_namespace() -> None:
    store = Store()
    store.add(pod("a", "1", namespace="x"))
    store.add(pod("b", "1", namespace="x"))
    store.add(pod("c", "1", namespace="y"))
    store.add(node("n"))
    assert [o["metadata"]["name"] for o in store.by_index(NAMESPACE_INDEX, "x")] == ["a", "b"]
    assert store.index_keys(NAMESPACE_INDEX, "y") == ["y/c"]
    assert store.index_values(NAMESPACE_INDEX) == ["x", "y"]


def test_controller_uid_index_uses_only_the_controlling_owner() -> None:
    store = Store()
    owned = pod("a", "1", owner_uid="job-1")
    not_controller = pod("b", "1")
    not_controller["metadata"]["ownerReferences"] = [{"kind": "TensorFlowJob", "name": "j", "uid": "job-1", "controller": False}]
    store.add(owned)
    store.add(not_controller)
    store.add(pod("c", "1"))
    assert store.index_keys(CONTROLLER_UID_INDEX, "job-1") == ["default/a"]
    assert controller_of(owned) is not None and controller_of(not_controller) is None


def test_indices_follow_updates_and_deletes() -> None:
    store = Store()
    store.add(pod("a", "1", owner_uid="job-1"))
    store.update(pod("a", "2", owner_uid="job-2"))
    assert store.index_keys(CONTROLLER_UID_INDEX, "job-1") == []
    assert store.index_keys(CONTROLLER_UID_INDEX, "job-2") == ["default/a"]
    store.delete(pod("a", "3"))
    assert store.index_values(CONTROLLER_UID_INDEX) == []


def test_index_functions_are_pluggable() -> None:
    def by_phase(obj: object) -> list[str]:
        return [obj["status"]["phase"]]  # type: ignore[index]

    store = Store({"phase": by_phase})
    store.add(pod("a", "1", phase="Running"))
    store.add(pod("b", "1", phase="Failed"))
    assert store.index_keys("phase", "Running") == ["default/a"]
    assert set(store.indexers) == {"phase"}


def test_indexers_added_later_index_existing_objects() -> None:
    store = Store()
    store.add(pod("a", "1", phase="Running"))
    store.add_indexers({"phase": lambda o: [o["status"]["phase"]]})
    assert store.index_keys("phase", "Running") == ["default/a"]
    with pytest.raises(ValueError):
        store.add_indexers({"phase": lambda o: []})


def test_an_unknown_index_is_a_key_error() -> None:
    with pytest.raises(KeyError):
        Store().by_index("nope", "x")


# --- replace -----------------------------------------------------------------------------------------


def test_replace_reports_adds_updates_and_tombstones_for_vanished_keys() -> None:
    store = Store()
    store.add(pod("kept", "1"))
    store.add(pod("changed", "1"))
    store.add(pod("gone", "1", phase="Running"))
    result = store.replace([pod("kept", "1"), pod("changed", "2"), pod("new", "3")])
    assert [o["metadata"]["name"] for o in result.added] == ["new"]
    assert [(old["metadata"]["resourceVersion"], new["metadata"]["resourceVersion"]) for old, new in result.updated] == [("1", "2")]
    assert len(result.deleted) == 1
    tombstone = result.deleted[0]
    assert isinstance(tombstone, DeletedFinalStateUnknown)
    assert tombstone.key == "default/gone"
    assert tombstone["status"]["phase"] == "Running"  # the last known object
    assert sorted(store.list_keys()) == ["default/changed", "default/kept", "default/new"]


def test_replace_keeps_the_cached_instance_of_unchanged_objects() -> None:
    store = Store()
    store.add(pod("a", "1"))
    before = store.get("default/a")
    result = store.replace([pod("a", "1")])
    assert store.get("default/a") is before
    assert result.added == [] and result.updated == [] and result.deleted == []


def test_replace_scoped_to_a_namespace_leaves_other_namespaces_alone() -> None:
    store = Store()
    store.add(pod("a", "1", namespace="x"))
    store.add(pod("b", "1", namespace="y"))
    result = store.replace([], namespace="x")
    assert [t.key for t in result.deleted] == ["x/a"]
    assert store.list_keys() == ["y/b"]


def test_replace_updates_indices() -> None:
    store = Store()
    store.add(pod("a", "1", owner_uid="job-1"))
    store.replace([pod("b", "1", owner_uid="job-1")])
    assert store.index_keys(CONTROLLER_UID_INDEX, "job-1") == ["default/b"]


def test_a_tombstone_has_the_key_of_its_object() -> None:
    tombstone = DeletedFinalStateUnknown("default/p", pod("p", "1"))
    assert object_key(tombstone) == "default/p"
    assert tombstone["metadata"]["name"] == "p"


# --- slimming ----------------------------------------------------------------------------------------


def test_cached_objects_lose_managed_fields_and_the_last_applied_annotation() -> None:
    obj = pod("p", "1", managed_fields=True)
    obj["metadata"]["annotations"] = {LAST_APPLIED_ANNOTATION: '{"huge": true}', "keep": "me"}
    store = Store()
    store.add(obj)
    cached = store.get("default/p")
    assert cached is not None
    assert "managedFields" not in cached["metadata"]
    assert cached["metadata"]["annotations"] == {"keep": "me"}


def test_an_annotations_map_left_empty_by_slimming_is_dropped() -> None:
    obj = pod("p", "1")
    obj["metadata"]["annotations"] = {LAST_APPLIED_ANNOTATION: "{}"}
    assert "annotations" not in slim(obj)["metadata"]


def test_shared_strings_are_one_object_across_separately_decoded_objects() -> None:
    import json

    first, second = (json.loads(json.dumps(pod("p", "1"))) for _ in range(2))
    a, b = share_strings(first), share_strings(second)
    assert a == first
    assert a["metadata"]["namespace"] is b["metadata"]["namespace"]
    key_a, key_b = (next(k for k in obj["metadata"] if k == "namespace") for obj in (a, b))
    assert key_a is key_b


def test_a_store_with_the_sharing_transform_slims_and_shares() -> None:
    import json

    store = Store(transform=slim_and_share)
    for name in ("a", "b"):
        store.add(json.loads(json.dumps(pod(name, "1", managed_fields=True))))
    a, b = store.get("default/a"), store.get("default/b")
    assert a is not None and b is not None and "managedFields" not in a["metadata"]
    assert a["metadata"]["namespace"] is b["metadata"]["namespace"]


def test_slimming_can_be_turned_off() -> None:
    store = Store(transform=None)
    store.add(pod("p", "1", managed_fields=True))
    cached = store.get("default/p")
    assert cached is not None and "managedFields" in cached["metadata"]


# --- read-only contract ------------------------------------------------------------------------------


def test_the_mutation_detector_catches_a_mutated_cached_object() -> None:
    store = Store(detect_mutations=True)
    store.add(pod("p", "1"))
    cached = store.get("default/p")
    assert cached is not None
    cached["status"]["phase"] = "Running"  # breaking the contract on purpose
    with pytest.raises(CacheMutationError, match="default/p"):
        store.check_mutations()
    with pytest.raises(CacheMutationError):
        store.update(pod("p", "2"))


def test_the_mutation_detector_accepts_a_deep_copy_being_changed() -> None:
    store = Store(detect_mutations=True)
    store.add(pod("p", "1"))
    mine = copy.deepcopy(store.get("default/p"))
    assert mine is not None
    mine["status"]["phase"] = "Running"
    store.check_mutations()
    store.update(pod("p", "2"))
    store.replace([])


def test_the_mutation_detector_is_enabled_by_the_client_go_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBE_CACHE_MUTATION_DETECTOR", "true")
    assert Store().detects_mutations
    monkeypatch.delenv("KUBE_CACHE_MUTATION_DETECTOR")
    assert not Store().detects_mutations


# --- threads -----------------------------------------------------------------------------------------


def test_concurrent_writers_and_readers_keep_the_indices_consistent() -> None:
    store = Store()
    errors: list[BaseException] = []

    def writer(worker: int) -> None:
        try:
            for i in range(300):
                store.add(pod(f"p{worker}-{i}", "1", owner_uid=f"job-{i % 3}"))
                if i % 2:
                    store.delete(pod(f"p{worker}-{i}", "2"))
                store.by_index(CONTROLLER_UID_INDEX, "job-0")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == []
    assert len(store) == 8 * 150
    indexed = sum(len(store.index_keys(CONTROLLER_UID_INDEX, f"job-{j}")) for j in range(3))
    assert indexed == len(store)
