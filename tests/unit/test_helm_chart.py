"""The Helm chart (manifests/helm/tfjob-operator/) renders what the kustomize installs render.

Both sides are rendered by the real tools at test time — `helm template` (Helm built from its Go
module by devcluster/build-helm.sh) and `kubectl kustomize` (the local control plane's kubectl) —
so a change to manifests/rbac/, manifests/operator/ or the chart that makes them disagree fails here,
naming the object. The chart adds only Helm's own labels (helm.sh/chart, app.kubernetes.io/managed-by,
instance, version), which are taken off before comparing.
"""

from __future__ import annotations

import difflib
import json
import os
import pathlib
import shutil
import subprocess
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.tools  # Helm is built from its Go module: `make test-tools`

ROOT = pathlib.Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "manifests"
CHART = MANIFESTS / "helm" / "tfjob-operator"
NAMESPACED_VALUES = CHART / "values-namespaced.yaml"
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the CRD is large
HELM_ONLY_LABELS = {"helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/instance",
                    "app.kubernetes.io/version"}

# The kustomize components an install may add, and the chart values that do the same.
COMPONENT_VALUES = {"rbac/without-network-policies": ["--set", "rbac.networkPolicies=false"]}

Objects = dict[tuple[str, str, str], dict[str, Any]]


def tool_dir(script: str) -> pathlib.Path:
    done = subprocess.run(["bash", str(ROOT / "devcluster" / script), "dir"], capture_output=True, text=True)
    assert done.returncode == 0, f"devcluster/{script}: {done.stderr[-2000:]}"
    return pathlib.Path(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def helm() -> str:
    return str(tool_dir("build-helm.sh") / "helm")


@pytest.fixture(scope="module")
def kubectl() -> str:
    return str(tool_dir("build-binaries.sh") / "kubectl")


def parse(text: str) -> list[dict[str, Any]]:
    return [o for o in yaml.load_all(text, Loader=LOADER) if o]


def without_helm_labels(obj: dict[str, Any]) -> dict[str, Any]:
    labels = {k: v for k, v in (obj["metadata"].get("labels") or {}).items() if k not in HELM_ONLY_LABELS}
    metadata = {k: v for k, v in obj["metadata"].items() if k != "labels"}
    return {**obj, "metadata": {**metadata, **({"labels": labels} if labels else {})}}


def by_key(objects: list[dict[str, Any]]) -> Objects:
    return {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): without_helm_labels(o)
            for o in objects}


def kustomize(kubectl: str, folder: str) -> Objects:
    done = subprocess.run([kubectl, "kustomize", str(MANIFESTS / folder)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return by_key(parse(done.stdout))


def kustomize_with_component(kubectl: str, folder: str, component: str, work: pathlib.Path) -> Objects:
    """An install of manifests/ with a component added, as a user's own kustomization would."""
    def relative(path: pathlib.Path) -> str:
        return os.path.relpath(path, work)  # kustomize takes no absolute paths to folders
    (work / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": [relative(MANIFESTS / folder)], "components": [relative(MANIFESTS / component)]}))
    done = subprocess.run([kubectl, "kustomize", str(work)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return by_key(parse(done.stdout))


def components() -> list[str]:
    """Every kustomize Component under manifests/, relative to it."""
    return sorted(p.parent.relative_to(MANIFESTS).as_posix() for p in MANIFESTS.rglob("kustomization.yaml")
                  if (yaml.safe_load(p.read_text()) or {}).get("kind") == "Component")


def template(helm: str, namespace: str, *args: str) -> Objects:
    done = subprocess.run([helm, "template", "tfjob-operator", str(CHART), "--namespace", namespace, *args],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return by_key(parse(done.stdout))


def assert_same(chart: Objects, kustomized: Objects) -> None:
    assert sorted(chart) == sorted(kustomized), "the two installs render different objects"
    for key, obj in kustomized.items():
        if chart[key] != obj:
            ours = json.dumps(chart[key], indent=1, sort_keys=True).splitlines()
            theirs = json.dumps(obj, indent=1, sort_keys=True).splitlines()
            diff = "\n".join(difflib.unified_diff(theirs, ours, "kustomize", "helm", lineterm=""))
            pytest.fail(f"{key} differs between kustomize and the chart:\n{diff[:4000]}")


def deployment(objects: Objects) -> dict[str, Any]:
    [found] = [o for (kind, _, _), o in objects.items() if kind == "Deployment"]
    return found


def container_args(objects: Objects) -> list[str]:
    args: list[str] = deployment(objects)["spec"]["template"]["spec"]["containers"][0]["args"]
    return args


# ---- helm lint ----------------------------------------------------------------------------------


def test_helm_lint_passes_with_the_default_values(helm: str) -> None:
    done = subprocess.run([helm, "lint", "--strict", str(CHART)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_helm_lint_passes_with_the_namespaced_values(helm: str) -> None:
    done = subprocess.run([helm, "lint", "--strict", str(CHART), "-f", str(NAMESPACED_VALUES),
                           "--namespace", "team-a"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_an_unknown_rbac_scope_is_refused(helm: str) -> None:
    done = subprocess.run([helm, "template", str(CHART), "--set", "rbac.scope=everywhere"],
                          capture_output=True, text=True)
    assert done.returncode != 0
    assert "rbac.scope" in done.stderr


# ---- the chart and the kustomize installs render the same objects --------------------------------


def test_the_default_values_render_the_cluster_wide_install(helm: str, kubectl: str) -> None:
    chart = template(helm, "tfjob-system", "--include-crds", "--set", "namespace.create=true")
    assert_same(chart, kustomize(kubectl, "."))


def test_the_default_values_leave_the_namespace_to_helm(helm: str, kubectl: str) -> None:
    chart = template(helm, "tfjob-system", "--include-crds")
    expected = {k: v for k, v in kustomize(kubectl, ".").items() if k[0] != "Namespace"}
    assert_same(chart, expected)


def test_the_namespaced_values_render_the_namespaced_install(helm: str, kubectl: str) -> None:
    chart = template(helm, "team-a", "-f", str(NAMESPACED_VALUES), "--set", "namespace.create=true")
    assert_same(chart, kustomize(kubectl, "namespaced"))


def test_the_hand_over_flag_renders_the_kubeflow_hand_over_install(helm: str, kubectl: str) -> None:
    chart = template(helm, "tfjob-system", "--set", "namespace.create=true",
                     "--set", "flags.kubeflowTFJobWithoutManagedBy=leave")
    # The Kubeflow installs differ from the chart only by their CRDs (docs/operations.md, "Helm").
    expected = {k: v for k, v in kustomize(kubectl, "kubeflow-handover").items()
                if k[0] != "CustomResourceDefinition"}
    assert_same(chart, expected)


def test_the_monitoring_values_render_the_monitoring_install(helm: str, kubectl: str) -> None:
    chart = template(helm, "tfjob-system", "--show-only", "templates/servicemonitor.yaml",
                     "--show-only", "templates/prometheusrule.yaml", "--show-only", "templates/dashboard-configmap.yaml",
                     "--set", "metrics.serviceMonitor.enabled=true", "--set", "metrics.prometheusRule.enabled=true",
                     "--set", "dashboard.enabled=true")
    assert_same(chart, kustomize(kubectl, "monitoring"))


def test_every_kustomize_component_has_chart_values() -> None:
    assert set(components()) <= set(COMPONENT_VALUES)


def test_without_network_policy_rbac_renders_the_install_with_that_component(
        helm: str, kubectl: str, tmp_path: pathlib.Path) -> None:
    chart = template(helm, "tfjob-system", "--include-crds", "--set", "namespace.create=true",
                     *COMPONENT_VALUES["rbac/without-network-policies"])
    assert_same(chart, kustomize_with_component(kubectl, ".", "rbac/without-network-policies", tmp_path))


def test_namespaced_without_network_policy_rbac_renders_the_namespaced_install_with_that_component(
        helm: str, kubectl: str, tmp_path: pathlib.Path) -> None:
    chart = template(helm, "team-a", "-f", str(NAMESPACED_VALUES), "--set", "namespace.create=true",
                     *COMPONENT_VALUES["rbac/without-network-policies"])
    assert_same(chart, kustomize_with_component(kubectl, "namespaced", "rbac/without-network-policies", tmp_path))


def test_an_image_set_once_in_the_operator_kustomization_is_the_charts_default_too(
        helm: str, kubectl: str, tmp_path: pathlib.Path) -> None:
    copy = tmp_path / "manifests"
    shutil.copytree(MANIFESTS, copy, symlinks=True)
    kustomization = copy / "operator" / "kustomization.yaml"
    document = yaml.safe_load(kustomization.read_text())
    document["images"] = [{"name": "tfjob-operator", "newName": "registry.example.com/ml/tfjob-operator",
                           "newTag": "7.7.7"}]
    kustomization.write_text(yaml.safe_dump(document))
    done = subprocess.run([helm, "template", "tfjob-operator", str(copy / "helm" / "tfjob-operator")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    image = deployment(by_key(parse(done.stdout)))["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image == "registry.example.com/ml/tfjob-operator:7.7.7"


def test_network_policies_on_without_their_permission_is_refused(helm: str) -> None:
    done = subprocess.run([helm, "template", str(CHART), "--set", "rbac.networkPolicies=false",
                           "--set", "flags.networkPolicy=on"], capture_output=True, text=True)
    assert done.returncode != 0
    assert "rbac.networkPolicies" in done.stderr


# ---- values -------------------------------------------------------------------------------------


def test_each_flag_value_becomes_its_operator_flag(helm: str) -> None:
    args = container_args(template(helm, "tfjob-system", "--set", "flags.kubeflowTFJob=on", "--set", "flags.kueue=off",
                                   "--set", "flags.networkPolicy=on", "--set", "flags.clusterDomain=cluster.local",
                                   "--set", "flags.logLevel=debug", "--set", "flags.workers=8",
                                   "--set", "flags.extraArgs={--qps=200}"))
    assert args[args.index("--workers=8") + 1:] == [
        "--kubeflow-tfjob=on", "--kueue=off", "--network-policy=on", "--cluster-domain=cluster.local",
        "--log-level=debug", "--qps=200"]


def test_profiles_are_mounted_from_a_config_map_and_roll_the_pods_when_they_change(helm: str) -> None:
    def render(env_value: str) -> Objects:
        return template(helm, "tfjob-system", "--set", "profiles.profiles[0].name=tf",
                        "--set", "profiles.profiles[0].image=tensorflow/tensorflow*",
                        "--set-string", f"profiles.profiles[0].env.TF_CPP_MIN_LOG_LEVEL={env_value}")
    first, second = render("1"), render("2")
    config_map = first[("ConfigMap", "tfjob-system", "tfjob-operator-profiles")]
    profiles = yaml.safe_load(config_map["data"]["profiles.yaml"])
    assert profiles["profiles"][0]["env"] == {"TF_CPP_MIN_LOG_LEVEL": "1"}
    assert "--profiles=/etc/tfjob-operator/profiles/profiles.yaml" in container_args(first)
    pod = deployment(first)["spec"]["template"]
    assert {"name": "profiles", "configMap": {"name": "tfjob-operator-profiles"}} in pod["spec"]["volumes"]
    assert (pod["metadata"]["annotations"]["checksum/profiles"]
            != deployment(second)["spec"]["template"]["metadata"]["annotations"]["checksum/profiles"])


def test_image_replicas_resources_and_node_placement_come_from_the_values(helm: str) -> None:
    objects = template(helm, "tfjob-system", "--set", "image.repository=registry.example.com/tfjob-operator",
                       "--set", "image.tag=9.9.9", "--set", "replicaCount=3",
                       "--set", "resources.limits.memory=1Gi", "--set", "nodeSelector.pool=system",
                       "--set", "tolerations[0].key=system", "--set", "tolerations[0].operator=Exists",
                       "--set", "priorityClassName=system-cluster-critical")
    spec = deployment(objects)["spec"]
    pod = spec["template"]["spec"]
    assert spec["replicas"] == 3
    assert pod["containers"][0]["image"] == "registry.example.com/tfjob-operator:9.9.9"
    assert pod["containers"][0]["resources"]["limits"]["memory"] == "1Gi"
    assert pod["nodeSelector"] == {"pool": "system"}
    assert pod["tolerations"] == [{"key": "system", "operator": "Exists"}]
    assert pod["priorityClassName"] == "system-cluster-critical"


def test_another_lease_name_is_passed_to_the_operator_and_granted_by_its_role(helm: str) -> None:
    objects = template(helm, "tfjob-system", "--set", "leaderElection.id=team-lease")
    assert "--leader-election-id=team-lease" in container_args(objects)
    role = objects[("Role", "tfjob-system", "tfjob-operator-leader-election")]
    assert [r["resourceNames"] for r in role["rules"] if "resourceNames" in r] == [["team-lease"]]


def test_namespaced_mode_with_kueue_reads_the_two_cluster_scoped_kueue_kinds(helm: str, kubectl: str) -> None:
    objects = template(helm, "team-a", "-f", str(NAMESPACED_VALUES), "--set", "rbac.kueueRead=true")
    role = objects[("ClusterRole", "", "tfjob-operator-team-a-kueue-read")]
    [kustomized] = [o for o in parse((MANIFESTS / "namespaced" / "kueue-read.yaml").read_text())
                    if o["kind"] == "ClusterRole"]
    assert role["rules"] == kustomized["rules"]
    binding = objects[("ClusterRoleBinding", "", "tfjob-operator-team-a-kueue-read")]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "tfjob-operator", "namespace": "team-a"}]


def test_a_release_of_another_name_names_its_objects_after_it(helm: str) -> None:
    done = subprocess.run([helm, "template", "ml", str(CHART), "--namespace", "ml-system"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    objects = by_key(parse(done.stdout))
    assert ("ClusterRole", "", "ml-tfjob-operator") in objects
    binding = objects[("ClusterRoleBinding", "", "ml-tfjob-operator")]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "ml-tfjob-operator", "namespace": "ml-system"}]
    assert deployment(objects)["spec"]["template"]["spec"]["serviceAccountName"] == "ml-tfjob-operator"
