"""Training progress in a job's status (`spec.progress`; docs/design.md "Training progress").

The reporting pod is chosen and told where to serve by `controller.job.progress`; here the operator
reads it and keeps it: `poller` reads the reports through the API server's pod proxy on its own thread
and schedule, `book` remembers each job's latest report and what its status should say, and
`estimate` and `status` are the pure parts (percent and ETA from the recent rate; the
`status.progress` document). The reconciler only merges what the book holds into the status it
writes anyway, so progress never adds a write of its own beyond one per change.
"""
