"""A watch response as an iterator of decoded events, closable from another thread.

The API server sends a watch as newline-separated JSON events over one long HTTP response. This
module reads it chunk by chunk and splits lines itself (one allocation per event, no per-byte work),
turns a broken connection into `ApiError` status 0, and lets another thread end a blocked read at
once by shutting the socket down: an informer must be able to stop its watch promptly.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Iterator
from typing import Any

import urllib3

from kube.errors import ApiError

__all__ = ["WatchStream"]


class WatchStream:
    """An iterator of decoded watch events (`{"type": ..., "object": {...}}`) over one HTTP response.

    Iterating ends when the server closes the stream (its `timeoutSeconds` elapsed) or after
    `close()`. A broken connection or the client read timeout raises `ApiError` (status 0).
    `close()` may be called from another thread: it shuts the socket down so a blocked read returns
    at once, and the iterating thread then releases the connection.
    """

    def __init__(self, response: Any, *, method: str = "GET", path: str = "") -> None:
        self._response = response
        self._method = method
        self._path = path
        self._lock = threading.Lock()
        self._closed = False
        self._reading = False
        self._released = False
        self._events = self._iter_events()

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self

    def __next__(self) -> dict[str, Any]:
        return next(self._events)

    def __enter__(self) -> WatchStream:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Stop the stream; safe from any thread and more than once."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            reading = self._reading
        sock = _response_socket(self._response)
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        if not reading:
            self._release()

    def _release(self) -> None:
        with self._lock:
            if self._released:
                return
            self._released = True
        with contextlib.suppress(Exception):
            self._response.close()
        with contextlib.suppress(Exception):
            self._response.release_conn()

    def _iter_events(self) -> Iterator[dict[str, Any]]:
        with self._lock:
            if self._closed:
                return
            self._reading = True
        try:
            for line in self._iter_lines():
                if self._closed:
                    return
                try:
                    event = json.loads(line)
                except ValueError as exc:
                    raise ApiError(
                        0, "DecodeError", f"bad watch line: {exc}", method=self._method, path=self._path
                    ) from exc
                if isinstance(event, dict):
                    yield event
        except ApiError:
            if not self._closed:
                raise
        except (urllib3.exceptions.HTTPError, OSError, ValueError, AttributeError) as exc:
            # After close() the shut-down socket surfaces as a protocol/SSL/OS error: a normal end.
            if not self._closed:
                raise ApiError.from_transport(exc, method=self._method, path=self._path) from exc
        finally:
            with self._lock:
                self._reading = False
            self._release()

    def _iter_lines(self) -> Iterator[bytes]:
        pending = b""
        for chunk in self._response.stream(amt=None, decode_content=False):
            if not chunk:
                continue
            if isinstance(chunk, str):
                chunk = chunk.encode("utf-8")
            pending += chunk
            if b"\n" not in chunk:
                continue
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if line.strip():
                    yield line
        if pending.strip():
            yield pending  # a final line without its newline: json.loads decides whether it is whole


def _response_socket(response: Any) -> socket.socket | None:
    """The socket under a urllib3 response, found through the connection or the file object."""
    with contextlib.suppress(Exception):
        sock = response.connection.sock
        if sock is not None:
            return sock
    with contextlib.suppress(Exception):
        return response._fp.fp.raw._sock
    return None

