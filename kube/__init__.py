"""The Kubernetes API client boundary: everything the rest of the project needs to talk to the API.

`client.Kube` does raw-JSON requests and watches (and is the one module that imports `kubernetes`),
`errors.ApiError` says what went wrong, `paths.resource_path` builds REST paths, `throttle` is the
client-side QPS limit, `watch` decodes watch streams, `retry.retry_transient` is the one retry
policy for transient failures, and `clock` the one clock every timing rule in the project uses.
This package imports nothing else of the project: everything else builds on it.

The names below are loaded on first use (PEP 562), not when the package is: a module that needs only
`kube.clock` or `kube.throttle` (the work queue) must not pay for `kube.client`, which loads the
`kubernetes` package and urllib3's pools.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kube.client import Kube, OnRequest
    from kube.errors import FENCED_REASON, ApiError, ConfigError
    from kube.paths import ParsedPath, parse_path, resource_path
    from kube.throttle import TokenBucket
    from kube.watch import WatchStream

# Each name and the module that defines it.
_HOMES = {
    "FENCED_REASON": "kube.errors",
    "ApiError": "kube.errors",
    "ConfigError": "kube.errors",
    "Kube": "kube.client",
    "OnRequest": "kube.client",
    "ParsedPath": "kube.paths",
    "TokenBucket": "kube.throttle",
    "WatchStream": "kube.watch",
    "parse_path": "kube.paths",
    "resource_path": "kube.paths",
}

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


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'kube' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
