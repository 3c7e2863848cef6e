"""Setting the operator's image once, in manifests/operator/kustomization.yaml, sets it for every install
in manifests/: each overlay is built with the real `kubectl kustomize` (the local control plane's
kubectl, which `make test` builds) after the image is set there as `kustomize edit set image` would."""

from __future__ import annotations

import pathlib
import shutil
import subprocess
from typing import Any

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "manifests"
IMAGE_PLACE = pathlib.Path("operator") / "kustomization.yaml"
NEW_IMAGE = "registry.example.com/team/tfjob-operator:9.8.7"
# The installs that run the operator; the others (rbac/, monitoring/) have no image at all.
WITH_THE_OPERATOR = {".", "operator", "kubeflow", "kubeflow-handover", "namespaced"}


def overlays() -> list[str]:
    """Every folder of manifests/ with a kustomization.yaml, relative to manifests/ (examples/ holds
    plain files to apply, no kustomization)."""
    found = sorted(p.parent.relative_to(MANIFESTS).as_posix() for p in MANIFESTS.rglob("kustomization.yaml"))
    assert not [o for o in found if o.startswith("examples")]
    return found


@pytest.fixture(scope="module")
def kubectl() -> str:
    done = subprocess.run(["bash", str(ROOT / "devcluster" / "build-binaries.sh"), "dir"],
                          capture_output=True, text=True, check=True)
    path = pathlib.Path(done.stdout.strip()) / "kubectl"
    if not path.is_file():
        pytest.fail(f"no kubectl at {path}: build it with `bash devcluster/build-binaries.sh` (`make test` does)")
    return str(path)


def set_image(kustomization: pathlib.Path, image: str) -> None:
    """What `kustomize edit set image tfjob-operator=IMAGE` does to a kustomization.yaml."""
    name, _, tag = image.rpartition(":")
    document = yaml.safe_load(kustomization.read_text())
    entries = [e for e in document.get("images") or [] if e["name"] != "tfjob-operator"]
    document["images"] = [*entries, {"name": "tfjob-operator", "newName": name, "newTag": tag}]
    kustomization.write_text(yaml.safe_dump(document, sort_keys=False))


def images_of(node: Any) -> set[str]:
    """Every container image named anywhere in an object."""
    if isinstance(node, dict):
        found = {node["image"]} if isinstance(node.get("image"), str) and "name" in node else set()
        return found.union(*(images_of(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(images_of(v) for v in node))
    return set()


def built_images(kubectl: str, overlay: pathlib.Path) -> set[str]:
    done = subprocess.run([kubectl, "kustomize", str(overlay)], capture_output=True, text=True)
    assert done.returncode == 0, f"kubectl kustomize {overlay}: {done.stderr}"
    objects = [o for o in yaml.load_all(done.stdout, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) if o]
    # A CRD's schema has `image` properties, not images.
    return set().union(*(images_of(o) for o in objects if o["kind"] != "CustomResourceDefinition"))


def test_every_install_is_an_overlay_this_test_knows() -> None:
    assert set(overlays()) >= WITH_THE_OPERATOR


def test_only_one_kustomization_sets_the_image() -> None:
    setting = [o for o in overlays() if yaml.safe_load((MANIFESTS / o / "kustomization.yaml").read_text()).get("images")]
    assert setting == [IMAGE_PLACE.parent.as_posix()]


@pytest.fixture(scope="module")
def image_set_once(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """A copy of manifests/ with the image set in the one place."""
    copy = tmp_path_factory.mktemp("image-set-once") / "manifests"
    shutil.copytree(MANIFESTS, copy)
    set_image(copy / IMAGE_PLACE, NEW_IMAGE)
    return copy


@pytest.mark.parametrize("overlay", overlays())
def test_setting_the_image_in_one_place_sets_it_for_every_install(kubectl: str, overlay: str,
                                                                  image_set_once: pathlib.Path) -> None:
    expected = {NEW_IMAGE} if overlay in WITH_THE_OPERATOR else set()
    assert built_images(kubectl, image_set_once / overlay) == expected
