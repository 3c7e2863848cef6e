"""Start-up profiles: which images they match, what they add, what they never override, and how a bad
profiles file is reported (naming the entry)."""

from __future__ import annotations

from typing import Any

import pytest

from controller.job.builders import build_pods
from controller.job.kinds import TENSORFLOWJOB
from controller.job.profile_file import ProfileError, parse_profiles
from controller.job.profiles import Profile, apply_profiles, matches, split_image
from tests.support.jobs import container, role, tfjob
from tfjob_api.defaults import apply_defaults

ONEDNN = Profile(name="onednn", image="tensorflow/tensorflow", tag="2.1[6-9]*", env=(("TF_ENABLE_ONEDNN_OPTS", "0"),))


@pytest.mark.parametrize(("image", "expected"), [
    ("tensorflow/tensorflow:2.21.0", ("tensorflow/tensorflow", "2.21.0")),
    ("tensorflow/tensorflow", ("tensorflow/tensorflow", "latest")),
    ("docker.io/tensorflow/tensorflow:2.16.1-gpu", ("tensorflow/tensorflow", "2.16.1-gpu")),
    ("docker.io/library/python:3.11", ("python", "3.11")),
    ("registry.local:5000/ml/tf:2.17", ("registry.local:5000/ml/tf", "2.17")),
    ("registry.local:5000/ml/tf", ("registry.local:5000/ml/tf", "latest")),
    ("nvcr.io/nvidia/tensorflow:24.01-tf2-py3@sha256:abc", ("nvcr.io/nvidia/tensorflow", "24.01-tf2-py3")),
    ("ghcr.io/team/tf@sha256:abc", ("ghcr.io/team/tf", "")),
])
def test_an_image_splits_into_repository_and_tag(image: str, expected: tuple[str, str]) -> None:
    assert split_image(image) == expected


@pytest.mark.parametrize(("image", "role", "expected"), [
    ("tensorflow/tensorflow:2.16.1", "worker", True),
    ("tensorflow/tensorflow:2.19.0-gpu", "chief", True),
    ("tensorflow/tensorflow:2.15.0", "worker", False),
    ("tensorflow/tensorflow:2.21.0", "worker", False),
    ("my/tensorflow/tensorflow:2.16.1", "worker", False),
    ("tensorflow/tensorflow", "worker", False),
])
def test_a_profile_matches_repository_and_tag_globs(image: str, role: str, expected: bool) -> None:
    assert matches(ONEDNN, image, role) is expected


def test_a_profile_limited_to_roles_skips_the_others() -> None:
    workers_only = Profile(name="w", image="*", roles=("worker",), env=(("A", "1"),))
    assert matches(workers_only, "tf:1", "worker")
    assert not matches(workers_only, "tf:1", "ps")


def test_matching_profiles_add_their_variables_in_file_order_and_the_first_wins() -> None:
    later = Profile(name="later", image="*", env=(("TF_ENABLE_ONEDNN_OPTS", "1"), ("TF_CPP_MIN_LOG_LEVEL", "2")))
    result = apply_profiles(container("tensorflow/tensorflow:2.17.0"), "worker", [ONEDNN, later])
    assert result["env"] == [{"name": "TF_ENABLE_ONEDNN_OPTS", "value": "0"},
                             {"name": "TF_CPP_MIN_LOG_LEVEL", "value": "2"}]


def test_a_variable_the_template_sets_is_never_overridden() -> None:
    own = container("tensorflow/tensorflow:2.17.0", env=[{"name": "TF_ENABLE_ONEDNN_OPTS", "value": "1"}])
    assert apply_profiles(own, "worker", [ONEDNN])["env"] == [{"name": "TF_ENABLE_ONEDNN_OPTS", "value": "1"}]


def test_arguments_are_appended_unless_the_flag_is_already_there() -> None:
    profile = Profile(name="a", image="*", args=("--log_every=100", "--xla", "extra"))
    own = container("tf:1", command=["python", "train.py"], args=["--xla=false"])
    assert apply_profiles(own, "worker", [profile])["args"] == ["--xla=false", "--log_every=100", "extra"]


def test_arguments_are_not_added_where_they_would_replace_the_images_command() -> None:
    profile = Profile(name="a", image="*", args=("--log_every=100",))
    assert "args" not in apply_profiles(container("tf:1"), "worker", [profile])


def test_an_unmatched_container_is_returned_unchanged() -> None:
    plain = container("pytorch/pytorch:2.5")
    assert apply_profiles(plain, "worker", [ONEDNN]) == plain


def job(annotations: dict[str, str] | None = None) -> dict[str, Any]:
    worker = role(1, containers=[container("proxy:1", name="sidecar"), container("tensorflow/tensorflow:2.17.0")])
    metadata = {"namespace": "ns", **({"annotations": annotations} if annotations else {})}
    return apply_defaults(tfjob("j", {"worker": worker}, **metadata))


def test_only_the_tensorflow_container_gets_a_profile() -> None:
    everything = Profile(name="all", image="*", env=(("X", "1"),))
    sidecar, tensorflow = build_pods(job(), "", [everything], TENSORFLOWJOB)[0]["spec"]["containers"]
    assert "env" not in sidecar
    assert {"name": "X", "value": "1"} in tensorflow["env"]


def test_a_job_opts_out_with_its_annotation() -> None:
    opted_out = job({"tensorflowjob.kubeflow.org/profiles": "off"})
    tensorflow = build_pods(opted_out, "", [ONEDNN], TENSORFLOWJOB)[0]["spec"]["containers"][1]
    assert [e["name"] for e in tensorflow["env"]] == ["TF_CONFIG"]


# ---- the file -------------------------------------------------------------------------------------


def test_a_valid_file_parses_into_profiles_in_order() -> None:
    document = {"profiles": [
        {"name": "onednn", "image": "tensorflow/tensorflow", "tag": "2.1[6-9]*", "env": {"TF_ENABLE_ONEDNN_OPTS": "0"}},
        {"name": "quiet", "image": "*", "roles": ["worker"], "args": ["--v=0"]},
    ]}
    assert parse_profiles(document) == (
        ONEDNN, Profile(name="quiet", image="*", tag="*", roles=("worker",), args=("--v=0",)))


@pytest.mark.parametrize(("entry", "message"), [
    ({"name": "a", "env": {"X": "1"}}, "profiles[0] (a): 'image' is a required property"),
    ({"name": "a", "image": "*"}, "profiles[0] (a): needs env or args (a profile that adds nothing is a mistake)"),
    ({"name": "a", "image": "*", "env": {"X": 1}}, "profiles[0] (a).env.X: 1 is not of type 'string'"),
    ({"name": "a", "image": "*", "env": {"1 BAD": "x"}}, "profiles[0] (a).env: '1 BAD' is not a valid environment "
                                                          "variable name"),
    ({"name": "a", "image": "*", "roles": ["master"], "env": {"X": "1"}},
     "profiles[0] (a).roles[0]: 'master' is not a role; roles are chief, ps, worker, evaluator"),
    ({"name": "a", "image": "*", "tags": "2.*", "env": {"X": "1"}},
     "profiles[0] (a): unknown field tags; allowed: args, env, image, name, roles, tag"),
])
def test_a_bad_entry_is_reported_by_position_and_name(entry: dict[str, Any], message: str) -> None:
    with pytest.raises(ProfileError) as raised:
        parse_profiles({"profiles": [entry]})
    assert str(raised.value) == message


def test_a_name_used_twice_is_reported_at_its_second_use() -> None:
    entry = {"name": "same", "image": "*", "env": {"X": "1"}}
    with pytest.raises(ProfileError) as raised:
        parse_profiles({"profiles": [entry, {**entry, "image": "tf"}]})
    assert str(raised.value) == "profiles[1] (same).name: the name is already used by profiles[0]"


@pytest.mark.parametrize(("document", "message"), [
    (None, "the file is empty; it needs `profiles: [...]`"),
    ({"profile": []}, "the file: 'profiles' is a required property"),
    ([{"name": "a"}], "the file: [{'name': 'a'}] is not of type 'object'"),
])
def test_a_file_of_the_wrong_shape_is_reported(document: Any, message: str) -> None:
    with pytest.raises(ProfileError) as raised:
        parse_profiles(document)
    assert str(raised.value) == message
