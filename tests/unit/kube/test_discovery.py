"""Unit tests of `kube.discovery`: discovery listings cached, and a kind discovery does not list yet
found among the Established CRDs (the lag right after a CRD is created)."""

from __future__ import annotations

from typing import Any

import pytest

from kube.clock import FakeClock
from kube.discovery import CRDS_PATH, Discovery
from kube.errors import ApiError

LISTING = {"resources": [{"name": "tfjobs", "kind": "TFJob"}, {"name": "tfjobs/status", "kind": "TFJob"}]}
EMPTY_LISTING: dict[str, Any] = {"resources": []}


def tfjob_crd(established: bool = True) -> dict[str, Any]:
    return {"spec": {"group": "kubeflow.org", "versions": [{"name": "v1", "served": True}]},
            "status": {"conditions": [{"type": "Established", "status": "True" if established else "False"}],
                       "acceptedNames": {"kind": "TFJob"}}}


class Server:
    """Answers GETs from a dict of path → answer (an exception is raised); counts them."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    def get(self, path: str) -> dict[str, Any]:
        self.asked.append(path)
        answer = self.answers.get(path, ApiError(404, "NotFound", path))
        if isinstance(answer, Exception):
            raise answer
        return dict(answer)


def test_a_listed_kind_is_served_and_the_listing_is_cached() -> None:
    server = Server({"/apis/kubeflow.org/v1": LISTING})
    discovery = Discovery(server.get, FakeClock())

    assert discovery.has_api("kubeflow.org", "v1", "TFJob") and discovery.has_api("kubeflow.org", "v1", "TFJob")
    assert server.asked == ["/apis/kubeflow.org/v1"]


def test_a_kind_discovery_does_not_list_yet_is_served_when_an_established_crd_serves_it() -> None:
    server = Server({"/apis/kubeflow.org/v1": EMPTY_LISTING, CRDS_PATH: {"items": [tfjob_crd()]}})
    discovery = Discovery(server.get, FakeClock())

    assert discovery.has_api("kubeflow.org", "v1", "TFJob")
    server.answers["/apis/kubeflow.org/v1"] = LISTING
    assert discovery.has_api("kubeflow.org", "v1", "TFJob")
    assert server.asked == ["/apis/kubeflow.org/v1", CRDS_PATH, "/apis/kubeflow.org/v1"]  # the stale listing dropped


def test_a_crd_not_established_serves_nothing_and_the_miss_is_remembered_for_ten_seconds() -> None:
    server = Server({"/apis/kubeflow.org/v1": EMPTY_LISTING, CRDS_PATH: {"items": [tfjob_crd(established=False)]}})
    clock = FakeClock()
    discovery = Discovery(server.get, clock)

    assert not discovery.has_api("kubeflow.org", "v1", "TFJob")
    assert not discovery.has_api("kubeflow.org", "v1", "TFJob")
    clock.step(10.5)
    assert not discovery.has_api("kubeflow.org", "v1", "TFJob")
    assert server.asked.count(CRDS_PATH) == 2


@pytest.mark.parametrize("crds", [False, True])
def test_a_client_that_may_not_read_crds_keeps_discoverys_answer(crds: bool) -> None:
    server = Server({"/apis/kubeflow.org/v1": EMPTY_LISTING, CRDS_PATH: ApiError(403, "Forbidden", "no")})
    discovery = Discovery(server.get, FakeClock())

    assert not discovery.has_api("kubeflow.org", "v1", "TFJob", crds=crds)
    assert (CRDS_PATH in server.asked) is crds
