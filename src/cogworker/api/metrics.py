"""Per job class timings over a window, a chart's time series, and per queue size/latency.

Read from the ``metrics`` plugin's facet (``broker.extension(METRICS)``)::

    from cogworker.api.metrics import Metrics

    metrics = Metrics(app)
    for row in metrics.summaries(since=3600):          # the last hour, busiest first
        print(row.job_class, row.queue, row.processed, row.p95_ms)
    points = metrics.series("SendMail", since=86400)   # one point an hour for a day

Every read is bounded: at most ``limit`` series (by runs ever, or those of one class), and a
window is read minute by minute up to ``minute_retention`` (8 hours), hour by hour beyond
(up to ``hour_retention``, 8 days): at most 480 buckets.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from cogworker.api._source import Source, resolve_broker
from cogworker.api.queues import Queue, QueueSummary
from cogworker.core.broker.metrics import (
    EMPTY,
    HOUR,
    METRICS,
    MINUTE,
    MetricsStore,
    SeriesKey,
    Timings,
    estimate_percentile,
    summed,
)
from cogworker.core.errors import CogworkerError
from cogworker.plugins.metrics.options import (
    DEFAULT_HOUR_RETENTION,
    DEFAULT_MAX_SERIES,
    DEFAULT_MINUTE_RETENTION,
)

CRON_LAG_MINUTES = 5
"""The cron lag is the worst of this many last minutes."""


class MetricsUnavailableError(CogworkerError):
    """The broker has no metrics facet (the ``metrics`` plugin cannot store anything)."""


def _percentiles(timings: Timings) -> dict[str, float | None]:
    return {f"p{int(q * 100)}_ms": estimate_percentile(timings.buckets, q)
            for q in (0.5, 0.95, 0.99)}


@dataclass(frozen=True)
class ClassSummary:
    """One job class on one queue over a window: counts, mean and estimated percentiles
    (milliseconds; see :func:`~cogworker.core.broker.metrics.estimate_percentile` for the
    error bound)."""

    job_class: str
    queue: str
    timings: Timings

    @property
    def processed(self) -> int:
        return self.timings.processed

    @property
    def failed(self) -> int:
        return self.timings.failed

    @property
    def expired(self) -> int:
        """Jobs dropped unrun, past their ``expires_at`` (not runs)."""
        return self.timings.expired

    @property
    def cancelled(self) -> int:
        """Jobs cancelled, before they started or while running (not runs)."""
        return self.timings.cancelled

    @property
    def failure_rate(self) -> float:
        """Failed runs / all runs (0 when nothing ran)."""
        runs = self.timings.runs
        return self.timings.failed / runs if runs else 0.0

    @property
    def mean_ms(self) -> float | None:
        runs = self.timings.runs
        return self.timings.total_ms / runs if runs else None

    @property
    def p50_ms(self) -> float | None:
        return estimate_percentile(self.timings.buckets, 0.5)

    @property
    def p95_ms(self) -> float | None:
        return estimate_percentile(self.timings.buckets, 0.95)

    @property
    def p99_ms(self) -> float | None:
        return estimate_percentile(self.timings.buckets, 0.99)

    def to_dict(self) -> dict[str, Any]:
        return {"class": self.job_class, "queue": self.queue, "processed": self.processed,
                "failed": self.failed, "expired": self.expired,
                "cancelled": self.cancelled, "failure_rate": self.failure_rate,
                "mean_ms": self.mean_ms, **_percentiles(self.timings),
                "total_ms": self.timings.total_ms, "histogram": list(self.timings.buckets)}


@dataclass(frozen=True)
class MetricsPoint:
    """One minute or hour of a class's time series (``start``: epoch seconds)."""

    start: int
    timings: Timings

    def to_dict(self) -> dict[str, Any]:
        runs = self.timings.runs
        return {"time": datetime.fromtimestamp(self.start, tz=timezone.utc).isoformat(),
                "processed": self.timings.processed, "failed": self.timings.failed,
                "mean_ms": self.timings.total_ms / runs if runs else None,
                **_percentiles(self.timings)}


class Metrics:
    """The metrics of a fleet, read afresh on each call (see the module docstring)."""

    def __init__(self, source: Source, *, minute_retention: int = DEFAULT_MINUTE_RETENTION,
                 hour_retention: int = DEFAULT_HOUR_RETENTION) -> None:
        self._broker = resolve_broker(source)
        self.minute_retention = minute_retention
        self.hour_retention = hour_retention

    @property
    def store(self) -> MetricsStore:
        store = self._broker.extension(METRICS)
        if store is None:
            raise MetricsUnavailableError(
                f"broker {self._broker.name!r} keeps no metrics (it has no "
                f"{METRICS.name!r} facet); use a broker that does, such as Redis")
        return store

    def step_for(self, since: float) -> int:
        """The resolution a window of ``since`` seconds is read at (60 or 3600)."""
        if not 0 < since <= self.hour_retention:
            raise ValueError(f"a metrics window is above 0 and at most {self.hour_retention}"
                             f" seconds (hour_retention), not {since:g}")
        return MINUTE if since <= self.minute_retention else HOUR

    def _window(self, keys: Sequence[SeriesKey], since: float,
                now: float | None) -> tuple[int, list[tuple[int, dict[SeriesKey, Timings]]]]:
        step = self.step_for(since)
        last = int((time.time() if now is None else now) // step)
        first = last - max(int(-(-since // step)), 1) + 1
        buckets = self.store.window(keys, step, first, last)
        return step, [(bucket.start, dict(bucket.series)) for bucket in buckets]

    def _keys(self, job_class: str | None, limit: int) -> list[SeriesKey]:
        if limit < 1:
            raise ValueError(f"limit must be at least 1, not {limit}")
        if job_class is not None:
            return self.store.series_of(job_class, limit)
        return self.store.top_series(limit)

    def summaries(self, since: float = 3600, job_class: str | None = None,
                  limit: int = DEFAULT_MAX_SERIES, now: float | None = None
                  ) -> list[ClassSummary]:
        """One row per (class, queue) that ran in the last ``since`` seconds, most runs
        first. Candidates: the ``limit`` series with most runs ever, or the series of
        ``job_class`` (each of its queues)."""
        self.step_for(since)  # a bad window is an error even when nothing ran
        keys = self._keys(job_class, limit)
        if not keys:
            return []
        _step, buckets = self._window(keys, since, now)
        rows = [ClassSummary(key.job_class, key.queue,
                             summed(series.get(key, EMPTY) for _start, series in buckets))
                for key in keys]
        rows = [row for row in rows if row.timings.runs]
        return sorted(rows, key=lambda row: (-row.timings.runs, row.job_class, row.queue))

    def series(self, job_class: str, since: float = 3600, queue: str | None = None,
               now: float | None = None, limit: int = DEFAULT_MAX_SERIES
               ) -> list[MetricsPoint]:
        """One point per minute (windows up to ``minute_retention``) or per hour, oldest
        first, of ``job_class`` summed over its queues (or on ``queue`` only)."""
        keys = [key for key in self._keys(job_class, limit)
                if queue is None or key.queue == queue]
        _step, buckets = self._window(keys, since, now)
        return [MetricsPoint(start, summed(series.values())) for start, series in buckets]

    def queues(self) -> list[QueueSummary]:
        """Every queue's size and latency (age of its oldest job), from the queues."""
        return Queue.all(self._broker)

    def cron_lag(self, now: float | None = None) -> float | None:
        """The worst cron lag (seconds) of the last :data:`CRON_LAG_MINUTES` minutes."""
        minute = int((time.time() if now is None else now) // MINUTE)
        return self.store.cron_lag(minute - CRON_LAG_MINUTES + 1, minute)

    def orphans_recovered(self) -> int:
        """Jobs recovered from dead processes, ever (while the plugin was on)."""
        return self.store.totals([]).orphans_recovered
