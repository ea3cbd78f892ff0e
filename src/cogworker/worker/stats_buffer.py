"""Processed/failed counts gathered in memory and written at most once a second.

Stats are bookkeeping: a crash may lose up to a second of counts, never a job. Writing
them per job would cost a round trip per job for no one's benefit.
"""

from __future__ import annotations

import threading
import time

from cogworker.core.broker import StatsStore
from cogworker.core.outage import OutageLog

FLUSH_INTERVAL = 1.0


class StatsBuffer:
    def __init__(self, stats: StatsStore, outages: OutageLog,
                 interval: float = FLUSH_INTERVAL) -> None:
        self._stats = stats
        self._outages = outages
        self._interval = interval
        self._processed = 0
        self._failed = 0
        self._last_flush = time.monotonic()
        self._lock = threading.Lock()

    def add(self, processed: int = 0, failed: int = 0) -> None:
        with self._lock:
            self._processed += processed
            self._failed += failed
            due = time.monotonic() - self._last_flush >= self._interval
        if due:
            self.flush()

    def flush(self) -> None:
        """Write what was gathered; on failure keep it for the next try."""
        with self._lock:
            processed, failed = self._processed, self._failed
            if not processed and not failed:
                return
            self._processed = self._failed = 0
            self._last_flush = time.monotonic()
        try:
            self._stats.record_outcomes(processed, failed, time.time())
        except Exception as exc:
            self._outages.report("stats", exc)
            with self._lock:
                self._processed += processed
                self._failed += failed
        else:
            self._outages.recovered("stats")
