"""Reading a controller's work queue in tests, without worker threads."""

from __future__ import annotations

from typing import Any


def drain(controller: Any) -> list[str]:
    """Every key ready in the controller's queue now, in order (each marked done)."""
    keys = []
    while len(controller.queue):
        key, _ = controller.queue.get()
        keys.append(key)
        controller.queue.done(key)
    return keys
