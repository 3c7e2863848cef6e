"""The CRDs as package data: symbolic links to manifests/crd.yaml and manifests/kubeflow/tfjob-crd.yaml
in the repository, their contents in the wheel (read by `api.crd`)."""
