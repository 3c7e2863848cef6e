"""Start-up profiles: operator-wide environment variables and arguments for TensorFlow containers,
chosen by the container's image.

A platform team knows what a TensorFlow version needs at start (an oneDNN switch, an allocator, a
logging level, an XLA flag) better than every job author does. A profile names an image repository
glob and a tag glob (`tensorflow/tensorflow`, `2.1[6-9]*`), optionally roles, and the variables and
arguments to add. For every role, the profiles matching the TensorFlow container's image apply in
the order of the file:

* a variable is added unless the container already has it (the template, or an earlier profile);
* an argument `--flag` or `--flag=value` is added unless the container's args already hold that
  flag. Arguments are only added to a container whose template sets `command` or `args`: appended
  to a container without either, they would replace the image's own CMD.

A job opts out with the annotation `tensorflowjob.kubeflow.org/profiles: "off"`. Pure functions;
the file format and its checks are in `profile_file`.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tfjob_api.names import PREFIX

OPT_OUT_ANNOTATION = f"{PREFIX}/profiles"
OPT_OUT_VALUES = frozenset({"off", "false", "none"})
DOCKER_HUB_PREFIXES = ("docker.io/", "index.docker.io/", "registry-1.docker.io/")


@dataclass(frozen=True)
class Profile:
    name: str
    image: str  # glob on the repository
    tag: str = "*"  # glob on the tag
    roles: tuple[str, ...] = ()  # empty: every role
    env: tuple[tuple[str, str], ...] = ()
    args: tuple[str, ...] = ()


def split_image(image: str) -> tuple[str, str]:
    """(repository, tag) of an image reference. No tag means `latest`; a digest-only reference has
    the tag "". Docker Hub repositories are given without `docker.io/` and `library/`, so
    `docker.io/library/python:3` and `python:3` both read ("python", "3")."""
    reference = image.split("@", 1)[0]
    digest_only = "@" in image
    slash = reference.rfind("/")
    colon = reference.rfind(":")
    if colon > slash:
        repository, tag = reference[:colon], reference[colon + 1:]
    else:
        repository, tag = reference, "" if digest_only else "latest"
    for prefix in DOCKER_HUB_PREFIXES:
        if repository.startswith(prefix):
            repository = repository[len(prefix):]
            repository = repository.removeprefix("library/")
            break
    return repository, tag


def matches(profile: Profile, image: str, role: str) -> bool:
    repository, tag = split_image(image)
    if profile.roles and role not in profile.roles:
        return False
    return fnmatch.fnmatchcase(repository, profile.image) and fnmatch.fnmatchcase(tag, profile.tag)


def opted_out(job: Mapping[str, Any]) -> bool:
    annotations = (job.get("metadata") or {}).get("annotations") or {}
    return str(annotations.get(OPT_OUT_ANNOTATION, "")).strip().lower() in OPT_OUT_VALUES


def _flag(arg: str) -> str | None:
    """`--flag` of `--flag=value` (or `-f`); None for a positional argument."""
    if not arg.startswith("-") or arg in ("-", "--"):
        return None
    return arg.split("=", 1)[0]


def _add_args(container: dict[str, Any], args: Iterable[str]) -> None:
    if "command" not in container and "args" not in container:
        return  # appending would replace the image's CMD
    current = list(container.get("args") or [])
    flags = {_flag(a) for a in [*(container.get("command") or []), *current]} - {None}
    for arg in args:
        flag = _flag(arg)
        if flag is not None and flag in flags:
            continue
        current.append(arg)
        if flag is not None:
            flags.add(flag)
    if current != list(container.get("args") or []):
        container["args"] = current


def apply_profiles(container: Mapping[str, Any], role: str, profiles: Sequence[Profile]) -> dict[str, Any]:
    """The container with every matching profile applied (a new dict; `container` is not changed)."""
    result = dict(container)
    image = str(result.get("image") or "")
    chosen = [p for p in profiles if matches(p, image, role)]
    if not chosen:
        return result
    env = list(result.get("env") or [])
    present = {e.get("name") for e in env}
    for profile in chosen:
        for name, value in profile.env:
            if name not in present:
                env.append({"name": name, "value": value})
                present.add(name)
        _add_args(result, profile.args)
    if env != list(result.get("env") or []):
        result["env"] = env
    return result


def profiles_for(job: Mapping[str, Any], profiles: Sequence[Profile]) -> Sequence[Profile]:
    """The profiles that apply to this job: none when it opted out."""
    return () if opted_out(job) else profiles
