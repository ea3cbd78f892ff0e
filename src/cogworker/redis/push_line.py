"""A connection kept for pushes: a frame written and its one-line replies read directly.

redis-py opens the connection — address, TLS, AUTH, SELECT, or the current master named
by Sentinel — and after that a push bypasses redis-py's command layer: no pool checkout,
no command packing, no generic reply parser. On the machine of
``docs/explanation/performance.md`` that layer cost more than the rest of
``perform_async`` together. The direct path needs a RESP2 connection (the pusher opens its
lines so) whose socket redis-py exposes; otherwise the line uses redis-py's own send and
read on the same connection.

Before each use the line makes sure it is not stale, as the pool does for its connections:
a socket with something to read (the server closed it, e.g. after a restart or
``CLIENT KILL``) is reopened, and one idle for longer than the health-check interval is
PINGed first. Either happens before the frame is sent, so a job is never written to a
connection known to be bad; a failure after the write is raised, never retried (the job
may be stored already).

The bytes move through a :class:`~cogworker.redis.line_socket.LineSocket`, which waits for
a reply by polling the socket for a few tens of microseconds before it sleeps.
"""

from __future__ import annotations

import socket
import time
from typing import Any

import redis.exceptions as rex

from cogworker.redis.line_socket import LineSocket, SpinBudget

Reply = int | rex.ResponseError

_PING = b"*1\r\n$4\r\nPING\r\n"
_CRLF = b"\r\n"
_REPLY_LIMIT = 65_536  # a one-line reply longer than this is not one of ours


class PushLine:
    """One RESP2 connection, used by one thread at a time (the :class:`Pusher` opens it
    so, and hands it out)."""

    def __init__(self, connection: Any, *, idle_limit: float, busy_wait: float) -> None:
        self.connection = connection
        self._idle_limit = idle_limit
        self._spin = SpinBudget(busy_wait)
        self._direct = True  # until redis-py turns out to expose no plain socket
        self._sock: LineSocket | None = None
        self._used_at = 0.0

    def exchange(self, frame: bytes, count: int) -> list[Reply]:
        """Send ``frame`` (``count`` commands that each answer one line); their replies.

        Error replies are returned, not raised, and the line is closed after one (a
        READONLY reply means the master changed; the next connect asks again). Connection
        errors and timeouts raise redis-py's exceptions, with the line closed.
        """
        try:
            sock = self._ready_socket() if self._direct else None
            if sock is None:
                replies = self._redis_py_exchange(frame, count)
            else:
                self._write(sock, frame)
                replies = [_parse(line) for line in _read_lines(sock, count)]
        except BaseException as exc:
            self.close()
            if isinstance(exc, TimeoutError):
                raise rex.TimeoutError(f"Timeout talking to Redis: {exc}") from exc
            if isinstance(exc, OSError):
                raise rex.ConnectionError(f"Error talking to Redis: {exc}") from exc
            raise
        for reply in replies:
            if not isinstance(reply, int):
                self.close()
                break
        return replies

    def close(self) -> None:
        """Disconnect; the next exchange connects again."""
        self._sock = None
        self.connection.disconnect()

    # direct ------------------------------------------------------------------------------
    def _write(self, sock: LineSocket, frame: bytes) -> None:
        sock.send_all(frame)

    def _ready_socket(self) -> LineSocket | None:
        """The open, fresh socket; None when redis-py does not expose one."""
        now = time.monotonic()
        if self._sock is not None and self._sock.has_data():
            self.close()  # the server spoke unasked: it closed the connection
        elif self._sock is not None and now - self._used_at > self._idle_limit:
            self._ping_or_close()
        if self._sock is None:
            self._open()
        self._used_at = now
        return self._sock

    def _open(self) -> None:
        self.connection.connect()
        sock = getattr(self.connection, "_sock", None)
        if not isinstance(sock, socket.socket):
            self._direct = False  # a redis-py without a plain socket: use its own calls
            return
        self._sock = LineSocket(sock, self._spin)

    def _ping_or_close(self) -> None:
        assert self._sock is not None
        try:
            self._write(self._sock, _PING)
            healthy = _read_lines(self._sock, 1) == [b"+PONG"]
        except (OSError, rex.RedisError):
            healthy = False
        if not healthy:
            self.close()

    # through redis-py --------------------------------------------------------------------
    def _redis_py_exchange(self, frame: bytes, count: int) -> list[Reply]:
        connection = self.connection
        try:
            stale = connection.can_read(timeout=0)  # True also when the server closed it
        except rex.ConnectionError:
            stale = True
        if stale:
            connection.disconnect()  # send_packed_command connects again
        connection.send_packed_command([frame])
        return [_read_reply(connection) for _ in range(count)]


def _read_lines(sock: LineSocket, count: int) -> list[bytes]:
    data = sock.receive()
    while data.count(_CRLF) < count:
        if not data or len(data) > _REPLY_LIMIT:
            break
        chunk = sock.receive()
        if not chunk:
            raise rex.ConnectionError("Redis closed the connection before replying")
        data += chunk
    if not data:
        raise rex.ConnectionError("Redis closed the connection before replying")
    lines = data.split(_CRLF)
    if len(lines) != count + 1 or lines[-1]:
        raise rex.InvalidResponse(f"unexpected reply from Redis: {bytes(data[:200])!r}")
    return lines[:-1]


def _parse(line: bytes) -> Reply:
    kind = line[:1]
    if kind == b":":
        return int(line[1:])
    if kind == b"-":
        return rex.ResponseError(line[1:].decode("utf-8", "replace"))
    raise rex.InvalidResponse(f"unexpected reply from Redis: {bytes(line[:200])!r}")


def _read_reply(connection: Any) -> Reply:
    """One reply; an error reply is returned (not raised) so the next is still read."""
    try:
        return int(connection.read_response())
    except rex.ResponseError as exc:
        return exc
