"""``broker.extension(METRICS)`` in memory: minute and hour buckets, running totals."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from cogworker.core.broker.metrics import (
    EMPTY,
    HOUR,
    MINUTE,
    MetricsBatch,
    RunningTotals,
    SeriesKey,
    Timings,
    WindowBucket,
    check_read,
    summed,
)
from cogworker.testing.memory_broker.state import MemoryState


@dataclass(slots=True)
class _Bucket:
    expires_at: float
    series: dict[SeriesKey, Timings] = field(default_factory=dict)
    cron_lag: float | None = None


class MemoryMetrics:
    """The :class:`~cogworker.core.broker.metrics.MetricsStore` of a memory broker."""

    def __init__(self, state: MemoryState) -> None:
        self._state = state
        self._buckets: dict[tuple[int, int], _Bucket] = {}  # (step, number) -> bucket
        self._totals: dict[SeriesKey, Timings] = {}
        self._orphans = 0

    def record(self, batch: MetricsBatch, now: float, minute_ttl: int, hour_ttl: int) -> None:
        if not batch:
            return
        with self._state.lock:
            store_now = self._state.now()
            for step, ttl in ((MINUTE, minute_ttl), (HOUR, hour_ttl)):
                bucket = self._live_bucket(step, int(now // step), store_now)
                if bucket is None:
                    bucket = self._buckets[(step, int(now // step))] = _Bucket(0.0)
                bucket.expires_at = store_now + max(int(ttl), 1)
                for key, timings in batch.series.items():
                    bucket.series[key] = bucket.series.get(key, EMPTY) + timings
                if step == MINUTE and batch.cron_lag is not None:
                    bucket.cron_lag = max(batch.cron_lag, bucket.cron_lag or -1.0)
            for key, timings in batch.series.items():
                self._totals[key] = self._totals.get(key, EMPTY) + timings
            self._orphans += max(batch.orphans_recovered, 0)

    def _live_bucket(self, step: int, number: int, now: float) -> _Bucket | None:
        bucket = self._buckets.get((step, number))
        if bucket is not None and bucket.expires_at <= now:
            del self._buckets[(step, number)]
            return None
        return bucket

    def top_series(self, limit: int) -> list[SeriesKey]:
        check_read(limit)
        with self._state.lock:
            ranked = sorted(self._totals.items(), key=lambda item: (item[1].runs, item[0]),
                            reverse=True)
        return [key for key, _timings in ranked[:limit]]

    def series_of(self, job_class: str, limit: int) -> list[SeriesKey]:
        check_read(limit)
        with self._state.lock:
            keys = sorted(key for key in self._totals if key.job_class == job_class)
        return keys[:limit]

    def series_count(self) -> int:
        with self._state.lock:
            return len(self._totals)

    def totals(self, keys: Sequence[SeriesKey]) -> RunningTotals:
        with self._state.lock:
            return RunningTotals({key: self._totals.get(key, EMPTY) for key in keys},
                                 summed(self._totals.values()), self._orphans)

    def window(self, keys: Sequence[SeriesKey], step: int, first: int,
               last: int) -> list[WindowBucket]:
        check_read(step=step)
        wanted = set(keys)
        with self._state.lock:
            now = self._state.now()
            window = []
            for number in range(first, last + 1):
                bucket = self._live_bucket(step, number, now)
                series = {} if bucket is None else {
                    key: timings for key, timings in bucket.series.items() if key in wanted}
                window.append(WindowBucket(number * step, series))
            return window

    def cron_lag(self, first_minute: int, last_minute: int) -> float | None:
        with self._state.lock:
            now = self._state.now()
            lags = [bucket.cron_lag for minute in range(first_minute, last_minute + 1)
                    if (bucket := self._live_bucket(MINUTE, minute, now)) is not None
                    and bucket.cron_lag is not None]
        return max(lags) if lags else None
