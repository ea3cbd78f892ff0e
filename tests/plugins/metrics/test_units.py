"""The histogram's buckets and percentile estimate, the buffer, and the plugin's options."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cogworker.core.broker import MetricsBatch, SeriesKey, Timings
from cogworker.core.broker.metrics import (
    BUCKET_BOUNDS_MS,
    BUCKET_COUNT,
    bucket_of,
    estimate_percentile,
)
from cogworker.core.errors import ConfigurationError
from cogworker.plugins.metrics.buffer import MetricsBuffer
from cogworker.plugins.metrics.options import MetricsOptions


def test_bounds_are_inclusive_and_the_last_bucket_is_open() -> None:
    assert bucket_of(0.0) == 0
    assert bucket_of(1.0) == 0
    assert bucket_of(1.01) == 1
    assert bucket_of(BUCKET_BOUNDS_MS[-1]) == BUCKET_COUNT - 2
    assert bucket_of(1e12) == BUCKET_COUNT - 1


@given(st.lists(st.floats(min_value=0.0, max_value=2e6, allow_nan=False), min_size=1,
                max_size=200), st.sampled_from([0.5, 0.95, 0.99]))
def test_an_estimate_lies_in_the_bucket_of_the_true_percentile(
        values: list[float], fraction: float) -> None:
    buckets = [0] * BUCKET_COUNT
    for value in values:
        buckets[bucket_of(value)] += 1
    ordered = sorted(values)
    rank = max(int(-(-fraction * len(ordered) // 1)) - 1, 0)  # nearest rank
    true = ordered[rank]

    estimate = estimate_percentile(buckets, fraction)

    assert estimate is not None
    index = bucket_of(true)
    low = 0.0 if index == 0 else BUCKET_BOUNDS_MS[index - 1]
    high = BUCKET_BOUNDS_MS[min(index, len(BUCKET_BOUNDS_MS) - 1)]
    assert low <= estimate <= high


def test_an_empty_histogram_has_no_percentile() -> None:
    assert estimate_percentile([0] * BUCKET_COUNT, 0.5) is None
    with pytest.raises(ValueError, match="fraction"):
        estimate_percentile([1] * BUCKET_COUNT, 95)


def test_the_buffer_hands_out_everything_once_and_takes_a_failed_batch_back() -> None:
    buffer = MetricsBuffer()
    buffer.observe("Mail", "default", 3.0, failed=False)
    buffer.observe("Mail", "default", 30.0, failed=True)
    buffer.add_orphans(2)
    buffer.note_cron_lag(0.5)
    buffer.note_cron_lag(0.2)

    batch = buffer.take()

    key = SeriesKey("Mail", "default")
    assert batch.series[key].processed == 1 and batch.series[key].failed == 1
    assert batch.series[key].total_ms == 33.0
    assert (batch.orphans_recovered, batch.cron_lag) == (2, 0.5)
    assert not buffer.take()
    buffer.observe("Mail", "default", 1.0, failed=False)
    buffer.give_back(batch)
    again = buffer.take()
    assert again.series[key] == batch.series[key] + Timings(
        1, 0, 1.0, (1,) + (0,) * (BUCKET_COUNT - 1))
    assert (again.orphans_recovered, again.cron_lag) == (2, 0.5)
    assert not MetricsBatch()


def test_options_have_defaults_and_name_a_bad_value() -> None:
    assert MetricsOptions.parse({}) == MetricsOptions()
    assert MetricsOptions.parse({"max_series": 5}).max_series == 5
    with pytest.raises(ConfigurationError, match=r"plugin_options\.metrics\.max_seris"):
        MetricsOptions.parse({"max_seris": 5})
    with pytest.raises(ConfigurationError, match=r"plugin_options\.metrics\.flush_interval"):
        MetricsOptions.parse({"flush_interval": 0})
    with pytest.raises(ConfigurationError, match=r"plugin_options\.metrics\.hour_retention"):
        MetricsOptions.parse({"hour_retention": 60})
    with pytest.raises(ConfigurationError, match=r"plugin_options\.metrics\.max_queues"):
        MetricsOptions.parse({"max_queues": True})
