"""The tools of the people who train: a Python client and the `kubectl tfjob` plugin for TensorFlowJobs.

    from tfjobs import TfJobClient
    client = TfJobClient.connect()
    client.create_from_file("mnist.yaml", overrides={"worker.replicas": 4})
    client.wait_for("mnist", "Running")
    for line in client.logs("mnist", follow=True):
        print(line.prefix, line.text)

Modules, one concept each: `client` (TfJobClient and its errors), `cli` (the `kubectl-tfjob`
plugin), `logs` (every pod's log as one prefixed stream, followed across pod restarts), `watching`
(a job and its pods kept current by a list + watch of each), `progress` (the one-line state of a
job), `training` (the training's own progress, from a job with `spec.progress`), `describe` (why a
pod is pending or failing), `dispatch` (where a job MultiKueue dispatched runs), `jobview` (a job
and its pods as a person reads them), `selectors` (Argo's successCondition/failureCondition
evaluator), `manifests` (reading job files and the objects beside their jobs, `--set` overrides),
`served` (why the cluster does not serve a kind: its CRD missing or not accepted), `kubeconfig`
(kubectl's default namespace), `tables` and `durations` (kubectl-style output and input), `kinds`
(the two kinds, extending `tfjob_api.kinds`), `errors` (`ClusterApiError`, `CredentialsError`,
`KindNotServed`). API access goes through the official `kubernetes` client's public API, in
`connection` only; the rules (labels, conditions, what a pod's status means, TF_CONFIG) are the API
contract the operator follows too (`tfjob_api`, `tfconfig`), the only packages of this repository
imported here. Nothing here imports the operator (`controller`, `kube`, `informers`, `workqueue`),
and the operator imports nothing from here. See docs/using.md.
"""

from tfjobs.client import STATES, JobFailed, JobNotFound, TfJobClient, TfJobError, WaitTimeout
from tfjobs.errors import ClusterApiError, CredentialsError, KindNotServed
from tfjobs.logs import LogLine
from tfjobs.progress import Progress, RoleProgress
from tfjobs.selectors import Conditions, SelectorError
from tfjobs.training import Training

__all__ = [
    "STATES",
    "ClusterApiError",
    "Conditions",
    "CredentialsError",
    "JobFailed",
    "JobNotFound",
    "KindNotServed",
    "LogLine",
    "Progress",
    "RoleProgress",
    "SelectorError",
    "TfJobClient",
    "TfJobError",
    "Training",
    "WaitTimeout",
]
