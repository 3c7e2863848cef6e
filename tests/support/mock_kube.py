"""A mocked API client for reconciler tests of one job: creates echo their body, a patch answers with
the job at the next resourceVersion and the status it was sent (as the status subresource would)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from unittest.mock import Mock

from pytest_mock import MockerFixture

from kube import Kube


def status_patching_kube(mocker: MockerFixture, make_job: Callable[[], dict[str, Any]]) -> Mock:
    """A client whose patch answers with a fresh `make_job()` at the next resourceVersion and the status sent."""
    client = mocker.Mock(spec=Kube)
    client.patch.side_effect = lambda path, body, **_: {**make_job(), "status": body.get("status", {}),
                                                         "metadata": {**make_job()["metadata"], "resourceVersion": "11"}}
    return client


def mock_kube(mocker: MockerFixture, job: dict[str, Any]) -> Mock:
    client = status_patching_kube(mocker, lambda: job)
    client.create.side_effect = lambda path, body: body
    return client


def created_kinds(kube: Mock) -> list[str]:
    """The kinds the reconciler created, in the order it asked."""
    return [c.args[1]["kind"] for c in kube.create.call_args_list]
