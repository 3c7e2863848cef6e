"""The API contract of the two job kinds: what a TensorFlowJob and Kubeflow's TFJob are, apart from
any code that acts on them.

Everything that the operator, the `kubectl tfjob` plugin and the Python client must agree on lives
here, once: the kinds' names (`names`, `kubeflow`), the conditions and their state precedence
(`conditions`), the generated CRD files read back (`crd`), the schema's defaults (`defaults`),
and reading job documents from files (`documents`).

Why a package of its own: these are facts about the API, not rules of the controller. Kept at the
bottom of the layers, so the client in `tfjobs` and the controller both build on it without
depending on each other. Pure: no I/O beyond reading a CRD or a job file on request.
"""
