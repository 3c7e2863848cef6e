"""The shape both generated CRDs share: one namespaced kind in kubeflow.org, one served and stored
version `v1` with its schema, the status subresource, and a scale subresource on one replica set."""

from __future__ import annotations

from typing import Any


def crd_document(names: dict[str, Any], schema: dict[str, Any], scale_replicas: str, scale_status: str,
                 columns: list[dict[str, Any]]) -> dict[str, Any]:
    """A CRD for `names` (kind, plural, ...) in kubeflow.org; `kubectl scale` sets the spec field at
    `scale_replicas` and reads `<scale_status>.active` and `<scale_status>.selector`."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{names['plural']}.kubeflow.org"},
        "spec": {
            "group": "kubeflow.org",
            "names": names,
            "scope": "Namespaced",
            "versions": [{
                "name": "v1", "served": True, "storage": True,
                "schema": {"openAPIV3Schema": schema},
                "subresources": {
                    "status": {},
                    "scale": {
                        "specReplicasPath": scale_replicas,
                        "statusReplicasPath": f"{scale_status}.active",
                        "labelSelectorPath": f"{scale_status}.selector",
                    },
                },
                "additionalPrinterColumns": columns,
            }],
        },
    }
