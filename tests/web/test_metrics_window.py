"""The Metrics tab's last-hour read (an hour bucket plus the previous hour's tail) answers
exactly what a minute-by-minute read of the window does, at every minute of the hour."""

from __future__ import annotations

import pytest

from cogworker.api.metrics import Metrics
from cogworker.app import App
from cogworker.core.broker import METRICS
from cogworker.core.broker.metrics import BUCKET_COUNT, MetricsBatch, SeriesKey, Timings
from cogworker.plugins.metrics.options import DEFAULT_HOUR_RETENTION, DEFAULT_MINUTE_RETENTION
from cogworker.web.metrics_window import last_hour_summaries

HOUR_START = 1_796_000_400.0  # a whole hour, in the past of no store's clock that matters


def _runs(minute: int, lane: int) -> Timings:
    buckets = [0] * BUCKET_COUNT
    buckets[(minute + lane) % BUCKET_COUNT] = 1 + minute % 3
    buckets[lane % BUCKET_COUNT] += 1
    runs = sum(buckets)
    return Timings(runs - minute % 2, minute % 2, 3.5 * runs, tuple(buckets))


def recorded(app: App, until_minute: int) -> Metrics:
    """Runs in every minute from 2.5 hours before HOUR_START to ``until_minute`` of it."""
    store = app.broker.extension(METRICS)
    assert store is not None
    for minute in range(-150, until_minute + 1):
        batch = MetricsBatch({SeriesKey(f"Job{lane}", "default"): _runs(minute + 150, lane)
                              for lane in range(3) if (minute + lane) % 4})
        store.record(batch, HOUR_START + 60 * minute + 1, DEFAULT_MINUTE_RETENTION,
                     DEFAULT_HOUR_RETENTION)
    return Metrics(app)


@pytest.mark.parametrize("minute", [0, 1, 14, 29, 30, 31, 45, 58, 59])
def test_last_hour_equals_the_minute_by_minute_window(web_app: App, minute: int) -> None:
    metrics = recorded(web_app, minute)
    now = HOUR_START + 60 * minute + 30
    expected = metrics.summaries(since=3600, now=now)
    assert expected  # the window holds runs
    assert last_hour_summaries(metrics, 100, now=now) == expected
