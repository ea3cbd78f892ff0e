"""The socket under a push line: non-blocking, written in full, read after a short busy-wait.

A push waits for one short reply. From a Redis on the same host (or the same rack) that
reply arrives in a few tens of microseconds, which is less than the kernel takes to put the
waiting thread to sleep and wake it again: on the machine of
``docs/explanation/performance.md`` an LPUSH answered in 24 µs to a caller polling the socket
and in 62-72 µs to one asleep in ``recv``. So the line first polls the socket for up to
``push_busy_wait`` seconds (50 µs by default), and only then sleeps in ``poll()``.

A Redis farther away answers later than that; polling would then only burn CPU. The line
keeps a moving share of the replies that outlasted the busy-wait (each reply weighs 1/8);
while more than half did, it sleeps at once, trying one busy-wait again every
:data:`PAUSE` seconds. A distant Redis so costs one wasted busy-wait per 50 ms (0.1 % of a
core), and a burst of slow replies from a near one (the machine was busy) stops the
busy-wait for no longer than that. It holds the GIL for at most its limit, far less than
the 5 ms any running Python thread may hold it.
"""

from __future__ import annotations

import select
import socket
import ssl
import time
from collections.abc import Callable

READ_SIZE = 4096
PAUSE = 0.05
_WEIGHT = 1 / 8  # of the latest reply in the share of slow ones
_TOO_SLOW = 0.5  # share of slow replies above which the line stops busy-waiting

# What a non-blocking socket raises when it would have to wait (a TLS socket may need to
# read before it can write, and the reverse, during a renegotiation).
_WOULD_BLOCK = (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError)


class SpinBudget:
    """How long the next read may busy-wait, learnt from how the last ones went."""

    def __init__(self, limit: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self.clock = clock
        self.slow_share = 0.0
        self._paused_until = 0.0

    def deadline(self) -> float | None:
        """The clock reading until which to busy-wait; None: sleep at once."""
        if self.limit <= 0:
            return None
        now = self.clock()
        return None if now < self._paused_until else now + self.limit

    def hit(self) -> None:
        """The reply came within the busy-wait."""
        self.slow_share -= self.slow_share * _WEIGHT

    def missed(self) -> None:
        """The busy-wait ran out before the reply came."""
        self.slow_share += (1.0 - self.slow_share) * _WEIGHT
        if self.slow_share > _TOO_SLOW:
            self._paused_until = self.clock() + PAUSE


class LineSocket:
    """A connected socket (plain, Unix or TLS) switched to non-blocking mode; its former
    timeout (redis-py's ``socket_timeout``; None: no limit) bounds each wait."""

    def __init__(self, sock: socket.socket, spin: SpinBudget) -> None:
        self._timeout = sock.gettimeout()
        sock.setblocking(False)
        self._sock = sock
        self._tls = isinstance(sock, ssl.SSLSocket)  # may hold decrypted bytes poll can't see
        self._spin = spin
        self._readable = select.poll()
        self._readable.register(sock, select.POLLIN)

    def has_data(self) -> bool:
        """Whether something (or the end of the connection) waits to be read, now."""
        return bool(self._readable.poll(0))

    def send_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                view = view[self._sock.send(view):]
            except _WOULD_BLOCK as blocked:
                self._wait(blocked, select.POLLOUT)

    def receive(self) -> bytes:
        """The next bytes the socket has (b"" when the peer closed it)."""
        deadline = self._spin.deadline()
        while deadline is not None:
            try:
                data = self._sock.recv(READ_SIZE)
            except _WOULD_BLOCK:
                if self._spin.clock() < deadline:
                    continue
                self._spin.missed()
                break
            self._spin.hit()
            return data
        if not self._tls or not self._sock.pending():  # type: ignore[attr-defined]
            self._sleep_until(select.POLLIN)  # the bytes are not there yet: one syscall less
        while True:
            try:
                return self._sock.recv(READ_SIZE)
            except _WOULD_BLOCK as blocked:
                self._wait(blocked, select.POLLIN)

    def _wait(self, blocked: OSError, usual: int) -> None:
        """Sleep until the socket can do what ``blocked`` said it could not."""
        if isinstance(blocked, ssl.SSLWantReadError):
            usual = select.POLLIN
        elif isinstance(blocked, ssl.SSLWantWriteError):
            usual = select.POLLOUT
        self._sleep_until(usual)

    def _sleep_until(self, event: int) -> None:
        if event == select.POLLIN:
            poller = self._readable
        else:
            poller = select.poll()
            poller.register(self._sock, event)
        if not poller.poll(None if self._timeout is None else self._timeout * 1000):
            raise TimeoutError(f"Redis did not answer within {self._timeout} s")
