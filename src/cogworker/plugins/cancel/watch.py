"""What one worker knows of the cancellations: an in-memory copy, and the runs to tell.

:class:`CancelWatch` keeps every live cancellation (jid → expiry) in a dictionary, so the
check each job passes before it starts is one dictionary look-up, no broker command. It is
loaded when the worker starts, kept current by the cancellation announcements (one
subscription per process, on a thread of its own) and re-read whole every
``refresh_interval`` seconds and after every (re)subscription: the backstop for
announcements lost while the subscription was down. It also holds the
:class:`~cogworker.core.cancel_signal.CancelSignal` of every run in progress, so an
announcement (or a re-read) that names a running job fires its signal.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Final

from cogworker.core.broker import CancellationStore, Subscription
from cogworker.core.cancel_signal import CancelSignal

logger = logging.getLogger("cogworker.cancel")

READ_SLICE: Final = 0.5
"""Seconds one read of the subscription waits; bounds how long :meth:`stop` takes."""
RECONNECT_PAUSE: Final = 1.0
"""Seconds between attempts to subscribe again after an error."""


class CancelWatch:
    """The cancellations one worker process knows of, and its runs in progress."""

    def __init__(self, store: CancellationStore, ttl: float, refresh_interval: float,
                 clock: Callable[[], float]) -> None:
        self._store = store
        self._ttl = ttl
        self._refresh_interval = refresh_interval
        self._clock = clock
        self._until: dict[str, float] = {}
        self._noted_at: dict[str, float] = {}  # jid -> monotonic time it was announced
        self._running: dict[str, CancelSignal] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._failing = False
        self.refreshes = 0
        """How many whole re-reads succeeded (tests wait on it)."""

    # the per-job path: dictionary look-ups only ---------------------------------------
    def is_cancelled(self, jid: object) -> bool:
        until = self._until.get(jid) if isinstance(jid, str) else None
        return until is not None and until >= self._clock()

    def register(self, signal: CancelSignal) -> None:
        """A run starts: its signal fires at once if its jid was cancelled meanwhile."""
        with self._lock:
            self._running[signal.jid] = signal
            cancelled = signal.jid in self._until
        if cancelled and self.is_cancelled(signal.jid):
            self._fire(signal)

    def unregister(self, signal: CancelSignal) -> None:
        with self._lock:
            if self._running.get(signal.jid) is signal:
                del self._running[signal.jid]

    # hearing of cancellations -------------------------------------------------------
    def note(self, jid: str, until: float | None = None) -> None:
        """``jid`` was cancelled (until ``until``; an announcement carries no expiry, so
        ``ttl`` from now until the next re-read says better)."""
        with self._lock:
            self._until[jid] = self._clock() + self._ttl if until is None else until
            self._noted_at[jid] = time.monotonic()
            signal = self._running.get(jid)
        if signal is not None:
            self._fire(signal)

    def refresh(self) -> None:
        """Re-read every live cancellation from the broker; fire the runs they name.

        An announcement heard while the read was on its way is kept: the read may have
        been answered before that cancellation was recorded."""
        started = time.monotonic()
        active = self._store.active(self._clock())
        with self._lock:
            self._noted_at = {jid: at for jid, at in self._noted_at.items() if at >= started}
            for jid in self._noted_at:
                if jid in self._until:
                    active.setdefault(jid, self._until[jid])
            self._until = active
            named = [signal for jid, signal in self._running.items() if jid in active]
        for signal in named:
            self._fire(signal)
        self.refreshes += 1

    def _fire(self, signal: CancelSignal) -> None:
        if signal.fire():
            logger.warning("cancel: jid=%s was cancelled while running; its run was told "
                           "to stop", signal.jid)

    # the listening thread -----------------------------------------------------------
    def start(self) -> None:
        """Load the cancellations now (a failure is logged: the thread tries again), then
        listen on a daemon thread."""
        try:
            self.refresh()
        except Exception as exc:
            self._report_failure(exc)
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name="cogworker-cancel",
                                            daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 2.0) -> None:
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                with self._store.subscribe() as subscription:
                    self._listen(subscription)
            except Exception as exc:  # never die: the re-reads go on between attempts
                self._report_failure(exc)
                if self._stop.wait(RECONNECT_PAUSE):
                    return
                self._try_refresh()

    def _listen(self, subscription: Subscription) -> None:
        self.refresh()  # announcements may have been missed while not subscribed
        if self._failing:
            logger.info("cancel: the cancellation announcements are heard again")
            self._failing = False
        next_refresh = time.monotonic() + self._refresh_interval
        while not self._stop.is_set():
            jid = subscription.get(READ_SLICE)
            if jid:
                self.note(jid)
            if time.monotonic() >= next_refresh:
                self.refresh()
                next_refresh = time.monotonic() + self._refresh_interval

    def _try_refresh(self) -> None:
        try:
            self.refresh()
        except Exception as exc:
            logger.debug("cancel: re-reading the cancellations failed: %s", exc)

    def _report_failure(self, exc: Exception) -> None:
        if self._failing:
            logger.debug("cancel: still cannot hear cancellations: %s", exc)
            return
        self._failing = True
        logger.warning("cancel: cannot hear or read the cancellations (%s: %s); retrying "
                       "every %.0f s, jobs cancelled meanwhile are dropped once it is back",
                       type(exc).__name__, exc, RECONNECT_PAUSE)
