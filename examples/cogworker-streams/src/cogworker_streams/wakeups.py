"""Wake-ups for an idle fetch: the broker's wake-up subscription instead of polling.

Every push, graduation, give-back and recovery announces its queue on the broker's wake-up
subscription (:meth:`~cogworker.core.broker.QueueStore.subscribe_wakeups`). A background
thread reads it and sets an event when the queue is one the fetch waits for; the fetch
clears the event *before* it looks at its queues, so a push landing after the look still
wakes it. Wake-ups are best-effort: after every (re)subscription the event is set once
(messages may have been missed), and a waiting fetch looks again at least every
``fetch_idle_max_interval`` anyway.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable

from cogworker.core.broker import QueueStore, Subscription

logger = logging.getLogger(__name__)

RECONNECT_PAUSE = 1.0
"""Seconds between attempts to subscribe again after a failure."""
READ_SLICE = 0.5
"""Seconds one read of the subscription waits; bounds how long :meth:`close` takes."""


class WakeupListener:
    """Turns wake-ups for the watched queues into a :class:`threading.Event`."""

    def __init__(self, queues: QueueStore) -> None:
        self._queues = queues
        self._event = threading.Event()
        self._stop = threading.Event()
        self._watched: frozenset[str] = frozenset()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._failing = False

    def watch(self, queues: Iterable[str]) -> None:
        """Wake up for these queue names from now on (starts the thread on first use)."""
        self._watched = frozenset(queues)
        if self._thread is None:
            with self._start_lock:
                if self._thread is None and not self._stop.is_set():
                    self._thread = threading.Thread(target=self._run, daemon=True,
                                                    name="cogworker-streams-wakeup")
                    self._thread.start()

    def clear(self) -> None:
        self._event.clear()

    def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for a wake-up; True when one came."""
        return self._event.wait(timeout)

    def close(self, timeout: float = 2.0) -> None:
        """Stop the thread (within about :data:`READ_SLICE`). Idempotent."""
        self._stop.set()
        self._event.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                with self._queues.subscribe_wakeups() as subscription:
                    self._listen(subscription)
            except Exception as exc:  # never die: the fetch falls back to timed looks
                self._report_failure(exc)
                self._stop.wait(RECONNECT_PAUSE)

    def _listen(self, subscription: Subscription) -> None:
        if self._failing:
            logger.info("wake-up subscription restored")
            self._failing = False
        self._event.set()  # messages may have been missed while not subscribed
        while not self._stop.is_set():
            queue = subscription.get(READ_SLICE)
            if queue is not None and queue in self._watched:
                self._event.set()

    def _report_failure(self, exc: Exception) -> None:
        if self._failing:
            logger.debug("wake-up subscription still failing: %s", exc)
            return
        self._failing = True
        logger.warning("wake-up subscription failed (%s: %s); idle fetches look at their "
                       "queues every fetch_idle_max_interval until it is back",
                       type(exc).__name__, exc)
