"""The pure part of devcluster/argo.py: the workflow controller's ConfigMap moves its metrics server
to the port the devcluster picked, over plain HTTP (Argo's default is 9090 over TLS)."""

from __future__ import annotations

import yaml

from devcluster.argo import controller_configuration


def test_the_controller_serves_its_metrics_on_the_picked_port_over_plain_http() -> None:
    data = controller_configuration(43121)

    assert list(data) == ["metricsConfig"]
    assert yaml.safe_load(data["metricsConfig"]) == {"enabled": True, "port": 43121, "secure": False}
