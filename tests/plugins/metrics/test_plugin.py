"""The ``metrics`` plugin with a real worker on Redis: counts, timings, percentiles per class
and queue, the cron lag and recovered orphans, written once a second, read by the API."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import cast

import pytest

from cogworker.api.metrics import Metrics
from cogworker.app import App
from cogworker.core.broker import METRICS
from cogworker.core.broker.metrics import BUCKET_BOUNDS_MS, MetricsStore, bucket_of
from cogworker.core.errors import BrokerUnavailableError
from cogworker.plugins.metrics import flush_function, state_of
from cogworker.testing.memory_broker import MemoryBroker
from helpers.threaded_worker import working
from plugins.metrics.workload import (
    BROKEN_RUNS,
    FAST_RUNS,
    SLOW_RUNS,
    SLOW_SECONDS,
    metrics_app,
    run_workload,
)


@pytest.fixture
def app(redis_url: str, namespace: str, redis_client: object) -> Iterator[App]:
    application = metrics_app(redis_url, namespace)
    try:
        yield application
    finally:
        application.close()


def test_a_real_worker_run_shows_per_class_counts_and_percentiles(app: App) -> None:
    run_workload(app)

    rows = {(row.job_class, row.queue): row for row in Metrics(app).summaries(since=3600)}

    assert set(rows) == {("Fast", "default"), ("Slow", "low"), ("Broken", "default")}
    fast, slow, broken = rows["Fast", "default"], rows["Slow", "low"], rows["Broken", "default"]
    assert (fast.processed, fast.failed) == (FAST_RUNS, 0)
    assert (slow.processed, slow.failed) == (SLOW_RUNS, 0)
    assert (broken.processed, broken.failed, broken.failure_rate) == (0, BROKEN_RUNS, 1.0)
    slow_ms = SLOW_SECONDS * 1000
    assert slow.mean_ms is not None and slow.mean_ms >= slow_ms
    assert slow.p50_ms is not None and slow.p99_ms is not None
    # the estimate lies in the bucket of the true value: at least the bucket's lower bound
    assert slow.p50_ms >= BUCKET_BOUNDS_MS[bucket_of(slow_ms) - 1]
    assert fast.p50_ms is not None and fast.p50_ms <= slow.p50_ms
    assert sum(slow.timings.buckets) == SLOW_RUNS


def test_the_time_series_has_one_point_a_minute_with_the_runs(app: App) -> None:
    run_workload(app)

    points = Metrics(app).series("Fast", since=600)
    assert len(points) == 10
    assert sum(point.timings.processed for point in points) == FAST_RUNS
    assert points[-1].start == int(time.time() // 60) * 60 or points[-1].timings.runs == 0
    daily = Metrics(app).series("Fast", since=86400)
    assert len(daily) == 24
    assert sum(point.timings.processed for point in daily) == FAST_RUNS


def test_the_cron_lag_is_kept(app: App) -> None:
    run_workload(app, with_cron=True)

    lag = Metrics(app).cron_lag()
    assert lag is not None and 0 <= lag <= 120  # the catch-up slot: at most a minute late


def test_jobs_recovered_from_a_dead_process_are_counted(app: App) -> None:
    run_workload(app, orphans=2)

    assert Metrics(app).orphans_recovered() == 2
    [row] = Metrics(app).summaries(job_class="Fast")
    assert row.processed == FAST_RUNS + 2


def test_a_failing_write_keeps_the_figures_for_the_next_flush(app: App) -> None:
    store = app.broker.extension(METRICS)
    assert store is not None

    class Unavailable:
        def record(self, *args: object) -> None:
            raise BrokerUnavailableError("Redis is away")

    state = state_of(app)
    state.buffer.observe("Fast", "default", 3.0, failed=False)
    with pytest.raises(BrokerUnavailableError):
        flush_function(cast("MetricsStore", Unavailable()), state)()
    assert len(state.buffer) == 1
    state.buffer.observe("Fast", "default", 4.0, failed=True)

    flush_function(store, state)()

    [row] = Metrics(app).summaries()
    assert (row.processed, row.failed, row.timings.total_ms) == (1, 1, 7.0)
    assert len(state.buffer) == 0


def test_a_broker_without_the_facet_leaves_the_plugin_idle(
        namespace: str, caplog: pytest.LogCaptureFixture) -> None:
    class Bare(MemoryBroker):
        def extension(self, key: object) -> None:
            return None

    app = App(namespace=namespace, plugins=("metrics",), poll_interval=0.2)
    app.use_broker(Bare())
    ran: list[int] = []

    @app.job(name="Fast")
    def fast() -> None:
        ran.append(1)

    fast.perform_async()
    with caplog.at_level(logging.WARNING, logger="cogworker.plugins.metrics"), working(app):
        deadline = time.monotonic() + 30
        while not ran and time.monotonic() < deadline:
            time.sleep(0.02)
    assert ran == [1]
    assert any("stays idle" in record.getMessage() for record in caplog.records)
    app.close()
