"""The Helm chart (manifests/helm/tfjob-operator/) renders what the kustomize installs render, and
what its values ask for.

Both sides are rendered by the real tools at test time — `helm template` (Helm built from its Go
module by devcluster/build-helm.sh) and `kubectl kustomize` (the local control plane's kubectl) —
so a change to manifests/rbac/, manifests/operator/ or the chart that makes them disagree fails here,
naming the object. The chart adds only Helm's own labels (helm.sh/chart, app.kubernetes.io/managed-by,
instance, version), which are taken off before comparing.

Beyond the drift: values.schema.json refuses what the chart does not read (`helm lint --strict`); the
alert rules the chart renders select its own metrics Service's scrape job whatever the release's
name, and are run through `promtool test rules` (tests/support/alert_rules.py) with that job; the
alert values change the thresholds; the ServiceAccount, pod and container values, the `helm test`
pod and the templated CRD render as documented; the packaged chart holds what it needs.
"""

from __future__ import annotations

import difflib
import json
import os
import pathlib
import re
import shutil
import subprocess
import tarfile
from typing import Any

import pytest
import yaml

from tests.support.alert_rules import RuleTests, promtool_path
from workqueue.metrics import DURATION_BUCKETS

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
    """The release's objects; the `helm test` pod aside (not installed, and kustomize has none)."""
    done = subprocess.run([helm, "template", "tfjob-operator", str(CHART), "--namespace", namespace, "--skip-tests",
                           *args], capture_output=True, text=True)
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
    assert "/rbac/scope" in done.stderr and "'cluster', 'namespace'" in done.stderr


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


# ---- the values' schema -------------------------------------------------------------------------


@pytest.mark.parametrize(("setting", "named"), [
    ("flags.networkpolicy=on", "'networkpolicy' not allowed"),
    ("replicaCount=two", "/replicaCount"),
    ("metrics.prometheusRule.alerts.TFJobOperatorDown.for=five", "/metrics/prometheusRule/alerts/TFJobOperatorDown/for"),
    ("metrics.prometheusRule.alerts.TFJobOperatorWorkQueueBackingUp.p99WaitSeconds=600", "p99WaitSeconds"),
])
def test_helm_lint_strict_refuses_a_value_the_chart_does_not_take(helm: str, setting: str, named: str) -> None:
    done = subprocess.run([helm, "lint", "--strict", str(CHART), "--set", setting], capture_output=True, text=True)
    assert done.returncode != 0
    assert named in done.stdout + done.stderr


def test_a_misspelt_value_in_a_values_file_fails_the_install_render_too(helm: str, tmp_path: pathlib.Path) -> None:
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump({"flags": {"networkpolicy": "on"}}))
    done = subprocess.run([helm, "template", "tfjob-operator", str(CHART), "-f", str(values)],
                          capture_output=True, text=True)
    assert done.returncode != 0
    assert "'networkpolicy' not allowed" in done.stderr


def test_the_schema_keeps_the_queue_wait_threshold_below_the_largest_bucket_the_operator_exports() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())
    alerts = schema["properties"]["metrics"]["properties"]["prometheusRule"]["properties"]["alerts"]
    wait = alerts["properties"]["TFJobOperatorWorkQueueBackingUp"]["properties"]["p99WaitSeconds"]
    [as_number] = [choice for choice in wait["anyOf"] if choice["type"] == "number"]
    assert as_number["exclusiveMaximum"] == max(DURATION_BUCKETS)


# ---- the alert rules ------------------------------------------------------------------------------


def rendered(helm: str, release: str, namespace: str, *args: str) -> Objects:
    done = subprocess.run([helm, "template", release, str(CHART), "--namespace", namespace, *args],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return by_key(parse(done.stdout))


def only(objects: Objects, kind: str) -> dict[str, Any]:
    [found] = [o for (k, _, _), o in objects.items() if k == kind]
    return found


MONITORING = ["--set", "metrics.serviceMonitor.enabled=true", "--set", "metrics.prometheusRule.enabled=true"]


def selected_jobs(rule: dict[str, Any]) -> set[str]:
    return {job for group in rule["spec"]["groups"] for r in group["rules"]
            for job in re.findall(r'job="([^"]*)"', r["expr"])}


@pytest.mark.parametrize(("release", "extra"), [
    ("tfjob-operator", []), ("ml", []), ("ml-tfjob-operator-prod", []), ("team", ["--set", "fullnameOverride=trainer"]),
])
def test_the_rules_select_the_job_the_service_monitor_gives_the_metrics_service_for_any_release_name(
        helm: str, release: str, extra: list[str]) -> None:
    objects = rendered(helm, release, "ml-system", *MONITORING, *extra)
    service = only(objects, "Service")
    monitor = only(objects, "ServiceMonitor")
    # The Prometheus Operator's job label is the name of the Service a ServiceMonitor selects.
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert "jobLabel" not in monitor["spec"]
    assert selected_jobs(only(objects, "PrometheusRule")) == {service["metadata"]["name"]}


def test_the_job_value_overrides_the_job_the_rules_select(helm: str) -> None:
    objects = rendered(helm, "ml", "ml-system", *MONITORING, "--set", "metrics.prometheusRule.job=kubernetes-pods")
    assert selected_jobs(only(objects, "PrometheusRule")) == {"kubernetes-pods"}


@pytest.fixture(scope="module")
def promtool() -> str:
    return promtool_path()


def chart_rules(helm: str, release: str, namespace: str, folder: pathlib.Path, *args: str) -> pathlib.Path:
    """The PrometheusRule's groups the chart renders, as a plain rules file."""
    path = folder / "chart.rules.yaml"
    path.write_text(yaml.safe_dump(only(rendered(helm, release, namespace, *MONITORING, *args), "PrometheusRule")["spec"]))
    return path


def test_a_release_named_otherwise_alerts_on_its_own_operator_being_down_and_not_while_it_is_up(
        helm: str, promtool: str, tmp_path: pathlib.Path) -> None:
    rules = RuleTests(promtool, chart_rules(helm, "ml", "ml-system", tmp_path), tmp_path)
    install = {"namespace": "ml-system", "job": "ml-tfjob-operator-metrics"}

    def up(instance: str) -> str:
        return f'up{{namespace="ml-system", job="ml-tfjob-operator-metrics", instance="{instance}"}}'

    def leader(instance: str) -> str:
        return f'tfjob_leader{{namespace="ml-system", job="ml-tfjob-operator-metrics", instance="{instance}"}}'
    rules.assert_silent({up("a"): "1x12", up("b"): "1x12"}, "TFJobOperatorDown", "10m")
    rules.assert_silent({leader("a"): "1x12", leader("b"): "0x12"}, "TFJobOperatorNoLeader", "10m")
    rules.assert_fires({up("a"): "1 0x11", up("b"): "0x12"}, "TFJobOperatorDown", "10m", install)


def test_alert_values_set_the_thresholds_durations_and_runbooks(helm: str, promtool: str, tmp_path: pathlib.Path) -> None:
    queue = "metrics.prometheusRule.alerts.TFJobOperatorWorkQueueBackingUp"
    path = chart_rules(helm, "tfjob-operator", "tfjob-system", tmp_path,
                       "--set", f"{queue}.depth=200", "--set", f"{queue}.for=5m",
                       "--set", f"{queue}.runbookUrl=https://runbooks.example.com/queue")
    done = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    rules = RuleTests(promtool, path, tmp_path)
    assert rules.rules["TFJobOperatorWorkQueueBackingUp"]["annotations"]["runbook_url"] == \
        "https://runbooks.example.com/queue"
    assert "runbook_url" not in rules.rules["TFJobOperatorDown"]["annotations"]
    depth = 'workqueue_depth{namespace="tfjob-system", job="tfjob-operator-metrics", name="tensorflowjobs"}'
    install = {"namespace": "tfjob-system", "job": "tfjob-operator-metrics"}
    # 150 keys for 7 minutes: above the default 100 but below 200; 250 keys fire after 5 minutes, not 15.
    rules.assert_silent({depth: "150x10"}, "TFJobOperatorWorkQueueBackingUp", "7m")
    rules.assert_fires({depth: "250x10"}, "TFJobOperatorWorkQueueBackingUp", "7m", install)


def test_every_threshold_value_replaces_its_number_in_the_rules(helm: str) -> None:
    defaults = yaml.safe_load((CHART / "values.yaml").read_text())["metrics"]["prometheusRule"]["alerts"]
    settings = [f"metrics.prometheusRule.alerts.{alert}.{name}=0.{index + 1}7"
                for index, (alert, values) in enumerate(sorted(defaults.items()))
                for name in values if name not in ("for", "runbookUrl")]
    rule = only(rendered(helm, "tfjob-operator", "tfjob-system", *MONITORING,
                         *[arg for setting in settings for arg in ("--set", setting)]), "PrometheusRule")
    exprs = {r["alert"]: r["expr"] for group in rule["spec"]["groups"] for r in group["rules"]}
    for setting in settings:
        alert, name, number = re.fullmatch(r"metrics\.prometheusRule\.alerts\.(\w+)\.(\w+)=(.*)", setting).groups()
        assert re.search(rf"[<>]=?\s*{re.escape(number)}\s*#\s*{name}\b", exprs[alert]), (alert, name, exprs[alert])


# ---- the ServiceAccount, the pods, the operator container --------------------------------------------


def test_an_existing_service_account_is_bound_and_used_instead_of_the_charts(helm: str) -> None:
    objects = template(helm, "tfjob-system", "--set", "serviceAccount.create=false", "--set", "serviceAccount.name=ml-sa",
                       "--set", "imagePullSecrets[0].name=registry")
    assert not [key for key in objects if key[0] == "ServiceAccount"]
    pod = deployment(objects)["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "ml-sa"
    assert pod["imagePullSecrets"] == [{"name": "registry"}]  # not on a ServiceAccount of the chart's
    for kind, name in (("ClusterRoleBinding", "tfjob-operator"), ("RoleBinding", "tfjob-operator-leader-election")):
        binding = next(o for (k, _, n), o in objects.items() if k == kind and n == name)
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "ml-sa", "namespace": "tfjob-system"}]


def test_the_service_account_name_value_names_the_charts_service_account(helm: str) -> None:
    objects = template(helm, "tfjob-system", "--set", "serviceAccount.name=trainer-operator")
    assert ("ServiceAccount", "tfjob-system", "trainer-operator") in objects
    assert deployment(objects)["spec"]["template"]["spec"]["serviceAccountName"] == "trainer-operator"


def test_pod_labels_go_on_the_pods_and_never_into_the_selector(helm: str) -> None:
    spec = deployment(template(helm, "tfjob-system", "--set", "podLabels.team=ml"))["spec"]
    assert spec["template"]["metadata"]["labels"]["team"] == "ml"
    assert "team" not in spec["selector"]["matchLabels"]
    done = subprocess.run([helm, "template", str(CHART), "--set", "podLabels.app\\.kubernetes\\.io/component=x"],
                          capture_output=True, text=True)
    assert done.returncode != 0
    assert "podLabels may not set app.kubernetes.io/component" in done.stderr


def test_extra_env_volumes_and_mounts_are_added_to_the_operator(helm: str, tmp_path: pathlib.Path) -> None:
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump({
        "extraEnv": [{"name": "HTTPS_PROXY", "value": "http://proxy:3128"}],
        "extraEnvFrom": [{"configMapRef": {"name": "proxy"}}],
        "extraVolumes": [{"name": "ca", "configMap": {"name": "corporate-ca"}}],
        "extraVolumeMounts": [{"name": "ca", "mountPath": "/etc/ssl/corporate", "readOnly": True}],
    }))
    pod = deployment(template(helm, "tfjob-system", "-f", str(values)))["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert [e["name"] for e in container["env"]] == ["POD_NAMESPACE", "HTTPS_PROXY"]
    assert container["envFrom"] == [{"configMapRef": {"name": "proxy"}}]
    assert {"name": "ca", "configMap": {"name": "corporate-ca"}} in pod["volumes"]
    assert {"name": "ca", "mountPath": "/etc/ssl/corporate", "readOnly": True} in container["volumeMounts"]
    assert {"name": "tmp", "mountPath": "/tmp"} in container["volumeMounts"]


def test_security_context_values_are_merged_into_the_restricted_defaults(helm: str) -> None:
    pod = deployment(template(helm, "tfjob-system", "--set", "podSecurityContext.fsGroup=2000",
                              "--set", "securityContext.runAsUser=1001",
                              "--set", "securityContext.readOnlyRootFilesystem=null"))["spec"]["template"]["spec"]
    assert pod["securityContext"] == {"runAsNonRoot": True, "runAsUser": 65532, "runAsGroup": 65532, "fsGroup": 2000,
                                      "seccompProfile": {"type": "RuntimeDefault"}}
    assert pod["containers"][0]["securityContext"] == {
        "allowPrivilegeEscalation": False, "privileged": False, "runAsNonRoot": True, "runAsUser": 1001,
        "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}}


def test_without_leader_election_one_replica_runs_without_the_flag_and_the_lease_role(helm: str) -> None:
    objects = template(helm, "tfjob-system", "--set", "leaderElection.enabled=false", "--set", "replicaCount=1")
    assert "--leader-elect" not in container_args(objects)
    assert deployment(objects)["spec"]["replicas"] == 1
    assert not [key for key in objects if key[0] == "Role"]


def test_without_leader_election_more_than_one_replica_is_refused(helm: str) -> None:
    done = subprocess.run([helm, "template", str(CHART), "--set", "leaderElection.enabled=false"],
                          capture_output=True, text=True)
    assert done.returncode != 0
    assert "leaderElection.enabled=false needs replicaCount=1" in done.stderr


# ---- helm test --------------------------------------------------------------------------------------


def helm_test_pod(helm: str, *args: str) -> dict[str, Any]:
    done = subprocess.run([helm, "template", "ml", str(CHART), "--namespace", "ml-system",
                           "--show-only", "templates/tests/leader-serving.yaml", *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    [pod] = parse(done.stdout)
    return pod


def test_helm_test_runs_a_pod_of_the_operator_image_against_the_metrics_service(helm: str) -> None:
    pod = helm_test_pod(helm, "--set", "image.repository=registry.example.com/tfjob-operator", "--set", "image.tag=1.2.3",
                   "--set", "metrics.port=9090")
    assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    [container] = pod["spec"]["containers"]
    assert container["image"] == "registry.example.com/tfjob-operator:1.2.3"
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env["METRICS_URL"] == "http://ml-tfjob-operator-metrics.ml-system.svc:9090/metrics"
    assert pod["spec"]["restartPolicy"] == "Never"
    # The release namespace enforces the "restricted" Pod Security Standard: so does the test pod.
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True


def test_helm_test_is_left_out_without_the_metrics_service(helm: str) -> None:
    for setting in ("metrics.service.enabled=false", "tests.enabled=false"):
        done = subprocess.run([helm, "template", "ml", str(CHART), "--set", setting], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert not [o for o in parse(done.stdout) if "helm.sh/hook" in (o["metadata"].get("annotations") or {})]


# ---- the CRD --------------------------------------------------------------------------------------


def test_the_templated_crd_is_the_crds_folders_kept_on_uninstall(helm: str) -> None:
    off = rendered(helm, "tfjob-operator", "tfjob-system", "--skip-tests")
    assert not [key for key in off if key[0] == "CustomResourceDefinition"]
    crd = only(rendered(helm, "tfjob-operator", "tfjob-system", "--set", "crds.templated=true"),
               "CustomResourceDefinition")
    assert crd["metadata"].pop("annotations") == {"helm.sh/resource-policy": "keep"}
    [shipped] = parse((CHART / "crds" / "tensorflowjobs.kubeflow.org.yaml").read_text())
    assert crd == shipped  # Helm's own labels were taken off by by_key


# ---- the packaged chart -----------------------------------------------------------------------------


def test_the_packaged_chart_lints_renders_and_points_at_no_repository_path(helm: str, tmp_path: pathlib.Path) -> None:
    done = subprocess.run([helm, "package", str(CHART), "--destination", str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    [archive] = tmp_path.glob("tfjob-operator-*.tgz")
    with tarfile.open(archive) as tar:
        names = set(tar.getnames())
        notes = tar.extractfile("tfjob-operator/templates/NOTES.txt").read().decode()  # type: ignore[union-attr]
    assert {"tfjob-operator/values.schema.json", "tfjob-operator/templates/tests/leader-serving.yaml",
            "tfjob-operator/files/tfjob-operator.rules.yaml", "tfjob-operator/crds/tensorflowjobs.kubeflow.org.yaml"} <= names
    # What NOTES.txt tells the user to run must work from the packaged chart alone.
    assert not re.findall(r"\b(?:manifests|docs|hack|devcluster|tests)/", notes)
    done = subprocess.run([helm, "lint", "--strict", str(archive)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    done = subprocess.run([helm, "template", "ml", str(archive), *MONITORING, "--set", "crds.templated=true"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert {o["kind"] for o in parse(done.stdout)} >= {"Deployment", "PrometheusRule", "CustomResourceDefinition", "Pod"}
