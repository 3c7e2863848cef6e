"""A streamed response as an iterator of items made from its lines, closable from another thread.

The API server sends a watch as newline-separated JSON events over one long HTTP response, and a
followed pod log as lines of text. This module reads such a response chunk by chunk and splits lines
itself (one allocation per line, no per-byte work), turns a broken connection into `ApiError`
status 0, and lets another thread end a blocked read at once by shutting the socket down: an
informer must be able to stop its watch promptly, and so must someone following a log.
`WatchStream` decodes JSON events, `TextStream` keeps text lines.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Any, Generic, Self, TypeVar

import orjson
import urllib3

from kube.errors import ApiError

__all__ = ["LineStream", "TextStream", "WatchStream"]

T = TypeVar("T")


class LineStream(ABC, Generic[T]):
    """Items made from the lines of one streamed HTTP response, closable from another thread.

    Iterating ends when the server ends the response or after `close()`. A broken connection or
    the client read timeout raises `ApiError` (status 0). `close()` may be called from another
    thread: it shuts the socket down so a blocked read returns at once, and the iterating thread then
    releases the connection. Subclasses say what a line becomes (`_item`), whether blank lines count
    (`keep_blank`) and whether the body is content-decoded (`decode_content`).
    """

    keep_blank = False
    decode_content = False

    def __init__(self, response: Any, *, method: str = "GET", path: str = "") -> None:
        self._response = response
        self._method = method
        self._path = path
        self._lock = threading.Lock()
        self._closed = False
        self._reading = False
        self._released = False
        self._items = self._iter_items()

    @abstractmethod
    def _item(self, line: bytes) -> T | None:
        """What one line becomes; None skips it."""

    def __iter__(self) -> Iterator[T]:
        return self

    def __next__(self) -> T:
        return next(self._items)

    def __enter__(self) -> Self:
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

    def _iter_items(self) -> Iterator[T]:
        with self._lock:
            if self._closed:
                return
            self._reading = True
        try:
            for line in self._iter_lines():
                if self._closed:
                    return
                item = self._item(line)
                if item is not None:
                    yield item
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
        for chunk in self._response.stream(amt=None, decode_content=self.decode_content):
            if not chunk:
                continue
            if isinstance(chunk, str):
                chunk = chunk.encode("utf-8")
            pending += chunk
            if b"\n" not in chunk:
                continue
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if self.keep_blank or line.strip():
                    yield line
        if pending.strip() if not self.keep_blank else pending:
            yield pending  # a final line without its newline


class WatchStream(LineStream[dict[str, Any]]):
    """An iterator of decoded watch events (`{"type": ..., "object": {...}}`) over one HTTP response;
    iterating ends when the server closes the stream (its `timeoutSeconds` elapsed) or after `close()`."""

    def _item(self, line: bytes) -> dict[str, Any] | None:
        try:
            event = orjson.loads(line)  # a final line without its newline: the decoder decides whether it is whole
        except ValueError as exc:
            raise ApiError(0, "DecodeError", f"bad watch line: {exc}", method=self._method, path=self._path) from exc
        return event if isinstance(event, dict) else None


class TextStream(LineStream[str]):
    """The lines (str, without their newline) of a streamed text response, such as a pod's log.

    Unlike watch lines, blank lines are kept and nothing is decoded as JSON; the body is
    content-decoded and bytes that are not UTF-8 are replaced. Iteration ends when the server ends
    the response (a log without `follow`) or after `close()`."""

    keep_blank = True
    decode_content = True

    def _item(self, line: bytes) -> str:
        return line.decode("utf-8", errors="replace")


def _response_socket(response: Any) -> socket.socket | None:
    """The socket under a urllib3 response, found through the connection or the file object."""
    with contextlib.suppress(Exception):
        sock: socket.socket | None = response.connection.sock
        if sock is not None:
            return sock
    with contextlib.suppress(Exception):
        raw: socket.socket = response._fp.fp.raw._sock
        return raw
    return None

