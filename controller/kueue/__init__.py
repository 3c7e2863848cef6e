"""Queueing with Kueue: the Workload protocol (`protocol`, pure) and the reconciler's gate (`gate`)."""
