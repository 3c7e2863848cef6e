"""Starting the operator process: an API server that cannot be reached for discovery is a clear
log line and exit status 3, not a traceback."""

from __future__ import annotations

from unittest.mock import Mock

import pytest
from pytest_mock import MockerFixture

from controller.process import app
from controller.process.cli import build_parser
from kube import ApiError, Kube


@pytest.mark.parametrize("flags", [[], ["--kueue=off"], ["--kubeflow-tfjob=auto", "--kueue=off"]])
def test_an_unreachable_api_server_at_start_exits_3_naming_the_server(mocker: MockerFixture, flags: list[str]) -> None:
    kube = Mock(spec=Kube)
    kube.host = "https://127.0.0.1:6443"
    kube.has_api.side_effect = ApiError(0, "NewConnectionError", "connection refused")
    kube.get.side_effect = kube.has_api.side_effect  # TFJob's discovery listing is read directly
    mocker.patch.object(app.Kube, "load", return_value=kube)
    mocker.patch.object(app.logs, "configure")
    log = mocker.patch.object(app, "log")
    args = build_parser().parse_args(["run", "--kubeconfig", "/dev/null", "--metrics-addr", "0",
                                      "--health-addr", "0", "--log-format", "json", *flags])

    assert app.run(args) == app.API_UNREACHABLE_EXIT_CODE == 3

    [(message,), fields] = log.error.call_args
    assert "cannot reach the API server" in message
    assert fields["server"] == "https://127.0.0.1:6443" and "connection refused" in fields["error"]
    kube.close.assert_called_once()


def test_a_gang_scheduler_whose_pod_group_api_is_not_served_stops_the_start(mocker: MockerFixture) -> None:
    kube = Mock(spec=Kube)
    kube.has_api.return_value = False
    mocker.patch.object(app.Kube, "load", return_value=kube)
    mocker.patch.object(app.logs, "configure")
    log = mocker.patch.object(app, "log")
    controller = mocker.patch.object(app, "Controller")
    args = build_parser().parse_args(["run", "--kubeconfig", "/dev/null", "--metrics-addr", "0", "--health-addr", "0",
                                      "--gang-scheduler", "scheduler-plugins"])

    assert app.run(args) == app.BAD_CONFIGURATION_EXIT_CODE

    kube.has_api.assert_called_once_with("scheduling.x-k8s.io", "v1alpha1", "PodGroup", crds=False)
    [(message,), _] = log.error.call_args
    assert "does not serve scheduling.x-k8s.io/v1alpha1 PodGroup" in message and "--gang-scheduler=none" in message
    controller.assert_not_called()
