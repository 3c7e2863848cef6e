"""Kubeflow's `TFJob` kind (kubeflow.org/v1, as Kubeflow's training operator v1.9 defined it), served by
the same rules as `TensorFlowJob`.

The operator has one job model -- the TensorFlowJob spec the planner reads -- and this package is the
pure translation between that model and the TFJob API, so one planner and one reconciler serve both
kinds:

* `tfjob_api.kubeflow_model` -- a TFJob in, the job model out, with Kubeflow's defaults for this kind,
  and `tfjob_api.kubeflow_status` -- the planner's status out as Kubeflow writes a TFJob's status, and
  back (part of the API contract: the user tools read a TFJob through the same translation);
* `validation` -- what Kubeflow's webhook (and this project's CRD) rejects, with TFJob field paths;
* `ownership` -- whether this operator serves a given TFJob (`runPolicy.managedBy`);
* `labels` -- the Kubeflow labels on a TFJob's pods and Service;
* `convert` -- a TFJob rewritten as the equivalent TensorFlowJob, and what does not carry over.

The TFJob's names (API coordinates, Kubeflow's labels, replica types, `runPolicy.managedBy` values)
are `tfjob_api.kubeflow`, its defaults `tfjob_api.defaults`. Everything here is a function of plain
dicts, tested without a cluster (docs/kubeflow.md).
"""
