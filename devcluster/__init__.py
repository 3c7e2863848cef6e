"""Local control plane (etcd, kube-apiserver, controller-manager, scheduler, KWOK) for tests and demos.

See devcluster/README.md. The main entry points are re-exported here: `Cluster` (cluster.py)
and `wait_for` (waiting.py); the command line is `tfjob-devcluster` (cli.py).
"""

from .cluster import Cluster, ClusterError
from .waiting import wait_for

__all__ = ["Cluster", "ClusterError", "wait_for"]
