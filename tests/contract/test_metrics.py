"""``broker.extension(METRICS)``: minutes, hours, running totals and ranks, on every broker."""

from __future__ import annotations

import time

import pytest

from cogworker.core.broker import METRICS, Broker, MetricsBatch, SeriesKey, Timings
from cogworker.core.broker.metrics import BUCKET_COUNT, HOUR, MINUTE, MetricsStore, bucket_of
from contract.conftest import StoreTime

NOW = 1_700_000_040.0  # the start of a minute
MAIL = SeriesKey("SendMail", "default")
MAIL_LOW = SeriesKey("SendMail", "low")
REPORT = SeriesKey("Report", "default")
TTL = 3600


def histogram(*milliseconds: float) -> tuple[int, ...]:
    counts = [0] * BUCKET_COUNT
    for value in milliseconds:
        counts[bucket_of(value)] += 1
    return tuple(counts)


def runs(processed: int, failed: int, *milliseconds: float) -> Timings:
    assert len(milliseconds) == processed + failed
    return Timings(processed, failed, float(sum(milliseconds)), histogram(*milliseconds))


@pytest.fixture
def metrics(broker: Broker) -> MetricsStore:
    store = broker.extension(METRICS)
    assert store is not None, f"broker {broker.name} has no metrics facet"
    return store


def test_a_batch_adds_to_its_minute_its_hour_and_the_totals(metrics: MetricsStore) -> None:
    metrics.record(MetricsBatch({MAIL: runs(2, 1, 3, 4, 700)}), NOW, TTL, TTL)
    metrics.record(MetricsBatch({MAIL: runs(1, 0, 3), REPORT: runs(1, 0, 9000)}),
                   NOW + MINUTE, TTL, TTL)
    minute = int(NOW // MINUTE)

    window = metrics.window([MAIL, REPORT], MINUTE, minute - 1, minute + 1)

    assert [bucket.start for bucket in window] == [(minute + i) * MINUTE for i in (-1, 0, 1)]
    assert window[0].series == {}
    assert window[1].series == {MAIL: runs(2, 1, 3, 4, 700)}
    assert window[2].series == {MAIL: runs(1, 0, 3), REPORT: runs(1, 0, 9000)}
    hour = metrics.window([MAIL], HOUR, int(NOW // HOUR), int(NOW // HOUR))
    assert hour[0].series == {MAIL: runs(3, 1, 3, 4, 700, 3)}
    totals = metrics.totals([MAIL, REPORT, MAIL_LOW])
    assert totals.series == {MAIL: runs(3, 1, 3, 4, 700, 3), REPORT: runs(1, 0, 9000),
                             MAIL_LOW: Timings()}
    assert totals.everything == runs(4, 1, 3, 4, 700, 3, 9000)


def test_series_rank_by_runs_and_list_by_class(metrics: MetricsStore) -> None:
    metrics.record(MetricsBatch({MAIL: runs(3, 0, 1, 1, 1), REPORT: runs(1, 0, 1),
                                 MAIL_LOW: runs(0, 2, 1, 1)}), NOW, TTL, TTL)

    assert metrics.top_series(2) == [MAIL, MAIL_LOW]
    assert metrics.top_series(10) == [MAIL, MAIL_LOW, REPORT]
    assert metrics.top_series(0) == []
    assert metrics.series_of("SendMail", 10) == [MAIL, MAIL_LOW]
    assert metrics.series_of("SendMail", 1) == [MAIL]
    assert metrics.series_of("Send", 10) == []
    assert metrics.series_count() == 3


def test_series_with_as_many_runs_rank_greater_name_first(metrics: MetricsStore) -> None:
    metrics.record(MetricsBatch({MAIL: runs(1, 0, 1), REPORT: runs(1, 0, 1),
                                 MAIL_LOW: runs(1, 0, 1)}), NOW, TTL, TTL)

    assert metrics.top_series(3) == [MAIL_LOW, MAIL, REPORT]


def test_orphans_and_the_worst_cron_lag(metrics: MetricsStore) -> None:
    metrics.record(MetricsBatch(orphans_recovered=2, cron_lag=0.25), NOW, TTL, TTL)
    metrics.record(MetricsBatch(orphans_recovered=1, cron_lag=1.5), NOW + 1, TTL, TTL)
    metrics.record(MetricsBatch(cron_lag=0.5), NOW + 2, TTL, TTL)
    minute = int(NOW // MINUTE)

    assert metrics.totals([]).orphans_recovered == 3
    assert metrics.cron_lag(minute - 5, minute) == 1.5
    assert metrics.cron_lag(minute - 5, minute - 1) is None


def test_an_empty_namespace_reads_zeros(metrics: MetricsStore) -> None:
    minute = int(NOW // MINUTE)

    assert metrics.totals([MAIL]).series == {MAIL: Timings()}
    assert metrics.totals([MAIL]).everything == Timings()
    assert metrics.window([MAIL], MINUTE, minute, minute)[0].series == {}
    assert metrics.window([MAIL], MINUTE, minute, minute - 1) == []
    assert metrics.top_series(5) == []
    metrics.record(MetricsBatch(), NOW, TTL, TTL)
    assert metrics.series_count() == 0


def test_bad_reads_are_value_errors(metrics: MetricsStore) -> None:
    with pytest.raises(ValueError, match="step"):
        metrics.window([MAIL], 10, 0, 1)
    with pytest.raises(ValueError, match="limit"):
        metrics.top_series(-1)


def test_a_minute_expires_after_its_ttl(metrics: MetricsStore, store_time: StoreTime) -> None:
    now = time.time()
    metrics.record(MetricsBatch({MAIL: runs(1, 0, 2)}), now, 1, TTL)
    minute = int(now // MINUTE)
    store_time(2.1)

    assert metrics.window([MAIL], MINUTE, minute, minute)[0].series == {}
    assert metrics.window([MAIL], HOUR, int(now // HOUR), int(now // HOUR))[0].series == {
        MAIL: runs(1, 0, 2)}
