"""Remote control: ``quiet``, ``resume`` and ``stop`` sent to one process.

A daemon thread subscribes to the process's messages (``broker.processes.
subscribe_signals``, on a connection of its own) and reads them in short slices, checking
its stop event between them, so stopping never needs an UNSUBSCRIBE from another thread
(which deadlocks some client libraries). The subscription is opened and closed on the
subscriber thread itself.

``stop`` does not stop anything from this thread: it asks the launcher (``on_stop``), whose
main thread drains and exits like on SIGTERM. Nothing is queued: a message sent while the
subscription is down (the broker away, or before :attr:`RemoteControl.listening` is set)
is lost; ``cogworker ctl`` reports how many processes received it.

A stopping process stops listening as its drain begins (:meth:`RemoteControl.stop_listening`):
it is already leaving, so there is nothing left to obey, and the subscriber's last read
slice then passes during the drain instead of after it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Final

from cogworker.core.broker import ProcessRegistry
from cogworker.core.outage import OutageLog
from cogworker.worker.contracts import ManagerControls
from cogworker.worker.threads import stop_thread

logger = logging.getLogger(__name__)

READ_SLICE: Final = 0.5  # seconds per get(): how quickly the thread notices it must stop
RESUBSCRIBE_DELAY: Final = 1.0
SITE: Final = "remote control"


class RemoteControl:
    """Obeys messages on ``identity``'s signal channel until stopped."""

    def __init__(
        self,
        processes: ProcessRegistry,
        identity: str,
        manager: ManagerControls,
        on_stop: Callable[[], None],
        outages: OutageLog,
        on_state_change: Callable[[], None] = lambda: None,
    ) -> None:
        """``on_state_change`` runs after a quiet or resume is applied (the heartbeat
        writes the new state at once)."""
        self._on_state_change = on_state_change
        self._processes = processes
        self._identity = identity
        self._manager = manager
        self._on_stop = on_stop
        self._outages = outages
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.listening = threading.Event()
        """Set while the subscription is confirmed live (messages sent now arrive)."""

    def start(self) -> None:
        """Start the subscriber thread (once)."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(
            target=self._run, name="cogworker-remote-control", daemon=True
        )
        self._thread.start()

    def stop_listening(self) -> None:
        """Ask the thread to end without waiting for it: it notices within
        :data:`READ_SLICE` and closes its subscription; :meth:`stop` then waits only for
        what is left of that slice."""
        self._stopping.set()

    def stop(self, join_timeout: float = 1.0) -> None:
        """Ask the thread to end and wait up to ``join_timeout`` seconds; never blocks longer.

        The thread closes its own subscription on the way out. A thread still waiting for
        the broker to confirm a subscription is left behind (it is a daemon) and ends by itself.
        """
        stop_thread(self._stopping, self._thread, join_timeout)

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                self._listen()
            except Exception as exc:
                self.listening.clear()
                if self._stopping.is_set():
                    return
                self._outages.report(SITE, exc)
                self._stopping.wait(RESUBSCRIBE_DELAY)

    def _listen(self) -> None:
        with self._processes.subscribe_signals(self._identity) as subscription:
            self.listening.set()
            self._outages.recovered(SITE)
            try:
                while not self._stopping.is_set():
                    message = subscription.get(timeout=READ_SLICE)
                    if message is not None:
                        self.handle(message)
            finally:
                self.listening.clear()

    def handle(self, message: str) -> None:
        """Act on one message (public so the launcher and tests can feed it directly)."""
        command = message.strip()
        if command == "quiet":
            logger.info("Received remote quiet signal, identity=%s", self._identity)
            self._manager.quiet()
            self._on_state_change()
        elif command == "resume":
            logger.info("Received remote resume signal, identity=%s", self._identity)
            self._manager.unquiet()
            self._on_state_change()
        elif command == "stop":
            logger.info("Received remote stop signal, identity=%s", self._identity)
            self._on_stop()
        else:
            logger.warning("Unknown signal message: %r (expected quiet, resume or stop)",
                           message)
