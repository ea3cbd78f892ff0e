"""What one process gathered since its last metrics write, in memory, under one lock.

The server middleware adds one run at a time (a dictionary update and a bucket
increment); the flush thread takes everything at once and gives it back if the write
failed, so an outage delays figures instead of losing them (until the process exits).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from cogworker.core.broker.metrics import (
    BUCKET_COUNT,
    MetricsBatch,
    SeriesKey,
    Timings,
    bucket_of,
)


@dataclass(slots=True)
class _Tally:
    processed: int = 0
    failed: int = 0
    total_ms: float = 0.0
    buckets: list[int] = field(default_factory=lambda: [0] * BUCKET_COUNT)
    expired: int = 0
    cancelled: int = 0

    def add(self, timings: Timings) -> None:
        self.expired += timings.expired
        self.cancelled += timings.cancelled
        self.processed += timings.processed
        self.failed += timings.failed
        self.total_ms += timings.total_ms
        for index, count in enumerate(timings.buckets):
            self.buckets[index] += count

    def frozen(self) -> Timings:
        return Timings(self.processed, self.failed, self.total_ms, tuple(self.buckets),
                       self.expired, self.cancelled)


class MetricsBuffer:
    """Runs, recovered orphans and the worst cron lag, since the last :meth:`take`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._series: dict[tuple[str, str], _Tally] = {}  # (class, queue): no object a run
        self._orphans = 0
        self._cron_lag: float | None = None

    def observe(self, job_class: str, queue: str, milliseconds: float, failed: bool) -> None:
        """One run of ``job_class`` on ``queue`` that took ``milliseconds``."""
        bucket = bucket_of(milliseconds)
        key = (job_class, queue)
        with self._lock:
            tally = self._series.get(key)
            if tally is None:
                tally = self._series[key] = _Tally()
            if failed:
                tally.failed += 1
            else:
                tally.processed += 1
            tally.total_ms += milliseconds
            tally.buckets[bucket] += 1

    def count_unrun(self, job_class: str, queue: str, *, expired: bool) -> None:
        """One job of ``job_class`` on ``queue`` that ended without a run: expired, or
        (``expired`` False) cancelled."""
        key = (job_class, queue)
        with self._lock:
            tally = self._series.get(key)
            if tally is None:
                tally = self._series[key] = _Tally()
            if expired:
                tally.expired += 1
            else:
                tally.cancelled += 1

    def add_orphans(self, count: int) -> None:
        with self._lock:
            self._orphans += max(count, 0)

    def note_cron_lag(self, lag: float) -> None:
        with self._lock:
            self._cron_lag = lag if self._cron_lag is None else max(self._cron_lag, lag)

    def take(self) -> MetricsBatch:
        """Everything gathered, leaving the buffer empty."""
        with self._lock:
            series, self._series = self._series, {}
            orphans, self._orphans = self._orphans, 0
            lag, self._cron_lag = self._cron_lag, None
        return MetricsBatch({SeriesKey(*key): tally.frozen() for key, tally in series.items()},
                            orphans, lag)

    def give_back(self, batch: MetricsBatch) -> None:
        """Put a batch whose write failed back, merged with what came since."""
        with self._lock:
            for key, timings in batch.series.items():
                self._series.setdefault((key.job_class, key.queue), _Tally()).add(timings)
            self._orphans += batch.orphans_recovered
            if batch.cron_lag is not None:
                self._cron_lag = (batch.cron_lag if self._cron_lag is None
                                  else max(self._cron_lag, batch.cron_lag))

    def __len__(self) -> int:
        """Series gathered so far."""
        with self._lock:
            return len(self._series)
