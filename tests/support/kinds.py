"""Run one integration scenario for both kinds of job: `@both_kinds` on a test that uses the `tfjobs`
fixture runs it as a TensorFlowJob and as the Kubeflow TFJob that means the same (the fixture's
`job_kind` parameter; tests/integration/controller/conftest.py switches the cluster's CRDs for it)."""

from __future__ import annotations

import pytest

KINDS = ("TensorFlowJob", "TFJob")
both_kinds = pytest.mark.parametrize("job_kind", KINDS, indirect=True)
