"""The rules of a TensorFlowJob as pure functions on plain dicts: no I/O, no clock of their own.

`plan.plan_job` turns the observed job, its pods and Service into what to create, delete and write
(`draft`: the plan and the edits its rules share); `refusals` folds what the API server refused
into that plan; the other modules are its parts (builders, validation, pod state, and the production features:
stall probes, NetworkPolicies, start-up profiles, pending reasons; and `kinds` with `kubeflow/`,
Kubeflow's TFJob kind as the same job model). The API contract they apply (names, labels,
conditions, the CRD schema and its defaults) is `tfjob_api`'s.
Everything here is tested with plain dicts, without a cluster.
"""
