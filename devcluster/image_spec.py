"""What an image is, apart from building it: names, the OCI documents, the Dockerfile, command lines.

devcluster/images.py builds the devcluster's images and imports them into containerd; this module
holds the pure parts it works from, so they can be read and unit-tested without root, mmdebstrap
or containerd: the image names, the OCI image config, manifest and index of a one-layer image,
the parser that reads the operator image out of the repository's Dockerfile (BuildKit heredocs
included), and the mmdebstrap, chroot, tar and ctr command lines with the parsing of `ctr images
ls`. Nothing here touches the file system or runs a process; images.py does both. It is a module
of its own because images.py grew past the project's 600 lines, and this is the part of it that
stands apart: data in, documents and argument lists out.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PAUSE_NAME = "registry.k8s.io/pause:3.10"
TENSORFLOW_NAME = "docker.io/tensorflow/tensorflow:2.21.0"
# The older TensorFlow the start-up profiles are tried on (Keras 2 as tf.keras; Python 3.11 supported).
TENSORFLOW_215_NAME = "docker.io/tensorflow/tensorflow:2.15.1"
ARGOEXEC_NAME = "quay.io/argoproj/argoexec:v4.0.5"  # the Argo executor, what workflow pods run
OPERATOR_NAME = "docker.io/library/tfjob-operator:0.1.0"

DEBIAN_SUITE = "bookworm"
DEBIAN_MIRROR = "http://deb.debian.org/debian"
BASE_PACKAGES = ("python3", "python3-venv", "python-is-python3", "ca-certificates", "procps")
# Documentation, manual pages and translations are of no use in an image (about 50 MB).
DPKG_EXCLUDES = ("/usr/share/doc/*", "/usr/share/man/*", "/usr/share/info/*", "/usr/share/locale/*")

BASE_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}
OPERATOR_USER_NAME = "tfjob"
NAMESPACE = "k8s.io"

LAYER_MEDIA_TYPE = "application/vnd.oci.image.layer.v1.tar+gzip"
CONFIG_MEDIA_TYPE = "application/vnd.oci.image.config.v1+json"
MANIFEST_MEDIA_TYPE = "application/vnd.oci.image.manifest.v1+json"
INDEX_MEDIA_TYPE = "application/vnd.oci.image.index.v1+json"


@dataclass(frozen=True)
class ImageSpec:
    """The runtime configuration of an image (the `config` of an OCI image config)."""

    name: str
    entrypoint: tuple[str, ...] = ()
    cmd: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    user: str = ""
    workdir: str = "/"
    exposed_ports: tuple[str, ...] = ()


def tag_of(name: str) -> str:
    """The tag of a reference: registry.k8s.io/pause:3.10 -> 3.10 (a port is not a tag)."""
    last = name.rsplit("/", 1)[-1]
    return last.rsplit(":", 1)[1] if ":" in last else "latest"


def descriptor(media_type: str, data: bytes) -> dict[str, Any]:
    return {"mediaType": media_type, "digest": "sha256:" + hashlib.sha256(data).hexdigest(), "size": len(data)}


def canonical_json(document: Mapping[str, Any]) -> bytes:
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()


def image_config(spec: ImageSpec, diff_id: str) -> dict[str, Any]:
    """The OCI image config of a one-layer image."""
    config: dict[str, Any] = {"Env": [f"{k}={v}" for k, v in spec.env], "WorkingDir": spec.workdir}
    if spec.entrypoint:
        config["Entrypoint"] = list(spec.entrypoint)
    if spec.cmd:
        config["Cmd"] = list(spec.cmd)
    if spec.user:
        config["User"] = spec.user
    if spec.exposed_ports:
        config["ExposedPorts"] = {port if "/" in port else f"{port}/tcp": {} for port in spec.exposed_ports}
    return {
        "architecture": "amd64",
        "os": "linux",
        "config": config,
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        "history": [{"created_by": "devcluster/images.py", "comment": spec.name}],
    }


def image_manifest(config: Mapping[str, Any], layer: Mapping[str, Any]) -> dict[str, Any]:
    return {"schemaVersion": 2, "mediaType": MANIFEST_MEDIA_TYPE, "config": dict(config), "layers": [dict(layer)]}


def image_index(manifest: Mapping[str, Any], name: str) -> dict[str, Any]:
    """index.json: the full name makes `ctr import` name the image exactly, with no alias."""
    entry = dict(manifest)
    entry["platform"] = {"architecture": "amd64", "os": "linux"}
    entry["annotations"] = {"io.containerd.image.name": name, "org.opencontainers.image.ref.name": tag_of(name)}
    return {"schemaVersion": 2, "mediaType": INDEX_MEDIA_TYPE, "manifests": [entry]}


@dataclass(frozen=True)
class Instruction:
    keyword: str  # upper case: FROM, COPY, ENV, ...
    args: str  # continuation lines joined
    heredocs: tuple[tuple[str, str], ...] = ()  # (name, body)


HEREDOC = re.compile(r"<<-?([\"']?)([A-Za-z_][A-Za-z0-9_]*)\1")


def parse_dockerfile(text: str) -> list[Instruction]:
    """Split a Dockerfile into instructions: comments dropped, continuations joined, heredocs read."""
    lines = text.splitlines()
    instructions: list[Instruction] = []
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        i += 1
        if not line or line.startswith("#"):
            continue
        while line.endswith("\\") and i < len(lines):
            following = lines[i].strip()
            i += 1
            if not following.startswith("#"):
                line = line[:-1].rstrip() + " " + following
        heredocs: list[tuple[str, str]] = []
        for match in HEREDOC.finditer(line):
            body: list[str] = []
            while i < len(lines) and lines[i] != match.group(2):
                body.append(lines[i])
                i += 1
            i += 1
            heredocs.append((match.group(2), "".join(b + "\n" for b in body)))
        keyword, _, args = line.partition(" ")
        instructions.append(Instruction(keyword.upper(), args.strip(), tuple(heredocs)))
    return instructions


def expand(value: str, env: Mapping[str, str]) -> str:
    """Docker's $NAME / ${NAME} substitution from the values set before the instruction."""
    return re.sub(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", lambda m: env.get(m.group(1), ""), value)


@dataclass(frozen=True)
class DockerfileImage:
    """What the Dockerfile puts into the operator image, as this module reproduces it."""

    constraints: str  # the constraints heredoc of the build stage
    sources: tuple[str, ...]  # context paths the build stage copies (what `pip install .` sees)
    files: tuple[tuple[str, str], ...]  # (context path, image path) the final stage copies
    spec: ImageSpec


def split_stages(instructions: Sequence[Instruction]) -> list[list[Instruction]]:
    stages: list[list[Instruction]] = []
    for instruction in instructions:
        if instruction.keyword == "FROM":
            stages.append([])
        elif stages:
            stages[-1].append(instruction)
    return stages


def copy_paths(instruction: Instruction) -> tuple[list[str], str] | None:
    """(sources, destination) of a COPY from the build context; None for heredocs and --from."""
    words = shlex.split(instruction.args)
    if instruction.heredocs or any(w.startswith("--from") for w in words):
        return None
    words = [w for w in words if not w.startswith("--")]
    return words[:-1], words[-1]


def read_dockerfile(text: str, name: str = OPERATOR_NAME) -> DockerfileImage:
    stages = split_stages(parse_dockerfile(text))
    build, final = stages[0], stages[-1]
    constraints = next(body for i in build if i.keyword == "COPY" for h, body in i.heredocs if h == "CONSTRAINTS")
    sources = [src.rstrip("/") for i in build if i.keyword == "COPY" and (c := copy_paths(i)) for src in c[0]]
    files: list[tuple[str, str]] = []
    env = dict(BASE_ENV)
    user, entrypoint, ports = "", (), []
    for instruction in final:
        if instruction.keyword == "ENV":
            before = dict(env)
            for word in shlex.split(instruction.args):
                key, _, value = word.partition("=")
                env[key] = expand(value, before)
        elif instruction.keyword == "COPY" and (copied := copy_paths(instruction)):
            files += [(src, copied[1]) for src in copied[0]]
        elif instruction.keyword == "USER":
            user = instruction.args
        elif instruction.keyword == "ENTRYPOINT":
            entrypoint = tuple(json.loads(instruction.args))
        elif instruction.keyword == "EXPOSE":
            ports += instruction.args.split()
    spec = ImageSpec(name, entrypoint=entrypoint, env=tuple(env.items()), user=user, exposed_ports=tuple(ports))
    return DockerfileImage(constraints, tuple(sources), tuple(files), spec)


def user_entries(user: str, name: str = OPERATOR_USER_NAME) -> tuple[str, str]:
    """The /etc/passwd and /etc/group lines for a numeric USER uid:gid, as the Dockerfile's useradd."""
    uid, _, gid = user.partition(":")
    gid = gid or uid
    return f"{name}:x:{uid}:{gid}::/nonexistent:/usr/sbin/nologin\n", f"{name}:x:{gid}:\n"


def mmdebstrap_command(target: Path) -> list[str]:
    dpkg = [f"--dpkgopt=path-exclude={p}" for p in DPKG_EXCLUDES]
    return [
        "mmdebstrap",
        "--variant=minbase",
        "--include=" + ",".join(BASE_PACKAGES),
        *dpkg,
        "--dpkgopt=path-include=/usr/share/doc/*/copyright",
        DEBIAN_SUITE,
        str(target),
        DEBIAN_MIRROR,
    ]


def chroot_command(
    rootfs: Path, argv: Sequence[str], env: Mapping[str, str], binds: Mapping[str, str] | None = None
) -> list[str]:
    """Run argv in rootfs with /dev, /proc and binds (host path -> path in rootfs) mounted.

    The mounts live in a private mount namespace (unshare), so they vanish with the command and
    never show on the host, whatever happens to it.
    """
    root = shlex.quote(str(rootfs))
    script = ["set -e", f"mount --rbind /dev {root}/dev", f"mount -t proc proc {root}/proc"]
    for host, inside in (binds or {}).items():
        target = f"{root}/{inside.lstrip('/')}"
        script += [f"mkdir -p {shlex.quote(target)}", f"mount --bind {shlex.quote(host)} {shlex.quote(target)}"]
    command = ["chroot", str(rootfs), "/usr/bin/env", "-i", *(f"{k}={v}" for k, v in env.items()), *argv]
    script.append("exec " + shlex.join(command))
    return ["unshare", "--mount", "--propagation", "private", "--fork", "--", "sh", "-c", "\n".join(script)]


def tar_command(rootfs: Path) -> list[str]:
    """The layer: the whole root filesystem; /dev, /proc and /sys are the runtime's to fill."""
    excludes = [f"--exclude=./{d}/*" for d in ("dev", "proc", "sys", "tmp")]
    return ["tar", "--create", "--file=-", "--numeric-owner", "--sort=name", *excludes, "-C", str(rootfs), "."]


def ctr_command(ctr: str, address: str, *args: str) -> list[str]:
    return [ctr, "--address", address, "--namespace", NAMESPACE, *args]


def parse_image_list(text: str) -> dict[str, str]:
    """Names to digests from `ctr images ls` (REF TYPE DIGEST SIZE PLATFORMS LABELS)."""
    images: dict[str, str] = {}
    for line in text.splitlines()[1:]:
        words = line.split()
        if len(words) >= 3 and words[2].startswith("sha256:"):
            images[words[0]] = words[2]
    return images


def aliases_to_remove(images: Mapping[str, str], digest: str) -> list[str]:
    """The `import-<date>:<tag>` names `ctr import` may have made for this digest."""
    return sorted(n for n, d in images.items() if d == digest and n.startswith("import-"))
