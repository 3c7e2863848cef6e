"""The API contract of the two job kinds: what a TensorFlowJob and Kubeflow's TFJob are, apart from
any code that acts on them.

Everything that the operator, the `kubectl tfjob` plugin and the Python client must agree on lives
here, once: the kinds' names (`names`, `kubeflow`) and identities (`kinds`), the conditions and their state precedence
(`conditions`), the CRDs (`schema` and `kubeflow_schema` build them, `crd` reads the generated
files back), the schema's defaults (`defaults`), what a pod's labels and status mean
(`podstate`), timestamps as the API server writes them (`timeutil`), and reading job documents
from files (`documents`).

Why a package of its own: these are facts about the API, not rules of the controller. Kept at the
bottom of the layers (just above `tfconfig`, whose role names it uses), so the client in `tfjobs`
and the controller both build on it without depending on each other, and `hack/gen_crd.py`
writes the CRDs from the same definitions the operator and the tests import. Pure: no I/O beyond
reading a CRD or a job file on request.
"""
