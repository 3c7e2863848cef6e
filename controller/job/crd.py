"""Transitional: `api.crd.job_schema` under its old name, for tests/unit/test_production_manifests.py
only, a module another change owns; it goes as soon as that test imports `api.crd`. Nothing else may
import this module (the CRD is read by `api.crd`)."""

from api.crd import job_schema

__all__ = ["job_schema"]
