"""Benchmarks: each module prints ratios against a baseline measured in the same run."""
