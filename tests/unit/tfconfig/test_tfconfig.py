"""TF_CONFIG rules (docs/design.md §3) on plain job dicts."""

from __future__ import annotations

import json
from typing import Any

from tests.support.jobs import container, role, tfjob
from tfconfig import SerializedCluster, cluster_spec, cluster_spec_hash, pod_address, tf_config, tf_config_json


def job(**roles: dict[str, Any]) -> dict[str, Any]:
    return tfjob("mnist", roles, namespace="team-a")


def test_worker_only_cluster_lists_each_worker_in_index_order() -> None:
    assert cluster_spec(job(worker=role(3))) == {
        "worker": [f"mnist-worker-{i}.mnist.team-a.svc:2222" for i in range(3)],
    }


def test_ps_and_worker_cluster_has_both_roles() -> None:
    cluster = cluster_spec(job(ps=role(2), worker=role(2)))
    assert cluster["ps"] == ["mnist-ps-0.mnist.team-a.svc:2222", "mnist-ps-1.mnist.team-a.svc:2222"]
    assert list(cluster) == ["ps", "worker"]


def test_chief_ps_worker_tf_config_matches_the_design_example() -> None:
    config = tf_config(job(chief=role(1), ps=role(2), worker=role(4)), "worker", 0)
    assert config["cluster"]["chief"] == ["mnist-chief-0.mnist.team-a.svc:2222"]
    assert len(config["cluster"]["worker"]) == 4
    assert config["task"] == {"type": "worker", "index": 0}
    assert config["environment"] == "cloud"


def test_evaluator_is_excluded_from_cluster_but_has_its_own_task() -> None:
    spec = job(chief=role(1), ps=role(1), worker=role(2), evaluator=role(1))
    config = tf_config(spec, "evaluator", 0)
    assert "evaluator" not in config["cluster"]
    assert config["task"] == {"type": "evaluator", "index": 0}
    assert config["cluster"] == tf_config(spec, "chief", 0)["cluster"]


def test_custom_cluster_domain_is_appended_to_every_address() -> None:
    cluster = cluster_spec(job(worker=role(1)), cluster_domain="cluster.local")
    assert cluster == {"worker": ["mnist-worker-0.mnist.team-a.svc.cluster.local:2222"]}


def test_custom_tfjob_port_is_used_for_that_role_only() -> None:
    cluster = cluster_spec(job(ps=role(1, containers=[container(port=3333)]), worker=role(1)))
    assert cluster["ps"] == ["mnist-ps-0.mnist.team-a.svc:3333"]
    assert cluster["worker"] == ["mnist-worker-0.mnist.team-a.svc:2222"]


def test_port_comes_from_the_tensorflow_container_not_the_first() -> None:
    sidecar = container("x", name="sidecar", port=9999)
    spec = role(1, containers=[sidecar, container(port=4444)])
    assert cluster_spec(job(worker=spec)) == {"worker": ["mnist-worker-0.mnist.team-a.svc:4444"]}


def test_roles_with_zero_replicas_are_omitted() -> None:
    assert list(cluster_spec(job(chief=role(1), ps=role(0), worker=role(0)))) == ["chief"]


def test_replicas_default_to_one_when_omitted() -> None:
    spec = role()
    del spec["replicas"]
    assert cluster_spec(job(worker=spec)) == {"worker": ["mnist-worker-0.mnist.team-a.svc:2222"]}


def test_single_replica_still_gets_tf_config() -> None:
    parsed = json.loads(tf_config_json(job(worker=role(1)), "worker", 0))
    assert parsed["task"] == {"type": "worker", "index": 0}


def test_every_pod_of_a_job_sees_the_identical_cluster_string() -> None:
    spec = job(chief=role(1), ps=role(2), worker=role(3), evaluator=role(1))
    keys = [("chief", 0), ("ps", 0), ("ps", 1), ("worker", 0), ("worker", 2), ("evaluator", 0)]
    clusters = {json.dumps(json.loads(tf_config_json(spec, r, i))["cluster"], sort_keys=True) for r, i in keys}
    assert len(clusters) == 1


def test_tf_config_json_is_canonical_with_sorted_keys() -> None:
    text = tf_config_json(job(worker=role(1), ps=role(1)), "worker", 0)
    assert text.index('"ps"') < text.index('"worker"')
    assert " " not in text


def test_hash_changes_exactly_when_the_topology_changes() -> None:
    base = cluster_spec_hash(cluster_spec(job(ps=role(2), worker=role(4))))
    assert base == cluster_spec_hash(cluster_spec(job(ps=role(2), worker=role(4))))
    assert base != cluster_spec_hash(cluster_spec(job(ps=role(4), worker=role(4))))
    assert base != cluster_spec_hash(cluster_spec(job(ps=role(2), worker=role(5))))
    assert base != cluster_spec_hash(cluster_spec(job(ps=role(2, containers=[container(port=3000)]), worker=role(4))))


def test_hash_ignores_the_evaluator_which_is_not_in_the_cluster() -> None:
    without = cluster_spec_hash(cluster_spec(job(chief=role(1), worker=role(1))))
    with_evaluator = cluster_spec_hash(cluster_spec(job(chief=role(1), worker=role(1), evaluator=role(1))))
    assert without == with_evaluator


def test_pod_address_without_domain_ends_in_svc() -> None:
    assert pod_address("j", "ns", "ps", 3, 2222) == "j-ps-3.j.ns.svc:2222"


def test_serialized_cluster_builds_each_tf_config_exactly_as_serialising_it_whole() -> None:
    spec = job(chief=role(), ps=role(2, containers=[container(port=2223)]), worker=role(3), evaluator=role())
    for domain in ("", "cluster.local"):
        cluster = SerializedCluster.of(spec, domain)
        assert cluster.hash == cluster_spec_hash(cluster_spec(spec, domain))
        for kind, replicas in (("chief", 1), ("ps", 2), ("worker", 3), ("evaluator", 1)):
            for index in range(replicas):
                whole = json.dumps(tf_config(spec, kind, index, domain), sort_keys=True, separators=(",", ":"))
                assert cluster.tf_config_json(kind, index) == whole
