"""``FleetCollector``: every cogworker family, read from the broker when Prometheus scrapes.

Families (``docs/how-to/monitor.md`` lists them with their meaning):

* from the core facets: ``cogworker_processed_total``, ``cogworker_failed_total``,
  ``cogworker_retry_size``, ``cogworker_scheduled_size``, ``cogworker_dead_size``,
  ``cogworker_queue_size{queue}``, ``cogworker_queue_latency_seconds{queue}``,
  ``cogworker_busy_workers``, ``cogworker_processes``;
* from the metrics facet (when the broker has one): ``cogworker_job_duration_seconds``
  (histogram, ``class`` and ``queue`` labels), ``cogworker_jobs_expired_total`` and
  ``cogworker_jobs_cancelled_total`` (the same labels), ``cogworker_orphans_recovered_total``,
  ``cogworker_cron_tick_lag_seconds``;
* from the limits facet (when the broker has one): ``cogworker_limiter_*``
  (:mod:`cogworker.prometheus.limiters`).

Bounded cardinality: at most ``max_series`` (class, queue) series, those with the most runs
ever (a stable choice, so a series does not hop in and out of its own label and break its
counters), the rest summed into ``class="other", queue="other"``; at most ``max_queues``
queues, the largest now, the rest summed into ``queue="other"`` (their size added, their
latency the worst). A scrape costs a fixed number of broker reads whatever the fleet's size.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from cogworker.api.metrics import CRON_LAG_MINUTES
from cogworker.api.queues import latency_of
from cogworker.core.broker import LIMITS, Broker
from cogworker.core.broker.metrics import (
    BUCKET_BOUNDS_MS,
    METRICS,
    MINUTE,
    MetricsStore,
    SeriesKey,
    Timings,
    summed,
)
from cogworker.plugins.metrics.options import DEFAULT_MAX_QUEUES, DEFAULT_MAX_SERIES
from cogworker.prometheus.limiters import limiter_families

OTHER = "other"
"""The label value of everything beyond the caps."""

_LE = [repr(bound / 1000) for bound in BUCKET_BOUNDS_MS]  # 0.001 ... 1000.0, as Go prints


def histogram_buckets(timings: Timings) -> list[tuple[str, float]]:
    """Cumulative ``(le, count)`` pairs in seconds, ``+Inf`` last."""
    pairs, running = [], 0
    for le, count in zip([*_LE, "+Inf"], timings.buckets, strict=True):
        running += count
        pairs.append((le, float(running)))
    return pairs


class FleetCollector(Collector):
    """A ``prometheus-client`` collector over one broker (see the module docstring)."""

    def __init__(self, broker: Broker, *, max_series: int = DEFAULT_MAX_SERIES,
                 max_queues: int = DEFAULT_MAX_QUEUES,
                 clock: Callable[[], float] = time.time) -> None:
        if max_series < 1 or max_queues < 1:
            raise ValueError(f"max_series and max_queues must be at least 1, not "
                             f"{max_series} and {max_queues}")
        self._broker = broker
        self._max_series = max_series
        self._max_queues = max_queues
        self._clock = clock

    def describe(self) -> Iterator[Metric]:
        return iter(())  # nothing read at registration: the broker is asked per scrape

    def collect(self) -> Iterator[Metric]:
        yield from self._totals()
        yield from self._queues()
        yield from self._processes()
        store = self._broker.extension(METRICS)
        if store is not None:
            yield from self._metrics(store)
        limits = self._broker.extension(LIMITS)
        if limits is not None:
            yield from limiter_families(limits)

    def _totals(self) -> Iterator[Metric]:
        totals = self._broker.stats.totals()
        yield CounterMetricFamily("cogworker_processed", "Jobs that finished successfully.",
                                  value=totals.processed)
        yield CounterMetricFamily("cogworker_failed",
                                  "Failed attempts, burials and discards.",
                                  value=totals.failed)
        sets = self._broker.sets
        yield GaugeMetricFamily("cogworker_retry_size", "Jobs waiting to be retried.",
                                value=sets.size("retry"))
        yield GaugeMetricFamily("cogworker_scheduled_size", "Jobs scheduled for later.",
                                value=sets.size("schedule"))
        yield GaugeMetricFamily("cogworker_dead_size", "Jobs in the dead set.",
                                value=sets.size("dead"))

    def _queues(self) -> Iterator[Metric]:
        now = self._clock()
        records = sorted(self._broker.queues.records(), key=lambda r: (-r.size, r.name))
        shown = sorted(records[:self._max_queues], key=lambda record: record.name)
        rest = records[self._max_queues:]
        sizes = GaugeMetricFamily("cogworker_queue_size", "Jobs waiting on the queue.",
                                  labels=["queue"])
        latencies = GaugeMetricFamily("cogworker_queue_latency_seconds",
                                      "Age of the oldest job waiting on the queue.",
                                      labels=["queue"])
        for record in shown:
            sizes.add_metric([record.name], record.size)
            latencies.add_metric([record.name], round(latency_of(record.oldest, now), 3))
        if rest:
            sizes.add_metric([OTHER], sum(record.size for record in rest))
            latencies.add_metric([OTHER], round(max(latency_of(record.oldest, now)
                                                    for record in rest), 3))
        yield sizes
        yield latencies

    def _processes(self) -> Iterator[Metric]:
        live = self._broker.processes.live()
        yield GaugeMetricFamily("cogworker_busy_workers",
                                "Jobs running now, over every live process.",
                                value=sum(record.busy for record in live))
        yield GaugeMetricFamily("cogworker_processes", "Live worker processes.",
                                value=len(live))

    def _metrics(self, store: MetricsStore) -> Iterator[Metric]:
        keys = store.top_series(self._max_series)
        totals = store.totals(keys)
        durations = HistogramMetricFamily(
            "cogworker_job_duration_seconds", "Run time of jobs, by class and queue.",
            labels=["class", "queue"])
        for key in sorted(keys):
            _add_histogram(durations, [key.job_class, key.queue], totals.series[key])
        rest = totals.everything - summed(totals.series.values())
        if rest.runs:
            _add_histogram(durations, [OTHER, OTHER], rest)
        yield durations
        yield from _unrun_counters(keys, totals.series, rest)
        yield CounterMetricFamily("cogworker_orphans_recovered",
                                  "Jobs put back on their queues after their process died.",
                                  value=totals.orphans_recovered)
        minute = int(self._clock() // MINUTE)
        lag = store.cron_lag(minute - CRON_LAG_MINUTES + 1, minute)
        yield GaugeMetricFamily("cogworker_cron_tick_lag_seconds",
                                f"Worst lateness of a fired cron slot over the last "
                                f"{CRON_LAG_MINUTES} minutes.", value=lag or 0.0)


def _unrun_counters(keys: Sequence[SeriesKey], series: Mapping[SeriesKey, Timings],
                    rest: Timings) -> Iterator[Metric]:
    """The expired and the cancelled jobs of the series shown, the rest as ``other``."""
    for name, what, field in (
            ("cogworker_jobs_expired", "Jobs dropped unrun past their expires_at.", "expired"),
            ("cogworker_jobs_cancelled", "Jobs cancelled, before they started or while "
                                         "running.", "cancelled")):
        family = CounterMetricFamily(name, what, labels=["class", "queue"])
        for key in sorted(keys):
            family.add_metric([key.job_class, key.queue], getattr(series[key], field))
        if getattr(rest, field):
            family.add_metric([OTHER, OTHER], getattr(rest, field))
        yield family


def _add_histogram(family: HistogramMetricFamily, labels: Sequence[str],
                   timings: Timings) -> None:
    family.add_metric(list(labels), histogram_buckets(timings),
                      sum_value=timings.total_ms / 1000)
