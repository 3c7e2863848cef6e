"""The install manifests and the Dockerfile, checked offline: security context, probes, resources,
least-privilege RBAC, and that the pieces agree with each other and with the CLI's flags.

The kustomizations are walked here with a tiny loader (resources: files and directories), so this
runs without kubectl; tests/integration/controller/test_kubectl.py sends the real thing to an API
server with `kubectl apply --dry-run=server -k`.
"""

from __future__ import annotations

import pathlib
import re
from typing import Any

import pytest
import yaml

from controller.process.cli import build_parser

ROOT = pathlib.Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "manifests"
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the CRD is large

# What the operator's code calls (controller/caches.py, reconciler.py, companions.py, kueue/gate.py,
# process/app.py, events.py), as (apiGroup, resource) -> verbs. The RBAC integration test proves it is enough.
OPERATOR_PERMISSIONS: dict[tuple[str, str], set[str]] = {
    ("kubeflow.org", "tensorflowjobs"): {"get", "list", "watch", "delete"},
    ("kubeflow.org", "tensorflowjobs/status"): {"patch"},
    ("kubeflow.org", "tensorflowjobs/finalizers"): {"update"},
    ("kubeflow.org", "tfjobs"): {"get", "list", "watch", "delete"},
    ("kubeflow.org", "tfjobs/status"): {"patch"},
    ("kubeflow.org", "tfjobs/finalizers"): {"update"},
    ("", "pods"): {"get", "list", "watch", "create", "delete"},
    ("", "services"): {"get", "list", "watch", "create", "delete"},
    ("", "pods/proxy"): {"get"},
    ("", "nodes"): {"list", "watch"},
    ("", "events"): {"create", "list", "watch"},
    ("networking.k8s.io", "networkpolicies"): {"get", "list", "watch", "create", "patch", "delete"},
    ("kueue.x-k8s.io", "workloads"): {"list", "watch", "create", "patch", "delete"},
    ("kueue.x-k8s.io", "workloads/status"): {"patch"},
    ("kueue.x-k8s.io", "resourceflavors"): {"list", "watch"},
    ("kueue.x-k8s.io", "workloadpriorityclasses"): {"get"},
    ("scheduling.x-k8s.io", "podgroups"): {"get", "list", "watch", "create", "patch", "delete"},
    ("scheduling.volcano.sh", "podgroups"): {"get", "list", "watch", "create", "patch", "delete"},
    ("scheduling.k8s.io", "podgroups"): {"get", "list", "watch", "create", "patch", "delete"},
    ("scheduling.k8s.io", "workloads"): {"get", "list", "watch", "create", "patch", "delete"},
}
CLUSTER_SCOPED = {("", "nodes"), ("kueue.x-k8s.io", "resourceflavors"), ("kueue.x-k8s.io", "workloadpriorityclasses")}


def load_objects(path: pathlib.Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.load_all(path.read_text(), Loader=LOADER) if doc]


def load_kustomization(directory: pathlib.Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every object a kustomization's `resources` name (recursively), and the kustomization itself."""
    kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text())
    objects: list[dict[str, Any]] = []
    for entry in kustomization.get("resources") or []:
        path = (directory / entry).resolve()
        if path.is_dir():
            objects += load_kustomization(path)[0]
        else:
            objects += load_objects(path)
    return objects, kustomization


def find(objects: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    matches = [o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    assert len(matches) == 1, f"expected one {kind} {name or ''}, found {len(matches)}"
    return matches[0]


def permissions(rules: list[dict[str, Any]]) -> dict[tuple[str, str], set[str]]:
    granted: dict[tuple[str, str], set[str]] = {}
    for rule in rules:
        assert "resourceNames" not in rule, "job permissions are not limited by name"
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                granted.setdefault((group, resource), set()).update(rule["verbs"])
    return granted


@pytest.fixture(scope="module")
def cluster_install() -> list[dict[str, Any]]:
    return load_kustomization(MANIFESTS)[0]


@pytest.fixture(scope="module")
def namespaced_install() -> tuple[list[dict[str, Any]], dict[str, Any]]:
    return load_kustomization(MANIFESTS / "namespaced")


@pytest.fixture(scope="module")
def deployment(cluster_install: list[dict[str, Any]]) -> dict[str, Any]:
    return find(cluster_install, "Deployment", "tfjob-operator")


@pytest.fixture(scope="module")
def container(deployment: dict[str, Any]) -> dict[str, Any]:
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return containers[0]


def run_flags(container: dict[str, Any]) -> Any:
    return build_parser().parse_args(["run", *container["args"]])


# ---- what the default install contains --------------------------------------------------------------


def test_default_install_has_every_piece(cluster_install: list[dict[str, Any]]) -> None:
    kinds = sorted(o["kind"] for o in cluster_install)
    assert kinds == sorted(["CustomResourceDefinition", "Namespace", "ServiceAccount", "ClusterRole",
                            "ClusterRoleBinding", "Role", "RoleBinding", "Deployment", "Service",
                            "PodDisruptionBudget"])
    find(cluster_install, "CustomResourceDefinition", "tensorflowjobs.kubeflow.org")


def test_every_namespaced_object_lives_in_tfjob_system(cluster_install: list[dict[str, Any]]) -> None:
    namespaced = [o for o in cluster_install
                  if o["kind"] not in ("CustomResourceDefinition", "Namespace", "ClusterRole", "ClusterRoleBinding")]
    assert {o["metadata"].get("namespace") for o in namespaced} == {"tfjob-system"}
    assert find(cluster_install, "Namespace")["metadata"]["name"] == "tfjob-system"


def test_service_monitor_is_an_opt_in_example(cluster_install: list[dict[str, Any]]) -> None:
    assert not any(o["kind"] == "ServiceMonitor" for o in cluster_install)
    monitors, _ = load_kustomization(MANIFESTS / "monitoring")
    monitor = find(monitors, "ServiceMonitor")
    service = find(cluster_install, "Service", "tfjob-operator-metrics")
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert [e["port"] for e in monitor["spec"]["endpoints"]] == [p["name"] for p in service["spec"]["ports"]]


# ---- the Deployment ---------------------------------------------------------------------------------


def test_deployment_runs_two_replicas_with_leader_election(deployment: dict[str, Any],
                                                             container: dict[str, Any]) -> None:
    assert deployment["spec"]["replicas"] == 2
    flags = run_flags(container)
    assert flags.leader_elect
    assert flags.log_format == "json"
    env = {e["name"]: e for e in container["env"]}
    assert env["POD_NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"


def test_pod_runs_as_non_root_with_runtime_default_seccomp(deployment: dict[str, Any]) -> None:
    pod = deployment["spec"]["template"]["spec"]["securityContext"]
    assert pod["runAsNonRoot"] is True
    assert pod["runAsUser"] != 0
    assert pod["seccompProfile"] == {"type": "RuntimeDefault"}


def test_container_is_locked_down(container: dict[str, Any]) -> None:
    security = container["securityContext"]
    assert security["allowPrivilegeEscalation"] is False
    assert security["readOnlyRootFilesystem"] is True
    assert security["privileged"] is False
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert security["runAsNonRoot"] is True


def test_container_has_requests_and_limits(container: dict[str, Any]) -> None:
    resources = container["resources"]
    for section in ("requests", "limits"):
        assert set(resources[section]) == {"cpu", "memory"}, section


def test_probes_hit_the_health_endpoints_on_the_health_port(container: dict[str, Any]) -> None:
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    flags = run_flags(container)
    assert ports["health"] == int(flags.health_addr.rsplit(":", 1)[1])
    assert ports["metrics"] == int(flags.metrics_addr.rsplit(":", 1)[1])
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}


def test_image_is_pinned_to_a_version(container: dict[str, Any]) -> None:
    image = container["image"]
    assert re.fullmatch(r"[\w./-]+:\d+\.\d+\.\d+", image), image


def test_read_only_root_has_a_writable_tmp(deployment: dict[str, Any], container: dict[str, Any]) -> None:
    volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    assert "emptyDir" in volumes[mounts["/tmp"]]


def test_metrics_service_selects_the_operator_pods(cluster_install: list[dict[str, Any]],
                                                  deployment: dict[str, Any]) -> None:
    service = find(cluster_install, "Service", "tfjob-operator-metrics")
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    assert [p["targetPort"] for p in service["spec"]["ports"]] == ["metrics"]


# ---- RBAC ------------------------------------------------------------------------------------------


def test_cluster_role_grants_exactly_what_the_operator_calls(cluster_install: list[dict[str, Any]]) -> None:
    role = find(cluster_install, "ClusterRole", "tfjob-operator")
    assert permissions(role["rules"]) == OPERATOR_PERMISSIONS


@pytest.mark.parametrize("kind", ["ClusterRole", "Role"])
def test_no_role_has_wildcards_or_touches_secrets(cluster_install: list[dict[str, Any]],
                                                  namespaced_install: tuple[list[dict[str, Any]], dict[str, Any]],
                                                  kind: str) -> None:
    kueue_read = load_objects(MANIFESTS / "namespaced" / "kueue-read.yaml")
    roles = [o for o in [*cluster_install, *namespaced_install[0], *kueue_read] if o["kind"] == kind]
    assert roles
    for role in roles:
        for rule in role["rules"]:
            for field in ("apiGroups", "resources", "verbs", "resourceNames"):
                assert not any("*" in value for value in rule.get(field) or []), (role["metadata"]["name"], rule)
            assert not {"secrets", "configmaps"} & set(rule["resources"]), (role["metadata"]["name"], rule)


def test_bindings_name_the_deployments_service_account(cluster_install: list[dict[str, Any]],
                                                      deployment: dict[str, Any]) -> None:
    account = find(cluster_install, "ServiceAccount")
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == account["metadata"]["name"]
    for kind in ("ClusterRoleBinding", "RoleBinding"):
        binding = find(cluster_install, kind)
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account["metadata"]["name"],
                                        "namespace": account["metadata"]["namespace"]}]
        assert binding["roleRef"]["name"] == find(cluster_install, kind.replace("Binding", ""))["metadata"]["name"]


def test_leader_election_role_covers_only_the_default_lease(cluster_install: list[dict[str, Any]]) -> None:
    role = find(cluster_install, "Role", "tfjob-operator-leader-election")
    lease_id = build_parser().parse_args(["run"]).leader_election_id
    assert role["rules"] == [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": [lease_id],
         "verbs": ["get", "update"]},
    ]


# ---- namespaced mode -------------------------------------------------------------------------------


def test_namespaced_install_uses_roles_only(namespaced_install: tuple[list[dict[str, Any]], dict[str, Any]]) -> None:
    objects, _ = namespaced_install
    kinds = {o["kind"] for o in objects}
    assert not kinds & {"ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition"}
    role = find(objects, "Role", "tfjob-operator")
    expected = {key: verbs for key, verbs in OPERATOR_PERMISSIONS.items() if key not in CLUSTER_SCOPED}
    assert permissions(role["rules"]) == expected


def test_namespaced_kueue_add_on_grants_only_the_cluster_scoped_kueue_reads(
        namespaced_install: tuple[list[dict[str, Any]], dict[str, Any]]) -> None:
    objects, kustomization = namespaced_install
    kueue_read = load_objects(MANIFESTS / "namespaced" / "kueue-read.yaml")
    role = find(kueue_read, "ClusterRole")
    expected = {key: verbs for key, verbs in OPERATOR_PERMISSIONS.items()
                if key in CLUSTER_SCOPED and key[0] == "kueue.x-k8s.io"}
    assert permissions(role["rules"]) == expected
    assert "kueue-read.yaml" not in kustomization["resources"]  # opt-in: only where Kueue is installed
    binding = find(kueue_read, "ClusterRoleBinding")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "tfjob-operator",
                                    "namespace": find(objects, "Namespace")["metadata"]["name"]}]


def test_namespaced_install_watches_only_its_namespace(
        namespaced_install: tuple[list[dict[str, Any]], dict[str, Any]]) -> None:
    objects, kustomization = namespaced_install
    namespace = find(objects, "Namespace")["metadata"]["name"]
    assert kustomization["namespace"] == namespace
    patches = "\n".join(p["patch"] for p in kustomization["patches"] if p["target"]["kind"] == "Deployment")
    assert "--namespace=$(POD_NAMESPACE)" in patches
    binding = find(objects, "RoleBinding", "tfjob-operator")
    assert binding["subjects"][0]["namespace"] == namespace


# ---- Dockerfile ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dockerfile() -> str:
    return (ROOT / "Dockerfile").read_text()


def test_image_base_is_a_pinned_slim_python_3_11(dockerfile: str) -> None:
    base = re.search(r"^ARG PYTHON_IMAGE=(\S+)$", dockerfile, re.M)
    assert base is not None
    assert re.fullmatch(r"python:3\.11\.\d+-slim(-\w+)?", base.group(1)), base.group(1)


def test_image_pins_every_dependency_exactly(dockerfile: str) -> None:
    block = re.search(r"COPY <<CONSTRAINTS .*?\n(.*?)\nCONSTRAINTS\n", dockerfile, re.S)
    assert block is not None
    lines = block.group(1).splitlines()
    assert lines and all(re.fullmatch(r"[A-Za-z0-9_.-]+==[\w.]+", line) for line in lines)
    pinned = {line.split("==")[0].lower().replace("_", "-") for line in lines}
    assert {"kubernetes", "structlog", "prometheus-client", "pyyaml", "jsonschema", "tenacity", "cachetools"} <= pinned
    assert "--constraint constraints.txt" in dockerfile


def test_image_runs_tfjob_operator_run_as_the_deployments_non_root_user(
        dockerfile: str, deployment: dict[str, Any]) -> None:
    final_stage = dockerfile.rsplit("\nFROM ", 1)[1]
    user = re.search(r"^USER (\d+):(\d+)$", final_stage, re.M)
    assert user is not None
    assert int(user.group(1)) == deployment["spec"]["template"]["spec"]["securityContext"]["runAsUser"] != 0
    assert re.search(r'^ENTRYPOINT \["tfjob-operator", "run"\]$', final_stage, re.M)


def test_image_installs_the_crds_the_api_package_links_to(dockerfile: str) -> None:
    """The CRDs are package data of `tfjob_api` (tfjob_api/crds/ links into manifests/): the build stage copies
    what the links point to, so the installed package carries them; the final stage keeps the same files
    where $TFJOB_CRD and $TFJOB_KUBEFLOW_CRD point."""
    build_stage = dockerfile.rsplit("\nFROM ", 1)[0]
    ignore = (ROOT / ".dockerignore").read_text().splitlines()
    links = sorted((ROOT / "tfjob_api" / "crds").glob("*.yaml"))
    assert [link.name for link in links] == ["tensorflowjob.yaml", "tfjob.yaml"]
    for link in links:
        target = link.resolve().relative_to(ROOT).as_posix()
        assert link.is_symlink() and target.startswith("manifests/"), target
        assert f"COPY {target} {target}" in build_stage
        assert f"!{target}" in ignore
    assert "COPY tfjob_api/ tfjob_api/" in build_stage
    final_stage = dockerfile.rsplit("\nFROM ", 1)[1]
    for variable, source in (("TFJOB_CRD", "manifests/crd.yaml"),
                             ("TFJOB_KUBEFLOW_CRD", "manifests/kubeflow/tfjob-crd.yaml")):
        target = re.search(rf"{variable}=(\S+)", final_stage)  # the same files, where the overrides point
        assert target is not None
        assert f"COPY {source} {target.group(1)}" in final_stage


def test_image_builds_both_distributions_with_every_package_the_client_links_to(dockerfile: str) -> None:
    """client/ holds links to the packages of the client distribution: the build stage copies client/
    and every package a link points to (COPY keeps links as links), .dockerignore lets them in, and
    pip installs the client beside the operator."""
    build_stage = dockerfile.rsplit("\nFROM ", 1)[0]
    ignore = (ROOT / ".dockerignore").read_text().splitlines()
    links = sorted(path for path in (ROOT / "client").iterdir() if path.is_symlink())
    assert [link.name for link in links] == ["tfconfig", "tfheartbeat", "tfjob_api", "tfjobs"]
    for link in links:
        package = link.resolve().relative_to(ROOT).as_posix()
        assert f"COPY {package}/ {package}/" in build_stage
        assert f"!{package}/" in ignore
    assert "COPY client/ client/" in build_stage and "!client/" in ignore
    assert re.search(r"pip install --constraint constraints.txt \./client \.", build_stage)


# ---- beside Kubeflow: manifests/kubeflow/ and manifests/kubeflow-handover/ ---------------------------


@pytest.fixture(scope="module")
def kubeflow_install() -> list[dict[str, Any]]:
    return load_kustomization(MANIFESTS / "kubeflow")[0]


def test_the_default_install_keeps_the_short_name_and_has_no_tfjob_crd(
        cluster_install: list[dict[str, Any]]) -> None:
    crd = find(cluster_install, "CustomResourceDefinition")
    assert crd["spec"]["names"]["shortNames"] == ["tfjob"]


def test_the_kubeflow_install_serves_both_kinds_without_a_name_clash(kubeflow_install: list[dict[str, Any]]) -> None:
    crds = [o for o in kubeflow_install if o["kind"] == "CustomResourceDefinition"]
    taken: list[str] = []
    for crd in crds:
        names = crd["spec"]["names"]
        taken += [names["plural"], names["singular"], *names.get("shortNames", [])]
    assert sorted(c["metadata"]["name"] for c in crds) == ["tensorflowjobs.kubeflow.org", "tfjobs.kubeflow.org"]
    assert len(taken) == len(set(taken))


def test_the_kubeflow_installs_tensorflowjob_crd_differs_from_the_default_only_in_the_short_name() -> None:
    default = load_objects(MANIFESTS / "crd.yaml")[0]
    beside = load_objects(MANIFESTS / "kubeflow" / "tensorflowjob-crd.yaml")[0]
    assert {**default["spec"]["names"], "shortNames": None} == {**beside["spec"]["names"], "shortNames": None}
    assert {**default["spec"], "names": None} == {**beside["spec"], "names": None}


def test_the_tfjob_crd_has_kubeflows_names_and_the_marker_category() -> None:
    crd = load_objects(MANIFESTS / "kubeflow" / "tfjob-crd.yaml")[0]
    assert crd["spec"]["names"] == {"kind": "TFJob", "listKind": "TFJobList", "plural": "tfjobs", "singular": "tfjob",
                                    "categories": ["kubeflow", "tfjob-operator"]}
    [version] = crd["spec"]["versions"]
    assert (version["name"], version["storage"]) == ("v1", True)
    assert [c["name"] for c in version["additionalPrinterColumns"]] == ["State", "Age"]


def test_the_kubeflow_install_is_the_default_one_but_for_the_crds(cluster_install: list[dict[str, Any]],
                                                                  kubeflow_install: list[dict[str, Any]]) -> None:
    def rest(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return sorted((o for o in objects if o["kind"] != "CustomResourceDefinition"),
                      key=lambda o: (o["kind"], o["metadata"]["name"]))
    assert rest(kubeflow_install) == rest(cluster_install)


def test_the_handover_install_leaves_tfjobs_without_managed_by_to_kubeflow() -> None:
    kustomization = yaml.safe_load((MANIFESTS / "kubeflow-handover" / "kustomization.yaml").read_text())
    assert kustomization["resources"] == ["../kubeflow"]
    [patch] = kustomization["patches"]
    [operation] = yaml.safe_load(patch["patch"])
    flags = build_parser().parse_args(["run", operation["value"]])
    assert flags.kubeflow_tfjob_without_managed_by == "leave"
