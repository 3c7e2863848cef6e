"""The install manifests and examples carry the production features: least-privilege RBAC for the jobs'
NetworkPolicies, the CRD's stall rule and networkPolicy (with the same rule wording as `validate`),
and examples that run on the local cluster or say what they need, each carrying its training
program in a ConfigMap so that it runs in the stock TensorFlow image on any cluster."""

from __future__ import annotations

import pathlib
import re
from typing import Any

import pytest
import yaml

from controller.job import validation
from tfconfig import ROLES
from tfheartbeat.settings import HEARTBEAT_FILE_ENV
from tfjob_api.crd import job_schema

ROOT = pathlib.Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "manifests"
EXAMPLES = MANIFESTS / "examples"
POLICY_VERBS = {"get", "list", "watch", "create", "patch", "delete"}
EXAMPLE_FILES = sorted(EXAMPLES.glob("*.yaml"))
STOCK_IMAGE = "tensorflow/tensorflow:2.21.0"


def objects(path: pathlib.Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def example_job(path: pathlib.Path) -> dict[str, Any]:
    [job] = [o for o in objects(path) if o["kind"] == "TensorFlowJob"]
    return job


def config_maps(path: pathlib.Path) -> dict[str, dict[str, str]]:
    """The data of each ConfigMap of an example file, by name."""
    return {o["metadata"]["name"]: o["data"] for o in objects(path) if o["kind"] == "ConfigMap"}


def pod_specs(job: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {role: job["spec"][role]["template"]["spec"] for role in ROLES if role in job["spec"]}


def cpu_cores(quantity: str) -> float:
    return float(quantity[:-1]) / 1000 if quantity.endswith("m") else float(quantity)


def granted(role: dict[str, Any], group: str, resource: str) -> set[str]:
    return {verb for rule in role["rules"] if group in rule["apiGroups"] and resource in rule["resources"]
            for verb in rule["verbs"]}


@pytest.mark.parametrize(("path", "kind"), [(MANIFESTS / "rbac" / "clusterrole.yaml", "ClusterRole"),
                                            (MANIFESTS / "namespaced" / "role.yaml", "Role")])
def test_the_operator_may_manage_network_policies_and_nothing_more_of_networking(path: pathlib.Path,
                                                                                 kind: str) -> None:
    role = next(o for o in objects(path) if o["kind"] == kind)
    assert granted(role, "networking.k8s.io", "networkpolicies") == POLICY_VERBS
    networking = [r for r in role["rules"] if "networking.k8s.io" in r["apiGroups"]]
    assert [r["resources"] for r in networking] == [["networkpolicies"]]


def test_every_role_has_the_stall_rule_in_the_crd() -> None:
    spec = job_schema()["properties"]["spec"]["properties"]
    for role in ROLES:
        stall = spec[role]["properties"]["stall"]
        assert set(stall["properties"]) == {"timeoutSeconds", "startupSeconds", "heartbeat", "path", "port"}
        messages = {rule["message"] for rule in stall["x-kubernetes-validations"]}
        assert messages == {"port is required with heartbeat: http", "port is only used with heartbeat: http"}


def test_the_crds_peer_rule_speaks_the_words_of_validate() -> None:
    policy = job_schema()["properties"]["spec"]["properties"]["networkPolicy"]
    peer = policy["properties"]["allowFrom"]["items"]
    assert set(peer["properties"]) == {"podSelector", "namespaceSelector", "ipBlock"}
    assert [rule["message"] for rule in peer["x-kubernetes-validations"]] == [validation.PEER_RULE_MESSAGE]
    assert "default" not in policy["properties"]["enabled"]  # unset means: the operator's --network-policy


def test_the_parameter_server_example_names_the_claim_its_storage_files_provide() -> None:
    job = example_job(EXAMPLES / "parameter-server.yaml")
    claims = [v["persistentVolumeClaim"]["claimName"] for spec in pod_specs(job).values()
              for v in spec.get("volumes") or [] if "persistentVolumeClaim" in v]
    claim = objects(EXAMPLES / "storage" / "mnist-data-pvc.yaml")[0]
    assert claims == [claim["metadata"]["name"]]  # the chief's only: the other pods schedule without it
    assert "storage/mnist-data-pvc.yaml" in (EXAMPLES / "parameter-server.yaml").read_text()


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=[p.stem for p in EXAMPLE_FILES])
def test_an_example_that_mounts_a_claim_says_which_storage_file_provides_it(path: pathlib.Path) -> None:
    claim = objects(EXAMPLES / "storage" / "mnist-data-pvc.yaml")[0]["metadata"]["name"]
    claims = {v["persistentVolumeClaim"]["claimName"] for spec in pod_specs(example_job(path)).values()
              for v in spec.get("volumes") or [] if "persistentVolumeClaim" in v}
    assert claims <= {claim}
    if claims:
        assert "storage/mnist-data-pvc.yaml" in path.read_text()


def test_the_local_volume_binds_the_examples_claim() -> None:
    claim = objects(EXAMPLES / "storage" / "mnist-data-pvc.yaml")[0]
    volume = objects(EXAMPLES / "storage" / "mnist-data-local-pv.yaml")[0]
    assert "storageClassName" not in claim["spec"] and volume["spec"]["storageClassName"] == ""
    assert set(claim["spec"]["accessModes"]) <= set(volume["spec"]["accessModes"])
    assert claim["spec"]["resources"]["requests"]["storage"] == volume["spec"]["capacity"]["storage"]
    assert "namespace" not in claim["metadata"]  # applied into the job's namespace with -n


def test_every_example_holds_its_programs_in_config_maps_then_one_job() -> None:
    # The ConfigMaps come first, so `kubectl apply -f` creates them before the job's pods mount them.
    assert EXAMPLE_FILES
    for path in EXAMPLE_FILES:
        kinds = [o["kind"] for o in objects(path)]
        assert kinds[-1] == "TensorFlowJob" and set(kinds[:-1]) == {"ConfigMap"}, path.name


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=[p.stem for p in EXAMPLE_FILES])
def test_every_program_in_an_examples_config_maps_compiles(path: pathlib.Path) -> None:
    programs = {f"{name}/{key}": text for name, data in config_maps(path).items()
                for key, text in data.items() if key.endswith(".py")}
    assert programs
    for name, source in programs.items():
        compile(source, name, "exec")


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=[p.stem for p in EXAMPLE_FILES])
def test_every_script_an_example_runs_is_in_a_config_map_its_pod_mounts(path: pathlib.Path) -> None:
    maps = config_maps(path)
    for role, spec in pod_specs(example_job(path)).items():
        volumes = {v["name"]: v for v in spec.get("volumes") or []}
        for container in spec["containers"]:
            # Where each mounted ConfigMap's keys appear as files: <mountPath>/<key>.
            files = {f"{mount['mountPath'].rstrip('/')}/{key}"
                     for mount in container.get("volumeMounts") or []
                     if "configMap" in volumes[mount["name"]]
                     for key in maps[volumes[mount["name"]]["configMap"]["name"]]}
            command = [*container.get("command", []), *container.get("args", [])]
            assert command[0] == "python", (path.name, role)
            assert command[1] in files, (path.name, role, command[1], files)


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=[p.stem for p in EXAMPLE_FILES])
def test_every_example_runs_the_stock_image_and_fits_one_node_of_two_cores(path: pathlib.Path) -> None:
    job = example_job(path)
    cpu = 0.0
    for role, spec in pod_specs(job).items():
        for container in spec["containers"]:
            assert container["image"] == STOCK_IMAGE and container["imagePullPolicy"] == "IfNotPresent"
            resources = container["resources"]
            assert set(resources["limits"]) == {"memory"}  # no GPU, no CPU cap that would slow the steps
            cpu += cpu_cores(resources["requests"]["cpu"]) * job["spec"][role].get("replicas", 1)
    assert cpu <= 1.5, path.name


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=[p.stem for p in EXAMPLE_FILES])
def test_every_example_program_logs_the_lines_a_test_can_wait_for(path: pathlib.Path) -> None:
    for data in config_maps(path).values():
        source = data["train.py"]
        assert 'log(f"TASK {name} joined cluster {sizes}' in source
        assert 'log(f"TRAINING DONE loss=' in source
        # Nothing downloaded at run time: the data is generated.
        assert not re.search(r"keras\.datasets|tensorflow_hub|urlopen|requests\.get", source)


def test_the_stall_example_keeps_the_heartbeat_its_probes_check() -> None:
    job = example_job(EXAMPLES / "stall-detection.yaml")
    assert "stall" in job["spec"]["worker"]
    [program] = [data["train.py"] for data in config_maps(EXAMPLES / "stall-detection.yaml").values()]
    # The stock image has no tfheartbeat: the program touches the file the operator names itself.
    assert f'os.environ.get("{HEARTBEAT_FILE_ENV}")' in program and ".touch()" in program
    script = (EXAMPLES / "train_with_heartbeat.py").read_text()  # the helper's way, which docs show
    assert "tfheartbeat.HeartbeatCallback()" in script and "tfheartbeat.pausing(" in script
