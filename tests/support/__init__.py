"""Helpers the tests share: builders of job and pod dicts (`jobs`) and deadline-bounded polling (`polling`)."""
