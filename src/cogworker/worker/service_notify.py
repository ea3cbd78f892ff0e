"""systemd's notification protocol (``sd_notify``): ready, watchdog pings, stopping.

When systemd starts a service with ``Type=notify`` it sets ``NOTIFY_SOCKET`` to a unix
datagram socket (a path, or an abstract-namespace name written with a leading ``@``). A
worker sends ``READY=1`` once it fetches, ``WATCHDOG=1`` after each successful heartbeat
(so ``WatchdogSec=`` restarts a worker whose beats stopped) and ``STOPPING=1`` when a stop
begins. One datagram each, with the standard library: no dependency. Without
``NOTIFY_SOCKET`` every call does nothing. A send that fails is logged once and never
stops the worker: the service manager's own timeouts then say what is wrong.

A supervised child (``run -P``) sends ``READY=1`` and ``WATCHDOG=1`` to its supervisor,
which passes them on (:mod:`cogworker.supervisor.notify_relay`), but never ``STOPPING=1``:
a child replaced by its supervisor does not mean the service stops.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Mapping

logger = logging.getLogger(__name__)

NOTIFY_SOCKET_ENV = "NOTIFY_SOCKET"


def socket_address(value: str) -> str | bytes | None:
    """The address ``NOTIFY_SOCKET`` names: a path, or (``@name``) an abstract name;
    None for what is neither (systemd also allows ``vsock:``, which this does not speak)."""
    if value.startswith("@"):
        return b"\0" + value[1:].encode()
    if value.startswith("/"):
        return value
    return None


class ServiceNotifier:
    """Sends notifications to one ``NOTIFY_SOCKET`` address (or nowhere: ``address=None``)."""

    def __init__(self, address: str | bytes | None, *, send_stopping: bool = True) -> None:
        self.address = address
        self._send_stopping = send_stopping
        self._lock = threading.Lock()
        self._warned = False

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None, *,
                         supervised: bool = False) -> ServiceNotifier:
        """The notifier ``NOTIFY_SOCKET`` asks for (none when unset)."""
        value = (os.environ if environ is None else environ).get(NOTIFY_SOCKET_ENV, "")
        address = socket_address(value) if value else None
        if value and address is None:
            logger.warning("NOTIFY_SOCKET=%r is not a unix socket path or @abstract name; "
                           "systemd will not hear from this worker", value)
        return cls(address, send_stopping=not supervised)

    @property
    def enabled(self) -> bool:
        return self.address is not None

    def ready(self) -> None:
        """The worker fetches now (``Type=notify`` waits for this)."""
        # No MAINPID: systemd knows the process it started, and from a supervised child it
        # would make the child the service's main process.
        self.send("READY=1\nSTATUS=fetching jobs")

    def watchdog(self) -> None:
        """A successful heartbeat (``WatchdogSec=`` expects one within its period)."""
        self.send("WATCHDOG=1")

    def stopping(self) -> None:
        """A graceful stop begins (running jobs are finishing)."""
        if self._send_stopping:
            self.send("STOPPING=1\nSTATUS=stopping: finishing running jobs")

    def send(self, message: str) -> None:
        """Send one notification (newline-separated ``KEY=VALUE`` fields)."""
        if self.address is None:
            return
        with self._lock:
            try:
                with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
                    sock.sendto(message.encode(), self.address)
            except OSError as exc:
                if not self._warned:
                    self._warned = True
                    logger.warning("cannot notify systemd at NOTIFY_SOCKET (%s); it will not "
                                   "hear from this worker until that works", exc)
                return
        self._warned = False
