"""The TensorFlowJob controller: from a job's desired state to its Pods, Service and status.

Where things are, in the order the layers build on each other (imports only go downward):

* `job/` -- the rules of a job as pure functions on plain dicts: `plan.plan_job` (the lifecycle:
  observed state in, a plan out), `builders` (pods and the Service), `validation` (the CRD's schema
  plus what it cannot say), `podcache` (what the pod cache keeps of a pod, which updates matter),
  `mergepatch`; and the production features of
  docs/production.md: `stall` (a role's stall probes) and `stalled` (restarts they most likely
  caused), `netpol` (the job's NetworkPolicy), `profiles` and `profile_file` (start-up profiles),
  `pending` (the Pending condition: pods that cannot be scheduled or started); `kinds` (the two kinds
  served, TensorFlowJob and Kubeflow's TFJob: work-queue keys, where each lives, model and status)
  and `kubeflow/` (the pure translation between a TFJob and the job model, docs/kubeflow.md).
* `kueue/` -- queueing with Kueue: `protocol` (the Workload protocol, pure) and `gate` (what the
  reconciler consults before planning a queued job, and the Workload writes).
* the control loop, here at the root, cut by reason to change: `options.ControllerOptions` (the
  configuration, built once from the flags, with production's defaults), `caches.JobCaches` (the
  read side: informers and the lookups made in their caches), `handlers.JobEventHandlers` (an
  event becomes a job key on the queue), `reconciler.Reconciler` (carries out one job's plan: the
  only writer; it reads through the read side), `controller.Controller` (the loop that assembles
  them: queue, worker threads, start and stop), `memory.JobMemory` (what is remembered per job
  between reconciles: `expectations`, the written status, the deferred status, the validation
  memo), `events` (the Event recorder) and `metrics`.
* `process/` -- the operator process: `cli` (`tfjob-operator run|render|validate|convert`), `app` (wiring
  and shutdown), `leader` (Lease election), `health` (/healthz, /readyz), `logs`, `profiles` (reading
  the `--profiles` file), `malloc` (fewer glibc malloc arenas, so resident memory stays flat after
  bursts).

The API contract it applies (`tfjob_api`: the kinds' names and labels, conditions, the CRD schema and its
defaults, what a pod's status means, timestamps, reading job files), the API client (`kube`), the
TF_CONFIG rules (`tfconfig`), the work queue and the informers are packages of their own below this
one; the client for people who train (`tfjobs`) stands beside it, importing none of it.
docs/design.md explains the rules and the reasons. The heartbeat helper that training code uses with
a stall rule (`tfheartbeat`) is a package of its own too, importing nothing of the operator.
"""
