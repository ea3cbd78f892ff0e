"""``WakeupListener``: wake-ups for a waiting fetch, from a subscription instead of polling.

Public for fetch strategies, the built-in ``reliable`` one and any third party's.

Every push announces its queue name (``broker.queues.subscribe_wakeups``; on Redis a
pub/sub channel). A background thread of the fetcher reads the subscription and sets an
event when the name is one the fetcher is waiting for. The fetcher clears the event
*before* it looks at the queues, so a push that lands after the look still wakes it.
A subscription loses messages while disconnected: after every (re)connection the event is set
once, and a waiting fetch looks again at least every ``fetch_idle_max_interval`` anyway.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable

from cogworker.core.broker.queues import QueueStore
from cogworker.core.broker.subscription import Subscription

logger = logging.getLogger(__name__)

RECONNECT_PAUSE = 1.0
"""Seconds between attempts to subscribe again after an error."""
READ_SLICE = 0.5
"""Seconds one read of the subscription waits; bounds how long ``close`` takes."""


class WakeupListener:
    """Turns wake-up messages for the watched queues into a :class:`threading.Event`.

    ``queues`` is the broker's queue facet; ``thread_name`` names the listening thread
    (a strategy's own name shows which plugin it belongs to in a thread dump).

    Use: :meth:`watch` the queues a fetch waits on, :meth:`clear` *before* looking at them,
    then :meth:`wait` when they were empty; :meth:`close` at shutdown.
    """

    def __init__(self, queues: QueueStore, *,
                 thread_name: str = "cogworker-fetch-wakeup") -> None:
        self._queues = queues
        self._thread_name = thread_name
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
                    self._thread = threading.Thread(
                        target=self._run, name=self._thread_name, daemon=True
                    )
                    self._thread.start()

    def clear(self) -> None:
        """Forget earlier wake-ups: call it before looking at the queues."""
        self._event.clear()

    def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for a wake-up; True when one came."""
        return self._event.wait(timeout)

    def close(self, timeout: float = 2.0) -> None:
        """Stop the thread (within about :data:`READ_SLICE`); idempotent."""
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
        logger.warning("wake-up subscription failed (%s: %s); fetches look at their queues "
                       "every fetch_idle_max_interval until it is back (retrying every %.0f s)",
                       type(exc).__name__, exc, RECONNECT_PAUSE)
