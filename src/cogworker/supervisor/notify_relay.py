"""systemd notifications for a supervisor (``run -P N``): the children speak to it, it
speaks to systemd.

Under ``Type=notify`` only the service's main process may notify by default
(``NotifyAccess=main``), and a supervisor's service is ready when its children are, not when
it forks them. So the supervisor binds a datagram socket of its own (an abstract-namespace
name, unique per supervisor) and hands it to every child as ``NOTIFY_SOCKET``. Each child's
:class:`~cogworker.worker.service_notify.ServiceNotifier` then tells the supervisor, and the
kernel names the sending pid (``SO_PASSCRED``), so the supervisor knows which child said what:

* ``READY=1`` goes to systemd once every slot has a child that said ready, with
  ``STATUS=N of N children fetching``; the status is sent again whenever that count changes;
* ``WATCHDOG=1`` goes to systemd (at most once a second) whenever a child's beat pinged: the
  supervisor's loop is alive and some child reaches the broker. When no child can beat
  (the broker is gone), systemd's ``WatchdogSec=`` restarts the service, as it does a single
  worker's;
* ``STOPPING=1`` goes to systemd when the supervisor's stop begins.

Without ``NOTIFY_SOCKET`` (or where the kernel cannot name senders) nothing is bound, the
children get no ``NOTIFY_SOCKET`` either, and every call does nothing.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import struct
import time
import uuid
from collections.abc import Collection, Mapping
from typing import Final

from cogworker.worker.service_notify import NOTIFY_SOCKET_ENV, ServiceNotifier

logger = logging.getLogger("cogworker.supervisor")

WATCHDOG_EVERY: Final = 1.0
"""Seconds between two watchdog pings passed on to systemd, however many children ping."""
_CREDENTIALS: Final = struct.Struct("iII")  # struct ucred: pid, uid, gid
_MAX_MESSAGE: Final = 4096


class NotifyRelay:
    """The supervisor's end of the notification protocol (inactive without systemd)."""

    def __init__(self, upstream: ServiceNotifier, slots: int) -> None:
        self.upstream = upstream
        self.slots = slots
        self._socket: socket.socket | None = None
        self._name = ""
        self._ready: set[int] = set()
        self._said_ready = False
        self._last_status = ""
        self._last_watchdog = 0.0
        if upstream.enabled:
            self._socket = _bind_relay_socket()
            if self._socket is not None:
                self._name = self._socket.getsockname()[1:].decode()

    @classmethod
    def from_environment(cls, slots: int,
                         environ: Mapping[str, str] | None = None) -> NotifyRelay:
        return cls(ServiceNotifier.from_environment(environ), slots)

    @property
    def active(self) -> bool:
        return self._socket is not None

    def child_environment(self) -> dict[str, str | None]:
        """``NOTIFY_SOCKET`` for a child: the relay's socket, or None (remove it) when the
        relay is inactive, so that no child ever notifies systemd itself."""
        return {NOTIFY_SOCKET_ENV: f"@{self._name}" if self.active else None}

    def poll(self, live_children: Collection[int], now: float | None = None) -> None:
        """Read what the children said since the last poll and tell systemd what follows."""
        if self._socket is None:
            return
        pinged = False
        for pid, message in self._drain():
            fields = message.split("\n")
            if "READY=1" in fields:
                self._ready.add(pid)
            pinged = pinged or "WATCHDOG=1" in fields
        self._ready &= set(live_children)
        self._report_ready()
        moment = time.monotonic() if now is None else now
        if pinged and moment - self._last_watchdog >= WATCHDOG_EVERY:
            self._last_watchdog = moment
            self.upstream.watchdog()

    def stopping(self) -> None:
        self.upstream.stopping()

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None

    def _report_ready(self) -> None:
        fetching = min(len(self._ready), self.slots)
        status = f"STATUS={fetching} of {self.slots} children fetching"
        if not self._said_ready:
            if fetching < self.slots:
                return
            self._said_ready = True
            self.upstream.send(f"READY=1\n{status}")
        elif status != self._last_status:
            self.upstream.send(status)
        self._last_status = status

    def _drain(self) -> list[tuple[int, str]]:
        assert self._socket is not None
        heard: list[tuple[int, str]] = []
        while True:
            try:
                data, ancillary, _flags, _address = self._socket.recvmsg(
                    _MAX_MESSAGE, socket.CMSG_SPACE(_CREDENTIALS.size))
            except (BlockingIOError, InterruptedError):
                return heard
            pid = _sender_pid(ancillary)
            if pid is not None:
                heard.append((pid, data.decode(errors="replace")))


def _sender_pid(ancillary: list[tuple[int, int, bytes]]) -> int | None:
    for level, kind, data in ancillary:
        if (level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS
                and len(data) >= _CREDENTIALS.size):
            pid, _uid, _gid = _CREDENTIALS.unpack(data[:_CREDENTIALS.size])
            return int(pid)
    return None


def _bind_relay_socket() -> socket.socket | None:
    """A non-blocking datagram socket at a fresh abstract name that hears senders' pids;
    None (logged) where the platform cannot."""
    passcred = getattr(socket, "SO_PASSCRED", None)
    if passcred is None or not hasattr(socket, "SCM_CREDENTIALS"):
        logger.warning("supervisor: this platform cannot tell which child notifies, so the "
                       "children's readiness is not passed on to systemd")
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, passcred, 1)
        sock.bind(f"\0cogworker-supervisor-{os.getpid()}-{uuid.uuid4().hex[:12]}".encode())
        sock.setblocking(False)
    except OSError as exc:
        with contextlib.suppress(OSError):
            sock.close()
        logger.warning("supervisor: cannot bind a notification socket for the children "
                       "(%s); systemd will not hear of their readiness", exc)
        return None
    return sock
