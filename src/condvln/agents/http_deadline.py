"""HTTP connections with one deadline per request: connecting, sending and the whole answer.

A socket timeout bounds each ``recv`` on its own, so a server that sends one byte every few
seconds never trips it and a request can last for ever. Here every read and write first
shrinks the socket's timeout to what is left of the request's deadline (a monotonic clock), and
raises :class:`TimeoutError` once it has passed: the status line, the headers and the body
together end in time, whatever the server's pace.

>>> deadline = Deadline()
>>> deadline.remaining() is None  # no deadline set: no limit
True
>>> deadline.start(5.0)
>>> 4.0 < deadline.remaining() <= 5.0
True
>>> deadline.start(None)
>>> deadline.remaining() is None
True
"""

from __future__ import annotations

import http.client
import io
import socket
import time
from typing import Any


class Deadline:
    """The deadline of the request under way (``None``: no limit)."""

    def __init__(self) -> None:
        self._at: float | None = None

    def start(self, seconds: float | None) -> None:
        """Allow the next request ``seconds`` from now (``None``: no limit)."""
        self._at = None if seconds is None else time.monotonic() + seconds

    def remaining(self) -> float | None:
        """Seconds left (``None``: no limit); :class:`TimeoutError` once the deadline passed."""
        if self._at is None:
            return None
        left = self._at - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request's deadline passed")
        return left


class _Reader(io.RawIOBase):
    """The socket's input, each ``recv`` bounded by what is left of the deadline."""

    def __init__(self, sock: socket.socket, deadline: Deadline) -> None:
        super().__init__()
        self._sock, self._deadline = sock, deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        self._sock.settimeout(self._deadline.remaining())
        return self._sock.recv_into(buffer)


class _DeadlineSocket:
    """A connected socket whose writes and response streams keep to the deadline (the rest of
    the socket interface is the socket's own)."""

    def __init__(self, sock: socket.socket, deadline: Deadline) -> None:
        self._sock, self._deadline = sock, deadline

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)

    def sendall(self, data: Any, *flags: int) -> None:
        self._sock.settimeout(self._deadline.remaining())
        self._sock.sendall(data, *flags)

    def makefile(self, mode: str = "rb", *args: Any, **kwargs: Any) -> io.BufferedReader:
        if mode != "rb":
            raise ValueError(f"only 'rb' streams are kept to the deadline, not {mode!r}")
        return io.BufferedReader(_Reader(self._sock, self._deadline))


class _DeadlineMixin:
    """Connects within ``connect_timeout`` and the deadline, then keeps the socket to it."""

    deadline: Deadline
    connect_timeout: float
    timeout: float | None
    sock: Any

    def connect(self) -> None:
        left = self.deadline.remaining()
        self.timeout = self.connect_timeout if left is None else min(self.connect_timeout, left)
        super().connect()  # type: ignore[misc]
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = _DeadlineSocket(self.sock, self.deadline)


class DeadlineHTTPConnection(_DeadlineMixin, http.client.HTTPConnection):
    """An HTTP connection whose requests keep to ``deadline`` (set it before each request)."""

    def __init__(self, host: str, port: int, *, connect_timeout: float) -> None:
        super().__init__(host, port, timeout=connect_timeout)
        self.connect_timeout, self.deadline = connect_timeout, Deadline()


class DeadlineHTTPSConnection(_DeadlineMixin, http.client.HTTPSConnection):
    """An HTTPS connection whose requests keep to ``deadline`` (set it before each request)."""

    def __init__(self, host: str, port: int, *, connect_timeout: float) -> None:
        super().__init__(host, port, timeout=connect_timeout)
        self.connect_timeout, self.deadline = connect_timeout, Deadline()
