"""``BackgroundFlush``: write what a plugin gathered in memory, at most once an interval.

Bookkeeping plugins (status, history, metrics) gather per-job facts in memory and write
them in one broker call a second, so they cost a fraction of a command per job instead of
one or more. This is the thread that does the writing: ``flush`` is the plugin's own
function (swap its buffer under its lock, write the batch, put it back on failure); it runs
every ``interval`` seconds, once more at :meth:`stop`, and may be called early with
:meth:`flush_soon`. Its failures are reported through an :class:`OutageLog`, so a Redis
outage logs one line, not one a second, and never reaches a job.

A crash loses at most one interval of bookkeeping, never a job.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from cogworker.core.outage import OutageLog

FLUSH_INTERVAL = 1.0
"""Seconds between two writes of a plugin's buffer, by default."""

STOP_TIMEOUT = 5.0
"""Seconds :meth:`BackgroundFlush.stop` waits for the last write."""


class BackgroundFlush:
    """Calls ``flush()`` every ``interval`` seconds on a daemon thread named ``name``.

    ``flush`` must be safe to call from any thread and may raise: the error is reported
    under ``site`` (the plugin's name) and the next interval tries again.
    """

    def __init__(self, name: str, flush: Callable[[], None], *,
                 interval: float = FLUSH_INTERVAL, outages: OutageLog | None = None) -> None:
        if not interval > 0:
            raise ValueError(f"a flush interval must be a number of seconds above 0, "
                             f"not {interval!r}")
        self._name = name
        self._flush = flush
        self._interval = interval
        self._outages = outages if outages is not None else OutageLog()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._live = False  # the thread runs its loop: read per job, so a flag, not is_alive()

    @property
    def running(self) -> bool:
        """True between :meth:`start` and :meth:`stop` (while the thread runs)."""
        return self._live

    def start(self) -> None:
        """Start the thread (a second call while it runs does nothing)."""
        with self._start_lock:
            if self.running:
                return
            self._stopping.clear()
            self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
            self._live = True
            self._thread.start()

    def flush_soon(self) -> None:
        """Flush now rather than at the end of the interval (e.g. a buffer filled up)."""
        self._wake.set()

    def flush_now(self) -> None:
        """Flush on the calling thread, reporting a failure like the thread does."""
        try:
            self._flush()
        except Exception as exc:  # bookkeeping: report, keep going
            self._outages.report(self._name, exc)
        else:
            self._outages.recovered(self._name)

    def stop(self, timeout: float = STOP_TIMEOUT) -> None:
        """Stop the thread after one last flush (waits up to ``timeout`` seconds)."""
        with self._start_lock:
            thread, self._thread = self._thread, None
            self._live = False
        self._stopping.set()
        self._wake.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        elif thread is None:
            self.flush_now()

    def _run(self) -> None:
        try:
            while not self._stopping.is_set():
                self._wake.wait(self._interval)
                self._wake.clear()
                if self._stopping.is_set():
                    break
                self.flush_now()
        finally:
            with self._start_lock:  # unless a stop() and a new start() came in between
                if self._thread is threading.current_thread():
                    self._live = False
        self.flush_now()  # after stop() was asked: everything added before it is written
