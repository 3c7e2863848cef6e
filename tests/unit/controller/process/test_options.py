"""The controller's options: `run` with no flags builds exactly `ControllerOptions()`, so a controller
built with the defaults (as the unit tests build it) runs production's configuration."""

from __future__ import annotations

from controller.job.profiles import Profile
from controller.options import DEFAULTS, ControllerOptions
from controller.process.app import controller_options
from controller.process.cli import build_parser


def test_run_without_flags_is_the_default_options() -> None:
    assert controller_options(build_parser().parse_args(["run"]), ()) == DEFAULTS == ControllerOptions()


def test_every_controller_flag_reaches_the_options() -> None:
    args = build_parser().parse_args([
        "run", "--namespace", "a", "--namespace", "b", "--workers", "4", "--cluster-domain", "cluster.local",
        "--resync", "0", "--kueue", "off", "--kubeflow-tfjob", "on", "--kubeflow-tfjob-without-managed-by", "leave",
        "--network-policy", "on", "--gang-scheduler", "volcano", "--gang-scheduler-name", "volcano-batch"])
    profile = Profile(name="tf2", image="tensorflow/tensorflow", tag="2.*")
    options = controller_options(args, [profile])
    assert options == ControllerOptions(
        namespaces=("a", "b"), workers=4, cluster_domain="cluster.local", resync=0.0, kueue="off",
        kubeflow_tfjob="on", kubeflow_tfjob_without_managed_by="leave", network_policy="on", profiles=(profile,),
        gang_scheduler="volcano", gang_scheduler_name="volcano-batch")
    assert options.gang is not None and options.gang.scheduler_name == "volcano-batch"
    assert not options.watch_nodes and options.use_kueue is False and options.serve_tfjobs is True
    assert not options.serve_unmanaged_tfjobs and options.network_policy_default
    assert options.create_parallelism == 16


def test_the_defaults_watch_nodes_and_discover_kueue_and_tfjobs() -> None:
    assert DEFAULTS.watch_nodes and DEFAULTS.use_kueue is None and DEFAULTS.serve_tfjobs is None
    assert DEFAULTS.serve_unmanaged_tfjobs and not DEFAULTS.network_policy_default
    assert DEFAULTS.create_parallelism == 64
    assert DEFAULTS.gang is None
