"""Build the container images a devcluster with real nodes needs, as OCI archives for `ctr import`.

Real nodes run a kubelet on containerd, which must find every image locally: the machine has no
Docker engine and reaches no container registry (only PyPI, the Debian mirror and the Go module
proxy). So the images are built here from those sources, each into an OCI image-layout tar
that `ctr -n k8s.io images import` takes as it is:

* pause (`registry.k8s.io/pause:3.10`, containerd's sandbox_image): a static Go binary,
  images/pause/main.go, that waits for SIGINT/SIGTERM and reaps zombies like Kubernetes' pause.
* tensorflow (`docker.io/tensorflow/tensorflow:2.21.0`, what the examples name): a Debian 12
  root filesystem from mmdebstrap with tensorflow-cpu in a virtualenv at /opt/venv.
* operator (`docker.io/library/tfjob-operator:0.1.0`, what manifests/operator/ deploys): what the
  repository's Dockerfile produces, on the same Debian base.
* tensorflow-2.15 (`docker.io/tensorflow/tensorflow:2.15.1`): the same with tensorflow-cpu 2.15.1
  (Keras 2 as tf.keras), the second version the start-up profiles are tried on.
* argoexec (`quay.io/argoproj/argoexec:v4.0.5`): Argo's executor, the static binary that
  hack/build-argo.sh builds, with CA certificates and /tmp, as Argo's own distroless image has.

Why the operator image is not built from the Dockerfile: there is no Docker engine nor BuildKit,
the Dockerfile uses BuildKit's heredoc syntax (`COPY <<CONSTRAINTS`), which Debian's buildah 1.28
does not parse, and its `FROM python:3.11.7-slim-bookworm` needs a registry anyway. The Dockerfile
stays the one source of truth for what goes into the image: the constraints heredoc, the source
paths it copies, the files and ENV of the final stage, USER, EXPOSE and ENTRYPOINT are parsed out
of it. Only the base differs: Debian's python3 (3.11) instead of python.org's 3.11.7 build.

Why by hand rather than with umoci: an image here is one layer (a tar of a root filesystem), so the
layout is a config, a manifest and an index of a few lines each; writing them is shorter, and the
pure parts (names, descriptors, config, Dockerfile parsing, ctr command lines) are unit-tested;
they live in devcluster/image_spec.py, this module keeps the cache, the builders and the import.
The manifest is annotated with `io.containerd.image.name`, so `ctr import` names the image exactly
and makes no `import-<date>:<tag>` alias (which the CRI plugin would try, and fail, to resolve);
import_image still removes such aliases, as an import with `--index-name` can leave them.

Builds are cached under $XDG_CACHE_HOME/tfjob-operator/images/ (default ~/.cache/...), one archive
per key: the pinned versions and builder inputs, and for the operator a hash of the sources and the
Dockerfile. mmdebstrap, chroot and mount need root, as running real nodes does anyway.
"""

from __future__ import annotations

import argparse
import fcntl
import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, BinaryIO

from devcluster.image_spec import (
    ARGOEXEC_NAME,
    BASE_ENV,
    BASE_PACKAGES,
    CONFIG_MEDIA_TYPE,
    DEBIAN_MIRROR,
    DEBIAN_SUITE,
    DPKG_EXCLUDES,
    INDEX_MEDIA_TYPE,
    LAYER_MEDIA_TYPE,
    MANIFEST_MEDIA_TYPE,
    PAUSE_NAME,
    TENSORFLOW_215_NAME,
    TENSORFLOW_NAME,
    DockerfileImage,
    ImageSpec,
    aliases_to_remove,
    canonical_json,
    chroot_command,
    ctr_command,
    descriptor,
    image_config,
    image_index,
    image_manifest,
    mmdebstrap_command,
    parse_image_list,
    read_dockerfile,
    tar_command,
    user_entries,
)

REPO_DIR = Path(__file__).resolve().parent.parent
PAUSE_DIR = Path(__file__).resolve().parent / "images" / "pause"
DOCKERFILE = REPO_DIR / "Dockerfile"
BUILD_ARGO = REPO_DIR / "hack" / "build-argo.sh"

TENSORFLOW_REQUIREMENT = "tensorflow-cpu==2.21.0"
# The older TensorFlow of the start-up profile tests: the last 2.15 (Keras 2 as tf.keras), which
# supports the base's Python 3.11; pip picks the Keras 2.15 and numpy < 2 it asks for.
TENSORFLOW_215_REQUIREMENT = "tensorflow-cpu==2.15.1"
IMAGES = ("pause", "tensorflow", "tensorflow-2.15", "operator", "argoexec")

# Bump to rebuild every image after a change to how they are built.
BUILD_FORMAT = "2"

VENV = "/opt/venv"


@dataclass(frozen=True)
class ImageArchive:
    """One built image: its OCI archive, and what identifies it in containerd."""

    name: str  # the full reference, e.g. docker.io/tensorflow/tensorflow:2.21.0
    path: Path  # the OCI image-layout tar
    digest: str  # the manifest's digest, what `ctr images ls` shows for the name
    size: int  # bytes of the archive
    build_seconds: float  # how long the build that made it took
    index_digest: str = ""  # the digest of index.json: the name's target after `import --index-name`
    built_now: bool = False  # False: taken from the cache


# ---------------------------------------------------------------------------------------------
# Cache keys (names, OCI documents, the Dockerfile and command lines: devcluster/image_spec.py).


def default_cache_dir() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "tfjob-operator" / "images"


def cache_key(*parts: str | bytes) -> str:
    """A short hash of the parts; each is length-prefixed so ("ab", "c") != ("a", "bc")."""
    h = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(f"{len(data)}:".encode())
        h.update(data)
    return h.hexdigest()[:16]


def source_files(root: Path, paths: Iterable[str]) -> list[Path]:
    """The files under the given paths of root, sorted, without caches and build leftovers. A link
    is one entry of its own (COPY copies links as links; client/ links to the packages)."""
    files: list[Path] = []
    for rel in paths:
        top = root / rel
        candidates = [top] if top.is_file() else (p for p in top.rglob("*") if p.is_file() or p.is_symlink())
        for path in candidates:
            parts = path.relative_to(root).parts
            if any(p == "__pycache__" or p.endswith(".egg-info") for p in parts) or path.suffix == ".pyc":
                continue
            files.append(path)
    return sorted(set(files))


def tree_digest(root: Path, paths: Iterable[str]) -> str:
    """A hash of the names and contents of the source files under paths."""
    parts: list[str | bytes] = []
    for path in source_files(root, paths):
        content = f"-> {os.readlink(path)}".encode() if path.is_symlink() else path.read_bytes()
        parts += [path.relative_to(root).as_posix(), content]
    return cache_key(*parts)


# ---------------------------------------------------------------------------------------------
# Writing archives.


class _HashingWriter:
    """A file wrapper that hashes what goes through it (gzip writes the compressed layer here)."""

    def __init__(self, out: BinaryIO) -> None:
        self.out = out
        self.sha = hashlib.sha256()

    def write(self, data: bytes) -> int:
        self.sha.update(data)
        return self.out.write(data)

    def flush(self) -> None:
        self.out.flush()


def write_blob(layout: Path, data: bytes) -> None:
    path = layout / "blobs" / "sha256" / hashlib.sha256(data).hexdigest()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def write_layer(rootfs: Path, layout: Path) -> tuple[dict[str, Any], str]:
    """Tar and gzip rootfs into the layout's blobs: (layer descriptor, diff_id)."""
    blobs = layout / "blobs" / "sha256"
    blobs.mkdir(parents=True, exist_ok=True)
    partial = blobs / "layer.partial"
    raw = hashlib.sha256()
    size = 0
    tar = subprocess.Popen(tar_command(rootfs), stdout=subprocess.PIPE)
    assert tar.stdout is not None
    with partial.open("wb") as out:
        hashing = _HashingWriter(out)
        with gzip.GzipFile(filename="", mode="wb", fileobj=hashing, compresslevel=6, mtime=0) as gz:
            while chunk := tar.stdout.read(1 << 20):
                raw.update(chunk)
                gz.write(chunk)
    if tar.wait() != 0:
        raise RuntimeError(f"tar of {rootfs} failed with exit code {tar.returncode}")
    size = partial.stat().st_size
    partial.rename(blobs / hashing.sha.hexdigest())
    layer = {"mediaType": LAYER_MEDIA_TYPE, "digest": "sha256:" + hashing.sha.hexdigest(), "size": size}
    return layer, "sha256:" + raw.hexdigest()


def write_layout(rootfs: Path, layout: Path, spec: ImageSpec) -> tuple[str, str]:
    """Write an OCI image layout of rootfs; returns the digests of the manifest and the index."""
    layer, diff_id = write_layer(rootfs, layout)
    config = canonical_json(image_config(spec, diff_id))
    manifest = canonical_json(image_manifest(descriptor(CONFIG_MEDIA_TYPE, config), layer))
    manifest_descriptor = descriptor(MANIFEST_MEDIA_TYPE, manifest)
    write_blob(layout, config)
    write_blob(layout, manifest)
    index = canonical_json(image_index(manifest_descriptor, spec.name))
    (layout / "index.json").write_bytes(index)
    write_blob(layout, index)  # `ctr import --index-name` looks the index up as a blob too
    (layout / "oci-layout").write_text('{"imageLayoutVersion":"1.0.0"}')
    return manifest_descriptor["digest"], descriptor(INDEX_MEDIA_TYPE, index)["digest"]


def write_archive(layout: Path, archive: Path) -> None:
    """Tar the layout (names relative to it, as `ctr import` expects), atomically."""
    partial = archive.with_suffix(".partial")
    with tarfile.open(partial, "w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(layout.rglob("*")):
            tar.add(path, arcname=path.relative_to(layout).as_posix(), recursive=False)
    partial.rename(archive)


# ---------------------------------------------------------------------------------------------
# Building.


def run(argv: Sequence[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), check=True, text=True, **kwargs)


@contextmanager
def locked(cache: Path) -> Iterator[None]:
    """One build at a time per cache folder (two `make` targets may start one together)."""
    cache.mkdir(parents=True, exist_ok=True)
    with (cache / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def fresh_dir(path: Path) -> Path:
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def cached(cache: Path, stem: str) -> ImageArchive | None:
    meta = cache / f"{stem}.json"
    if not meta.exists() or not (cache / f"{stem}.tar").exists():
        return None
    data = json.loads(meta.read_text())
    return ImageArchive(**{**data, "path": Path(data["path"])})


def package(rootfs: Path, spec: ImageSpec, cache: Path, stem: str, started: float) -> ImageArchive:
    """Turn rootfs into the cached archive <stem>.tar and its <stem>.json."""
    layout = fresh_dir(cache / "work" / f"{stem}-layout")
    digest, index_digest = write_layout(rootfs, layout, spec)
    archive = cache / f"{stem}.tar"
    write_archive(layout, archive)
    shutil.rmtree(layout)
    seconds = round(time.monotonic() - started, 1)
    image = ImageArchive(spec.name, archive, digest, archive.stat().st_size, seconds, index_digest)
    meta = {k: str(v) if isinstance(v, Path) else v for k, v in asdict(image).items() if k != "built_now"}
    (cache / f"{stem}.json").write_text(json.dumps(meta, indent=2) + "\n")
    return ImageArchive(**{**asdict(image), "built_now": True})


def build_pause(cache: Path) -> ImageArchive:
    go_version = run(["go", "env", "GOVERSION"], capture_output=True).stdout.strip()
    sources = [(PAUSE_DIR / f).read_bytes() for f in ("go.mod", "main.go")]
    stem = f"pause-{cache_key(BUILD_FORMAT, PAUSE_NAME, go_version, *sources)}"
    if found := cached(cache, stem):
        return found
    started = time.monotonic()
    rootfs = fresh_dir(cache / "work" / stem)
    env = {**os.environ, "CGO_ENABLED": "0", "GOTOOLCHAIN": "local"}
    run(["go", "build", "-trimpath", "-ldflags=-s -w", "-o", str(rootfs / "pause"), "."], cwd=PAUSE_DIR, env=env)
    spec = ImageSpec(PAUSE_NAME, entrypoint=("/pause",), user="65535:65535")
    image = package(rootfs, spec, cache, stem, started)
    shutil.rmtree(rootfs)
    return image


def base_key() -> str:
    return cache_key(BUILD_FORMAT, DEBIAN_SUITE, DEBIAN_MIRROR, *BASE_PACKAGES, *DPKG_EXCLUDES)


def ensure_base(cache: Path) -> Path:
    """The Debian 12 root filesystem both Python images start from (built once, then copied)."""
    base = cache / f"base-{DEBIAN_SUITE}-{base_key()}"
    if (base / ".complete").exists():
        return base / "rootfs"
    fresh_dir(base)
    run(mmdebstrap_command(base / "rootfs"))
    (base / ".complete").touch()
    return base / "rootfs"


def copy_base(cache: Path, stem: str) -> Path:
    work = fresh_dir(cache / "work" / stem)
    run(["cp", "-a", "--reflink=auto", str(ensure_base(cache)), str(work / "rootfs")])
    return work / "rootfs"


HOST_CA = "/tmp/host-ca.crt"  # in the rootfs during the build only; tidy() removes /tmp


def build_env(host_env: Mapping[str, str]) -> dict[str, str]:
    """The environment of commands run in the rootfs: the host's CA bundle (the network may pass a
    TLS-intercepting proxy that only the host trusts) and its package index, if it names one."""
    env = {**BASE_ENV, "HOME": "/root", "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_CACHE_DIR": "1"}
    env |= {name: HOST_CA for name in ("PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE")}
    env |= {k: v for k, v in host_env.items() if k in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL")}
    return env


def in_rootfs(rootfs: Path, *argv: str) -> None:
    """Run a command in rootfs with the network (the host's DNS and CAs)."""
    shutil.copyfile("/etc/resolv.conf", rootfs / "etc" / "resolv.conf")
    host_ca = os.environ.get("PIP_CERT") or "/etc/ssl/certs/ca-certificates.crt"
    shutil.copyfile(host_ca, rootfs / HOST_CA.lstrip("/"))
    run(chroot_command(rootfs, argv, build_env(os.environ)))


def tidy(rootfs: Path) -> None:
    """Drop what the image does not need: the venv's bytecode, caches, the build's DNS and host name.

    Debian's own .pyc files (compiled when the packages were installed) stay: the operator runs on a
    read-only root filesystem, where Python could not write them.
    """
    for pycache in list((rootfs / VENV.lstrip("/")).rglob("__pycache__")):
        shutil.rmtree(pycache, ignore_errors=True)
    for path in ("root/.cache", "tmp"):
        shutil.rmtree(rootfs / path, ignore_errors=True)
    (rootfs / "tmp").mkdir(mode=0o1777)
    (rootfs / "tmp").chmod(0o1777)
    for path in ("etc/resolv.conf", "etc/hostname"):
        (rootfs / path).write_text("")


def build_python_image(cache: Path, name: str, requirement: str) -> ImageArchive:
    """The Debian base with `requirement` installed into a virtualenv on the PATH (a TensorFlow)."""
    stem = f"tensorflow-{cache_key(BUILD_FORMAT, name, requirement, base_key())}"
    if found := cached(cache, stem):
        return found
    started = time.monotonic()
    rootfs = copy_base(cache, stem)
    in_rootfs(rootfs, "python3", "-m", "venv", VENV)
    in_rootfs(rootfs, f"{VENV}/bin/pip", "install", "--no-compile", "--progress-bar=off", requirement)
    tidy(rootfs)
    env = {**BASE_ENV, "PATH": f"{VENV}/bin:{BASE_ENV['PATH']}"}
    spec = ImageSpec(name, cmd=("bash",), env=tuple(env.items()))
    image = package(rootfs, spec, cache, stem, started)
    shutil.rmtree(rootfs.parent)
    return image


def build_tensorflow(cache: Path) -> ImageArchive:
    return build_python_image(cache, TENSORFLOW_NAME, TENSORFLOW_REQUIREMENT)


def build_tensorflow_215(cache: Path) -> ImageArchive:
    return build_python_image(cache, TENSORFLOW_215_NAME, TENSORFLOW_215_REQUIREMENT)


def operator_key(dockerfile_text: str, wanted: DockerfileImage) -> str:
    paths = [*wanted.sources, *(src for src, _ in wanted.files)]
    return cache_key(BUILD_FORMAT, base_key(), dockerfile_text, tree_digest(REPO_DIR, paths))


def build_operator(cache: Path) -> ImageArchive:
    """What the Dockerfile builds: a venv with the project installed (not editable) and pinned."""
    text = DOCKERFILE.read_text()
    wanted = read_dockerfile(text)
    stem = f"operator-{operator_key(text, wanted)}"
    if found := cached(cache, stem):
        return found
    started = time.monotonic()
    rootfs = copy_base(cache, stem)
    src = rootfs / "tmp" / "src"
    for path in source_files(REPO_DIR, wanted.sources):  # the build context, as COPY makes it
        target = src / path.relative_to(REPO_DIR)
        target.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink():
            target.symlink_to(os.readlink(path))
        else:
            shutil.copy2(path, target)
    (src / "constraints.txt").write_text(wanted.constraints)
    in_rootfs(rootfs, "python3", "-m", "venv", VENV)
    pip = f"{VENV}/bin/pip"
    constraints = "/tmp/src/constraints.txt"
    # The two distributions, as the Dockerfile installs them: the client the operator builds on, and it.
    in_rootfs(rootfs, pip, "install", "--no-compile", "--progress-bar=off", "-c", constraints, "/tmp/src/client",
              "/tmp/src")
    in_rootfs(rootfs, pip, "uninstall", "--yes", "pip")
    tidy(rootfs)
    for source, destination in wanted.files:
        target = rootfs / destination.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO_DIR / source, target)
        target.chmod(0o644)
    passwd, group = user_entries(wanted.spec.user)
    with (rootfs / "etc" / "passwd").open("a") as f:
        f.write(passwd)
    with (rootfs / "etc" / "group").open("a") as f:
        f.write(group)
    image = package(rootfs, wanted.spec, cache, stem, started)
    shutil.rmtree(rootfs.parent)
    return image


def argo_dir() -> Path:
    """Where hack/build-argo.sh keeps (or would keep) Argo's binaries."""
    done = run(["bash", str(BUILD_ARGO), "dir"], capture_output=True)
    return Path(done.stdout.strip().splitlines()[-1])


def build_argoexec(cache: Path) -> ImageArchive:
    """Argo's executor image as Argo builds it (the static argoexec on distroless/static): the binary
    hack/build-argo.sh builds, the host's CA bundle, an nsswitch.conf, /tmp. The executor runs a
    resource template's kubectl in-process and copies itself into the other steps' pods, so it needs
    nothing else."""
    run(["bash", str(BUILD_ARGO)])  # builds what is not cached yet (minutes), else returns at once
    binary = argo_dir() / "argoexec"
    # HOME is /tmp: Argo runs its init and wait containers as a user of its own, and the in-process
    # kubectl fails on a $HOME/.kube/config it may not even look at ("permission denied").
    spec = ImageSpec(ARGOEXEC_NAME, entrypoint=("argoexec",), env=tuple({**BASE_ENV, "HOME": "/tmp"}.items()))
    stem = f"argoexec-{cache_key(BUILD_FORMAT, repr(spec), binary.read_bytes())}"
    if found := cached(cache, stem):
        return found
    started = time.monotonic()
    rootfs = fresh_dir(cache / "work" / stem)
    (rootfs / "bin").mkdir()
    shutil.copy2(binary, rootfs / "bin" / "argoexec")
    certs = rootfs / "etc" / "ssl" / "certs"
    certs.mkdir(parents=True)
    shutil.copyfile("/etc/ssl/certs/ca-certificates.crt", certs / "ca-certificates.crt")
    (rootfs / "etc" / "nsswitch.conf").write_text("hosts: files dns\n")
    (rootfs / "etc" / "passwd").write_text("root:x:0:0:root:/root:/sbin/nologin\n")
    (rootfs / "etc" / "group").write_text("root:x:0:\n")
    (rootfs / "tmp").mkdir()
    (rootfs / "tmp").chmod(0o1777)
    image = package(rootfs, spec, cache, stem, started)
    shutil.rmtree(rootfs)
    return image


BUILDERS = {"pause": build_pause, "tensorflow": build_tensorflow, "tensorflow-2.15": build_tensorflow_215,
            "operator": build_operator, "argoexec": build_argoexec}


def build_images(cache_dir: Path | None = None, which: Iterable[str] = IMAGES) -> dict[str, ImageArchive]:
    """Build (or take from the cache) the named images: pause, tensorflow, tensorflow-2.15, operator, argoexec."""
    cache = cache_dir or default_cache_dir()
    names = list(which)
    unknown = sorted(set(names) - set(BUILDERS))
    if unknown:
        raise ValueError(f"unknown images {unknown}; known: {list(BUILDERS)}")
    if os.geteuid() != 0 and not all(n in ("pause", "argoexec") for n in names):
        raise PermissionError("building the Debian-based images needs root (mmdebstrap, chroot, mount)")
    with locked(cache):
        shutil.rmtree(cache / "work", ignore_errors=True)  # what an interrupted build left
        built = {name: BUILDERS[name](cache) for name in names}
        shutil.rmtree(cache / "work", ignore_errors=True)
        return built


# ---------------------------------------------------------------------------------------------
# Importing into containerd.


def list_images(address: str, ctr: str = "ctr") -> dict[str, str]:
    listing = run(ctr_command(ctr, address, "images", "ls"), capture_output=True).stdout
    return parse_image_list(listing)


def import_image(archive: ImageArchive, address: str, ctr: str = "ctr") -> None:
    """Import archive into the containerd at address (namespace k8s.io) unless already there."""
    if list_images(address, ctr).get(archive.name) in (archive.digest, archive.index_digest):
        return
    run(ctr_command(ctr, address, "images", "import", str(archive.path)), capture_output=True)
    images = list_images(address, ctr)
    aliases = aliases_to_remove(images, archive.digest)
    if aliases:
        run(ctr_command(ctr, address, "images", "rm", *aliases), capture_output=True)
    if images.get(archive.name) not in (archive.digest, archive.index_digest):
        raise RuntimeError(f"{archive.path} imported, but {archive.name} is {images.get(archive.name)}")


# ---------------------------------------------------------------------------------------------
# Command line.


def describe(name: str, image: ImageArchive) -> str:
    how = "built" if image.built_now else "cached, built"
    return f"{name:<10} {image.path}  {image.size / 1e6:.1f} MB  ({how} in {image.build_seconds:.0f} s)  {image.name}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devcluster.images", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for command in ("build", "import"):
        sub = commands.add_parser(command)
        sub.add_argument("--only", action="append", choices=IMAGES, help="this image only (repeatable)")
        sub.add_argument("--cache-dir", type=Path, help="default: $XDG_CACHE_HOME/tfjob-operator/images")
        if command == "import":
            sub.add_argument("--address", required=True, help="containerd socket")
            sub.add_argument("--ctr", default="ctr")
    args = parser.parse_args(argv)
    images = build_images(args.cache_dir, args.only or IMAGES)
    for name, image in images.items():
        print(describe(name, image), flush=True)
        if args.command == "import":
            import_image(image, args.address, args.ctr)
            print(f"{'':<10} imported into {args.address}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
