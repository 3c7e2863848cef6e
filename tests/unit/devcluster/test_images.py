"""Unit tests of the pure parts of devcluster/images.py and devcluster/image_spec.py: names, cache
keys, the OCI documents, the Dockerfile the operator image is read from, and the command lines run. Building and importing
real images needs root, mmdebstrap and containerd; that is checked by hand (see the commit).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
from pathlib import Path

import pytest

from devcluster import image_spec, images
from devcluster.image_spec import ImageSpec

DOCKERFILE = """\
# syntax=docker/dockerfile:1.7
ARG PYTHON_IMAGE=python:3.11.7-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \\
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
# a comment
COPY <<CONSTRAINTS /src/constraints.txt
attrs==26.1.0
pyyaml==6.0.4
CONSTRAINTS
COPY setup.cfg pyproject.toml README.md ./
COPY kube/ kube/
RUN python -m venv /opt/venv \\
 && /opt/venv/bin/pip install --constraint constraints.txt .

FROM ${PYTHON_IMAGE}
ENV PATH=/opt/venv/bin:$PATH \\
    PYTHONUNBUFFERED=1 \\
    TFJOB_CRD=/etc/tfjob-operator/crd.yaml
COPY --from=build /opt/venv /opt/venv
COPY manifests/crd.yaml /etc/tfjob-operator/crd.yaml
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["tfjob-operator", "run"]
"""


def test_the_tag_is_the_part_after_the_last_colon_of_the_last_path_element() -> None:
    assert image_spec.tag_of("registry.k8s.io/pause:3.10") == "3.10"
    assert image_spec.tag_of("docker.io/tensorflow/tensorflow:2.21.0") == "2.21.0"
    assert image_spec.tag_of("localhost:5000/thing") == "latest"


def test_the_cache_folder_follows_xdg_cache_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert images.default_cache_dir() == tmp_path / "tfjob-operator" / "images"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert images.default_cache_dir() == tmp_path / "home" / ".cache" / "tfjob-operator" / "images"


def test_cache_keys_separate_their_parts() -> None:
    assert images.cache_key("ab", "c") != images.cache_key("a", "bc")
    assert images.cache_key("a", b"b") == images.cache_key("a", "b")
    assert len(images.cache_key("x")) == 16


def test_the_source_digest_changes_with_a_source_and_ignores_bytecode(tmp_path: Path) -> None:
    (tmp_path / "kube").mkdir()
    (tmp_path / "kube" / "a.py").write_text("x = 1\n")
    (tmp_path / "setup.cfg").write_text("[metadata]\n")
    before = images.tree_digest(tmp_path, ["kube/", "setup.cfg"])
    (tmp_path / "kube" / "__pycache__").mkdir()
    (tmp_path / "kube" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0")
    (tmp_path / "other.py").write_text("not copied\n")
    assert images.tree_digest(tmp_path, ["kube/", "setup.cfg"]) == before
    (tmp_path / "kube" / "a.py").write_text("x = 2\n")
    assert images.tree_digest(tmp_path, ["kube/", "setup.cfg"]) != before


def test_a_linked_package_is_one_source_entry_and_its_target_counts_in_the_digest(tmp_path: Path) -> None:
    (tmp_path / "tfjobs").mkdir()
    (tmp_path / "tfjobs" / "a.py").write_text("x = 1\n")
    (tmp_path / "client").mkdir()
    (tmp_path / "client" / "setup.cfg").write_text("[metadata]\n")
    (tmp_path / "client" / "tfjobs").symlink_to("../tfjobs")
    assert images.source_files(tmp_path, ["client/"]) == [tmp_path / "client" / "setup.cfg", tmp_path / "client" / "tfjobs"]
    before = images.tree_digest(tmp_path, ["client/"])
    (tmp_path / "client" / "tfjobs").unlink()
    (tmp_path / "client" / "tfjobs").symlink_to("../elsewhere")
    assert images.tree_digest(tmp_path, ["client/"]) != before


def test_the_dockerfile_is_read_into_constraints_sources_files_and_config() -> None:
    wanted = image_spec.read_dockerfile(DOCKERFILE, "docker.io/library/op:1")
    assert wanted.constraints == "attrs==26.1.0\npyyaml==6.0.4\n"
    assert wanted.sources == ("setup.cfg", "pyproject.toml", "README.md", "kube")
    assert wanted.files == (("manifests/crd.yaml", "/etc/tfjob-operator/crd.yaml"),)
    env = dict(wanted.spec.env)
    assert env["PATH"] == "/opt/venv/bin:" + image_spec.BASE_ENV["PATH"]
    assert env["PYTHONUNBUFFERED"] == "1"
    assert env["TFJOB_CRD"] == "/etc/tfjob-operator/crd.yaml"
    assert "PIP_NO_CACHE_DIR" not in env  # the build stage's ENV is not the image's
    assert wanted.spec.user == "65532:65532"
    assert wanted.spec.entrypoint == ("tfjob-operator", "run")
    assert wanted.spec.exposed_ports == ("8080", "8081")


def test_the_repositorys_dockerfile_reads_as_the_operator_image_expects() -> None:
    wanted = image_spec.read_dockerfile(images.DOCKERFILE.read_text())
    assert "kubernetes==" in wanted.constraints
    assert all("==" in line for line in wanted.constraints.splitlines())
    assert {"setup.cfg", "pyproject.toml", "controller", "kube"} <= set(wanted.sources)
    assert dict(wanted.files)["manifests/crd.yaml"] == dict(wanted.spec.env)["TFJOB_CRD"]
    assert dict(wanted.files)["manifests/kubeflow/tfjob-crd.yaml"] == dict(wanted.spec.env)["TFJOB_KUBEFLOW_CRD"]
    assert wanted.spec.entrypoint == ("tfjob-operator", "run")
    assert wanted.spec.user == "65532:65532"
    assert wanted.spec.name == image_spec.OPERATOR_NAME


def test_heredocs_continuations_and_comments_are_parsed() -> None:
    parsed = image_spec.parse_dockerfile("FROM a\n# c\nRUN x \\\n  # inner comment\n  && y\nCOPY <<EOF /f\nline\nEOF\n")
    assert [(i.keyword, i.args) for i in parsed] == [("FROM", "a"), ("RUN", "x && y"), ("COPY", "<<EOF /f")]
    assert parsed[2].heredocs == (("EOF", "line\n"),)


def test_environment_references_take_the_values_from_before_the_instruction() -> None:
    assert image_spec.expand("/opt/bin:$PATH:${HOME}", {"PATH": "/bin", "HOME": "/root"}) == "/opt/bin:/bin:/root"


def test_the_numeric_user_gets_passwd_and_group_entries() -> None:
    passwd, group = image_spec.user_entries("65532:65532")
    assert passwd == "tfjob:x:65532:65532::/nonexistent:/usr/sbin/nologin\n"
    assert group == "tfjob:x:65532:\n"
    assert image_spec.user_entries("1000")[1] == "tfjob:x:1000:\n"


def test_the_image_config_carries_the_spec_and_the_layer() -> None:
    spec = ImageSpec("x:1", entrypoint=("/pause",), env=(("PATH", "/bin"),), user="65535:65535", exposed_ports=("8080",))
    config = image_spec.image_config(spec, "sha256:abc")
    assert config["config"] == {
        "Env": ["PATH=/bin"],
        "WorkingDir": "/",
        "Entrypoint": ["/pause"],
        "User": "65535:65535",
        "ExposedPorts": {"8080/tcp": {}},
    }
    assert config["rootfs"] == {"type": "layers", "diff_ids": ["sha256:abc"]}
    assert (config["os"], config["architecture"]) == ("linux", "amd64")


def test_the_index_names_the_image_so_ctr_imports_it_without_an_alias() -> None:
    config = image_spec.descriptor(image_spec.CONFIG_MEDIA_TYPE, b"{}")
    assert config == {"mediaType": image_spec.CONFIG_MEDIA_TYPE, "digest": "sha256:" + hashlib.sha256(b"{}").hexdigest(), "size": 2}
    layer = {"mediaType": image_spec.LAYER_MEDIA_TYPE, "digest": "sha256:l", "size": 9}
    manifest = image_spec.image_manifest(config, layer)
    assert manifest["layers"] == [layer] and manifest["schemaVersion"] == 2
    entry = image_spec.image_index(image_spec.descriptor(image_spec.MANIFEST_MEDIA_TYPE, b"m"), image_spec.PAUSE_NAME)["manifests"][0]
    assert entry["annotations"] == {
        "io.containerd.image.name": "registry.k8s.io/pause:3.10",
        "org.opencontainers.image.ref.name": "3.10",
    }


def test_a_layout_written_from_a_folder_is_consistent(tmp_path: Path) -> None:
    rootfs = tmp_path / "rootfs"
    (rootfs / "dev").mkdir(parents=True)
    (rootfs / "dev" / "junk").write_text("not in the layer")
    (rootfs / "pause").write_bytes(b"\x7fELF")
    layout = tmp_path / "layout"
    digest, index_digest = images.write_layout(rootfs, layout, ImageSpec("registry.k8s.io/pause:3.10", entrypoint=("/pause",)))
    blob = lambda d: (layout / "blobs" / "sha256" / d.removeprefix("sha256:")).read_bytes()  # noqa: E731
    index = json.loads(blob(index_digest))
    assert blob(index_digest) == (layout / "index.json").read_bytes()
    assert index["manifests"][0]["digest"] == digest
    manifest = json.loads(blob(digest))
    config = json.loads(blob(manifest["config"]["digest"]))
    layer = blob(manifest["layers"][0]["digest"])
    assert manifest["layers"][0]["size"] == len(layer)
    raw = gzip.decompress(layer)
    assert config["rootfs"]["diff_ids"] == ["sha256:" + hashlib.sha256(raw).hexdigest()]
    with tarfile.open(fileobj=io.BytesIO(raw)) as layer_tar:
        names = layer_tar.getnames()
    assert "./pause" in names and "./dev" in names and "./dev/junk" not in names

    archive = tmp_path / "image.tar"
    images.write_archive(layout, archive)
    with tarfile.open(archive) as archive_tar:
        assert "index.json" in archive_tar.getnames()


def test_the_chroot_command_mounts_in_a_private_namespace() -> None:
    argv = image_spec.chroot_command(Path("/r"), ["pip", "install", "a b"], {"PATH": "/bin"}, {"/host/pip": "/var/cache/pip"})
    assert argv[:6] == ["unshare", "--mount", "--propagation", "private", "--fork", "--"]
    script = argv[-1].splitlines()
    assert script == [
        "set -e",
        "mount --rbind /dev /r/dev",
        "mount -t proc proc /r/proc",
        "mkdir -p /r/var/cache/pip",
        "mount --bind /host/pip /r/var/cache/pip",
        "exec chroot /r /usr/bin/env -i PATH=/bin pip install 'a b'",
    ]


def test_the_base_is_a_minimal_bookworm_with_python() -> None:
    argv = image_spec.mmdebstrap_command(Path("/c/rootfs"))
    assert argv[:2] == ["mmdebstrap", "--variant=minbase"]
    assert "python-is-python3" in argv[2] and "python3-venv" in argv[2]
    assert argv[-3:] == ["bookworm", "/c/rootfs", "http://deb.debian.org/debian"]


def test_ctr_commands_use_the_given_socket_and_the_kubernetes_namespace() -> None:
    assert image_spec.ctr_command("ctr", "/s.sock", "images", "ls") == ["ctr", "--address", "/s.sock", "--namespace", "k8s.io", "images", "ls"]


LISTING = """\
REF                                    TYPE                                       DIGEST        SIZE      PLATFORMS   LABELS
docker.io/library/op:1                 application/vnd.oci.image.manifest.v1+json sha256:aaa    60.1 MiB  linux/amd64 -
import-2026-12-02:1                    application/vnd.oci.image.manifest.v1+json sha256:aaa    60.1 MiB  linux/amd64 -
import-2026-12-02:3.10                 application/vnd.oci.image.manifest.v1+json sha256:bbb    0.7 MiB   linux/amd64 -
"""


def test_the_image_list_is_parsed_and_only_aliases_of_the_digest_are_removed() -> None:
    listed = image_spec.parse_image_list(LISTING)
    assert listed == {"docker.io/library/op:1": "sha256:aaa", "import-2026-12-02:1": "sha256:aaa", "import-2026-12-02:3.10": "sha256:bbb"}
    assert image_spec.aliases_to_remove(listed, "sha256:aaa") == ["import-2026-12-02:1"]
    assert image_spec.parse_image_list("REF TYPE DIGEST SIZE PLATFORMS LABELS\n") == {}


def test_unknown_image_names_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown images"):
        images.build_images(tmp_path, ["nope"])


def test_a_cached_archive_is_found_by_its_stem_with_its_digests(tmp_path: Path) -> None:
    assert images.cached(tmp_path, "pause-0123") is None
    (tmp_path / "pause-0123.tar").write_bytes(b"")
    meta = {"name": "n:1", "path": str(tmp_path / "pause-0123.tar"), "digest": "sha256:m", "size": 0}
    (tmp_path / "pause-0123.json").write_text(json.dumps({**meta, "build_seconds": 1.5, "index_digest": "sha256:i"}))
    found = images.cached(tmp_path, "pause-0123")
    assert found == images.ImageArchive("n:1", tmp_path / "pause-0123.tar", "sha256:m", 0, 1.5, "sha256:i")
    assert not found.built_now
