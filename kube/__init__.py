"""The Kubernetes API client boundary: everything the rest of the project needs to talk to the API.

`client.Kube` does raw-JSON requests and watches (and is the one module that imports `kubernetes`),
`errors.ApiError` says what went wrong, `paths.resource_path` builds REST paths, `throttle` is the
client-side QPS limit, `watch` decodes watch streams, `retry.retry_transient` is the one retry
policy for transient failures, and `clock` the one clock every timing rule in the project uses.
This package imports nothing else of the project: everything else builds on it.
"""

from kube.client import Kube, OnRequest
from kube.errors import FENCED_REASON, ApiError, ConfigError
from kube.paths import ParsedPath, parse_path, resource_path
from kube.throttle import TokenBucket
from kube.watch import WatchStream

__all__ = [
    "FENCED_REASON",
    "ApiError",
    "ConfigError",
    "Kube",
    "OnRequest",
    "ParsedPath",
    "TokenBucket",
    "WatchStream",
    "parse_path",
    "resource_path",
]
