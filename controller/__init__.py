"""The TensorFlowJob controller: from a job's desired state to its Pods, Service and status.

Where things are, in the order the layers build on each other (imports only go downward). This is the
map of every module of the package and its subpackages (tests/unit/test_code_maps.py holds it true:
each bullet names the modules of the package it starts with, the one without a package those at the
root; the README's map stops at the packages):

* `job/` -- the rules of a job as pure functions on plain dicts: `plan.plan_job` (the lifecycle:
  observed state in, a plan out), `draft` (the plan and the edits every rule shares, failing a job
  among them), `children` (what a plan says of each owned type, and a declared type's plan rule),
  `refusals` (what the API server's refusals mean for a job), `builders` (pods and the
  Service), `preview` (what `tfjob-operator render` shows, asked of the planner), `validation` (the
  CRD's schema plus what it cannot say), `podcache` (what the pod cache keeps of a pod, which updates
  matter), `mergepatch`; the failures: `failurepolicy` (what a failed pod means by the job's failure
  rules), `failures` (the planner's failed pods: counts, budgets, retries), `budgets` (per-role
  restart budgets) and `disruptions` (a disrupted member restarts the group, restartScope All);
  and the production features of docs/production.md: `stall` (a role's stall probes)
  and `stalled` (restarts they most likely caused), `progress` (which pod reports its training
  progress, and where it is read), `netpol` (the job's NetworkPolicy), `gang` (the gang scheduler's
  PodGroup and what the pods carry for it), `gang_schedulers` (what differs between Volcano,
  scheduler-plugins and Kubernetes' own) and `gang_workload` (the job's Workload under Kubernetes'
  own gang scheduling), `profiles` and `profile_file` (start-up profiles), `pending` (the Pending
  condition: pods that cannot be scheduled or started); `kinds` (the two kinds served, TensorFlowJob
  and Kubeflow's TFJob: work-queue keys, where each lives, model and status) and `kubeflow/`.
* `job/kubeflow/` -- the pure translation between a TFJob and the job model (docs/kubeflow.md):
  `validation` (a TFJob validated as admission does), `ownership` (which TFJobs this operator runs,
  by `runPolicy.managedBy`), `labels` (Kubeflow's labels on its pods and Service) and `convert`
  (`tfjob-operator convert`: a TFJob as the equivalent TensorFlowJob).
* `kueue/` -- queueing with Kueue: `protocol` (the Workload protocol, pure), `topology` (Kueue's
  topology-aware scheduling: podSet topology requests, the topology gate, pure), `tfjobs` (who queues
  Kubeflow TFJobs, and their Workloads' identity, pure), `suspension` (a user's suspension of a
  queued job: its Workload deactivated, pure), `gate` (what the reconciler consults
  before planning a queued job, and the Workload writes) and `multikueue` (a job dispatched by
  MultiKueue: its Workload kept on the manager, the prebuilt Workload adopted on a worker).
* the control loop, here at the root, cut by reason to change: `options.ControllerOptions` (the
  configuration, built once from the flags, with production's defaults), `caches.JobCaches` (the
  read side: informers and the lookups made in their caches), `handlers.JobEventHandlers` (an
  event becomes a job key on the queue: owner mapping, pod batching, echo dropping),
  `owned` (one declaration per object type a job owns -- pods, Service, NetworkPolicy, PodGroup,
  Kueue Workload --: watched, routed and written as it says; the caches, handlers and reconciler
  iterate over them), `reconciler.Reconciler` (observes, plans and
  carries out one job's plan -- deletes, creates, status, events, TTL deletion -- reading through
  the read side), `observation` (what one reconcile observed, and its act phase's running state),
  `companions` (writes owned objects: its NetworkPolicy, PodGroup, any declared type), `outcome` (what one
  reconcile did, and how the API server's refusals are classified), `controller.Controller` (the
  loop that assembles them: queue, worker threads, start and stop), `memory.JobMemory` (the one owner
  of what is remembered per job between reconciles, with one `forget(key)`: the `expectations` --
  creates and deletes the cache has not shown yet --, the written-status overlay, the deferred
  status, the validation memo, the progress book), `events` (the Event recorder, a bounded queue) and
  `metrics` (the controller's Prometheus metrics).
* `progress/` -- training progress in a job's status (`spec.progress`): `poller` (reads `/progress`
  through the API server's pod proxy, on threads of its own), `book` (each job's latest report and
  what its status should say), `estimate` (percent and ETA from the recent rate), `status`
  (`status.progress`, built from a valid report) and `resume` (what an interruption cost: the steps lost).
* `process/` -- the operator process: `cli` (`tfjob-operator run|render|validate|convert`), `app` (wiring
  and shutdown), `leader` (Lease election), `health` (the health server: /healthz, /readyz), `logs`, `profiles` (reading
  the `--profiles` file), `malloc` (fewer glibc malloc arenas, so resident memory stays flat after
  bursts).

The API contract it applies (`tfjob_api`: the kinds' names and labels, conditions, the CRD schema and its
defaults, what a pod's status means, timestamps, reading job files), the API client (`kube`), the
TF_CONFIG rules (`tfconfig`), the work queue and the informers are packages of their own below this
one; the client for people who train (`tfjobs`) stands beside it, importing none of it.
docs/design.md explains the rules and the reasons. The heartbeat helper that training code uses with
a stall rule (`tfheartbeat`) is a package of its own too, importing nothing of the operator.
"""
