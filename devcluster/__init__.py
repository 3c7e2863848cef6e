"""Local control plane (etcd, kube-apiserver, controller-manager, scheduler, KWOK) for tests and demos."""
