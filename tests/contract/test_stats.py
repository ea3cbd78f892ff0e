"""``broker.stats``: totals and hourly throughput, on every broker."""

from __future__ import annotations

from cogworker.core.broker import Broker, HourlyCount, StatsTotals

HOUR = 472_222  # an hour number (epoch seconds // 3600)


def test_outcomes_add_to_the_totals_and_their_hour(broker: Broker) -> None:
    start = broker.stats.totals()
    broker.stats.record_outcomes(3, 1, HOUR * 3600 + 10)
    broker.stats.record_outcomes(2, 0, HOUR * 3600 + 3599)
    broker.stats.record_outcomes(0, 4, (HOUR + 1) * 3600)

    assert broker.stats.totals() == StatsTotals(start.processed + 5, start.failed + 5)
    assert broker.stats.throughput(HOUR - 1, HOUR + 2) == [
        HourlyCount(HOUR - 1, 0, 0), HourlyCount(HOUR, 5, 1), HourlyCount(HOUR + 1, 0, 4),
        HourlyCount(HOUR + 2, 0, 0)]


def test_a_fresh_namespace_counts_nothing(broker: Broker) -> None:
    assert broker.stats.totals() == StatsTotals(0, 0)
    assert broker.stats.throughput(HOUR, HOUR) == [HourlyCount(HOUR, 0, 0)]


def test_nothing_to_record_writes_nothing(broker: Broker) -> None:
    broker.stats.record_outcomes(0, 0, HOUR * 3600)

    assert broker.stats.totals() == StatsTotals(0, 0)


def test_a_reversed_range_has_no_hours(broker: Broker) -> None:
    broker.stats.record_outcomes(1, 1, HOUR * 3600)

    assert broker.stats.throughput(HOUR, HOUR - 1) == []
