"""The ``cogworker_limiter_*`` families, read from the broker's ``LIMITS`` facet per scrape.

* ``cogworker_limiter_acquired_total{limiter}`` — admissions;
* ``cogworker_limiter_over_limit_total{limiter}`` — refusals (each one over-limit
  reschedule or raise);
* ``cogworker_limiter_in_use{limiter,kind}`` — holders now (concurrent), admissions in the
  current window (window), tokens left (bucket);
* ``cogworker_limiter_limit{limiter,kind}`` — the limit (the burst for a bucket).

Bounded cardinality: at most ``max_limiters`` limiters (those with the most admissions;
per-customer limiters can be many), the rest summed into ``limiter="other"``.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from cogworker.core.broker import LimitStore

OTHER = "other"
DEFAULT_MAX_LIMITERS = 100


def limiter_families(store: LimitStore,
                     max_limiters: int = DEFAULT_MAX_LIMITERS) -> Iterator[Metric]:
    """The families above, from one read of every registered limiter."""
    usages = sorted(store.usage(), key=lambda usage: (-usage.acquired, usage.spec.name))
    shown, rest = usages[:max_limiters], usages[max_limiters:]
    acquired = CounterMetricFamily("cogworker_limiter_acquired",
                                   "Admissions into a limiter.", labels=["limiter"])
    over = CounterMetricFamily("cogworker_limiter_over_limit",
                               "Refusals by a full limiter (each an over-limit reschedule).",
                               labels=["limiter"])
    in_use = GaugeMetricFamily("cogworker_limiter_in_use",
                               "Holders now (concurrent), admissions in the current window "
                               "(window), tokens left (bucket).", labels=["limiter", "kind"])
    limit = GaugeMetricFamily("cogworker_limiter_limit",
                              "The limit of a limiter (a bucket's burst).",
                              labels=["limiter", "kind"])
    for usage in sorted(shown, key=lambda usage: usage.spec.name):
        name, kind = usage.spec.name, usage.spec.kind
        acquired.add_metric([name], usage.acquired)
        over.add_metric([name], usage.over)
        in_use.add_metric([name, kind], usage.used)
        limit.add_metric([name, kind], usage.spec.limit)
    if rest:
        acquired.add_metric([OTHER], sum(usage.acquired for usage in rest))
        over.add_metric([OTHER], sum(usage.over for usage in rest))
    yield acquired
    yield over
    yield in_use
    yield limit
