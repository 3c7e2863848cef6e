"""Import-system surgery that keeps the operator's RSS low: how `kube.client` loads the parts of the
`kubernetes` package it uses without the rest.

`import kubernetes` runs the package's `__init__`, which imports every generated API class and ~800
model classes (dynamic, watch, stream, leaderelection too): ~35 MB of RSS that the operator never
uses, since every response is raw JSON. It needs only `ApiClient` (HTTP, auth, TLS), `Configuration`,
the exceptions and the kubeconfig/in-cluster loaders. So `kube.client` replaces the package
`__init__`s with empty packages over the real directories (`empty_package`) and executes only the
submodules it needs, while the modules those submodules import but rarely call stand in as
placeholders (`imported_on_first_use`, `RARELY_USED`) that load the real module on first use.

This module names no package of its own: `kube.client` stays the only module that imports
`kubernetes`, and says which parts.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import sys
import types
from collections.abc import Callable, Iterator, Mapping
from typing import Any

__all__ = ["RARELY_USED", "empty_package", "imported_on_first_use", "package_directory"]

# What the client core and the config loaders import but call only on paths the operator rarely or
# never takes, with the names they take from each module. Loaded for real, they cost ~6 MB of RSS
# (requests alone pulls in charset_normalizer, idna and a second copy of its urllib3 names).
RARELY_USED: dict[str, tuple[str, ...]] = {
    "requests.utils": ("should_bypass_proxies",),  # only with a proxy in the configuration
    "requests_oauthlib": ("OAuth2Session",),  # only to refresh an OIDC token from a kubeconfig
    "oauthlib.oauth2": (),  # only its InvalidClientIdError, in that same OIDC refresh
    "multiprocessing.pool": ("ThreadPool",),  # only for the generated client's async_req
    "dateutil.parser": ("parse",),  # only to decode dates into typed models (benchmarks)
}


def package_directory(name: str) -> str:
    """The directory of an installed top-level package, found without importing it."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise ImportError(f"the {name} package is not installed")
    return os.path.dirname(spec.origin)


def empty_package(root: str, name: str) -> types.ModuleType:
    """The package `name` (under the top-level package in `root`) as an empty package over its real
    directory, so its submodules import while its `__init__` never runs; set as its parent's attribute.
    A module already in `sys.modules` is kept as it is."""
    module = sys.modules.get(name)
    if module is None:
        module = types.ModuleType(name)
        module.__path__ = [os.path.join(root, *name.split(".")[1:])]
        module.__package__ = name
        sys.modules[name] = module
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, module)
    return module


class _ImportedOnUse(types.ModuleType):
    """Stands in for a module while `kubernetes` is imported; reading a missing attribute (as in
    `oauthlib.oauth2.rfc6749.errors`) imports the real module and reads it there."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or sys.modules.get(self.__name__) is self:  # still standing in
            raise AttributeError(name)
        return getattr(importlib.import_module(self.__name__), name)


def _call_on_use(module: str, name: str) -> Callable[..., Any]:
    def first_use(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    first_use.__name__ = name
    return first_use


@contextlib.contextmanager
def imported_on_first_use(modules: Mapping[str, tuple[str, ...]]) -> Iterator[None]:
    """While the block imports `kubernetes` modules, `modules` (and their parent packages) not yet
    loaded are placeholders: the names taken from them are functions that import the real module
    when first called. The placeholders leave `sys.modules` at the end of the block, so any later
    import, and any first call, loads the real thing."""
    placed: list[str] = []
    for dotted, names in modules.items():
        parts = dotted.split(".")
        for depth in range(1, len(parts) + 1):
            name = ".".join(parts[:depth])
            if name in sys.modules:
                continue
            placeholder = _ImportedOnUse(name)
            if depth > 1:
                placeholder.__package__ = name
                setattr(sys.modules[".".join(parts[:depth - 1])], parts[depth - 1], placeholder)
            sys.modules[name] = placeholder
            placed.append(name)
        module = sys.modules[dotted]
        if isinstance(module, _ImportedOnUse):
            for attribute in names:
                setattr(module, attribute, _call_on_use(dotted, attribute))
    try:
        yield
    finally:
        for name in reversed(placed):  # nothing left behind: neither the module nor its parent's attribute
            left = sys.modules.get(name)
            if not isinstance(left, _ImportedOnUse):
                continue
            del sys.modules[name]
            parent, _, child = name.rpartition(".")
            if parent and getattr(sys.modules.get(parent), child, None) is left:
                delattr(sys.modules[parent], child)
