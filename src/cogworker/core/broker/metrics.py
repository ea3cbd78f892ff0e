"""``broker.extension(METRICS)``: per job class and queue, per UTC minute and hour, fleet-wide.

What the ``metrics`` plugin writes and the ``cogworker metrics`` command, the API and the
Prometheus exporter read. A **series** is one (job class, queue) pair. For each series the
store keeps, per UTC minute, per UTC hour and as a running total since the namespace was
created: runs that succeeded (``processed``), runs that failed, their total execution time
in milliseconds, and a latency histogram over the fixed buckets :data:`BUCKET_BOUNDS_MS`.

The buckets are log-spaced in 1-2-5 steps (1 ms, 2 ms, 5 ms, 10 ms ... 1000 s, then one
open bucket above): three a decade, so 20 counters a series cover sub-millisecond no-ops
and hour-long reports alike, and every bound is a round number of seconds (the ``le``
labels Prometheus users expect). A percentile estimated from them lies in the same bucket
as the true one: at most a factor 2.5 off, linear interpolation inside the bucket doing
better on any smooth distribution (see :func:`estimate_percentile`).

Hours are kept beside the minutes (rather than summed from them at read time) so that a
day's window reads 24 buckets instead of 1,440 and the 8-day window stays at 192; the price
is one more increment per field in the once-a-second write.

Writes are bookkeeping: one :meth:`MetricsStore.record` a second per process, best-effort.
Reads are bounded: a read names the series it wants (at most a page of them), and the
series are listed by volume or by class with a limit.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Protocol

from cogworker.core.broker.composite import Extension

BUCKET_BOUNDS_MS: Final[tuple[float, ...]] = (
    1, 2, 5, 10, 20, 50, 100, 200, 500,
    1_000, 2_000, 5_000, 10_000, 20_000, 50_000,
    100_000, 200_000, 500_000, 1_000_000,
)
"""Upper bounds (inclusive, milliseconds) of the latency buckets; one more bucket holds
everything above the last bound."""

BUCKET_COUNT: Final = len(BUCKET_BOUNDS_MS) + 1
MINUTE: Final = 60
HOUR: Final = 3600
STEPS: Final = (MINUTE, HOUR)
"""The resolutions a window is read at: a minute's or an hour's buckets."""


def bucket_of(milliseconds: float) -> int:
    """The index of the bucket a run of ``milliseconds`` falls in (a bound is inclusive)."""
    return bisect.bisect_left(BUCKET_BOUNDS_MS, milliseconds)


def estimate_percentile(buckets: Sequence[int], fraction: float) -> float | None:
    """The ``fraction`` (0-1) percentile in milliseconds from histogram ``buckets``,
    interpolated linearly inside its bucket; None for an empty histogram.

    Error bound: the estimate lies in the bucket that holds the true percentile, so it is
    off by less than that bucket's width: under 1 ms in the first bucket, at most a factor
    2.5 in the others. In the open bucket above 1000 s the estimate is the last bound
    (1000 s): a lower bound.
    """
    if not 0 <= fraction <= 1:
        raise ValueError(f"a percentile is a fraction from 0 to 1, not {fraction!r}")
    total = sum(buckets)
    if total == 0:
        return None
    rank = fraction * total
    below = 0
    for index, count in enumerate(buckets):
        if count and below + count >= rank:
            if index >= len(BUCKET_BOUNDS_MS):
                return float(BUCKET_BOUNDS_MS[-1])
            low = 0.0 if index == 0 else float(BUCKET_BOUNDS_MS[index - 1])
            high = float(BUCKET_BOUNDS_MS[index])
            return low + (high - low) * max(rank - below, 0.0) / count
        below += count
    return float(BUCKET_BOUNDS_MS[-1])


@dataclass(frozen=True, slots=True, order=True)
class SeriesKey:
    """One series: a job class on one queue."""

    job_class: str
    queue: str


@dataclass(frozen=True, slots=True)
class Timings:
    """The runs of one series over some span (a minute, an hour, a window, ever), and its
    jobs that ended without a run: ``expired`` (dropped past their ``expires_at``) and
    ``cancelled`` (before they started, or stopped while running); neither is a run."""

    processed: int = 0
    failed: int = 0
    total_ms: float = 0.0
    buckets: tuple[int, ...] = field(default=(0,) * BUCKET_COUNT)
    expired: int = 0
    cancelled: int = 0

    def __post_init__(self) -> None:
        if len(self.buckets) != BUCKET_COUNT:
            raise ValueError(f"a histogram has {BUCKET_COUNT} buckets, not "
                             f"{len(self.buckets)}")

    @property
    def runs(self) -> int:
        return self.processed + self.failed

    def __add__(self, other: Timings) -> Timings:
        return Timings(self.processed + other.processed, self.failed + other.failed,
                       self.total_ms + other.total_ms,
                       tuple(a + b for a, b in zip(self.buckets, other.buckets, strict=True)),
                       self.expired + other.expired, self.cancelled + other.cancelled)

    def __sub__(self, other: Timings) -> Timings:
        """What is left of ``self`` without ``other`` (never below 0)."""
        return Timings(max(self.processed - other.processed, 0),
                       max(self.failed - other.failed, 0),
                       max(self.total_ms - other.total_ms, 0.0),
                       tuple(max(a - b, 0) for a, b in zip(self.buckets, other.buckets,
                                                           strict=True)),
                       max(self.expired - other.expired, 0),
                       max(self.cancelled - other.cancelled, 0))


EMPTY: Final = Timings()


def summed(timings: Iterable[Timings]) -> Timings:
    total = EMPTY
    for item in timings:
        total = total + item
    return total


@dataclass(frozen=True, slots=True)
class MetricsBatch:
    """What one process gathered since its last write.

    ``cron_lag``: the worst lateness (seconds) of the cron slots this process fired, None
    when it fired none. ``orphans_recovered``: jobs it put back from dead processes.
    """

    series: Mapping[SeriesKey, Timings] = field(default_factory=dict)
    orphans_recovered: int = 0
    cron_lag: float | None = None

    def __bool__(self) -> bool:
        return bool(self.series) or self.orphans_recovered > 0 or self.cron_lag is not None


@dataclass(frozen=True, slots=True)
class RunningTotals:
    """Running totals since the namespace was created: of the series asked for, of every
    series together (``everything``), and of recovered orphans."""

    series: Mapping[SeriesKey, Timings]
    everything: Timings
    orphans_recovered: int


@dataclass(frozen=True, slots=True)
class WindowBucket:
    """One minute or hour of a window: ``start`` in epoch seconds; series that ran nothing
    in it are left out."""

    start: int
    series: Mapping[SeriesKey, Timings]


class MetricsStore(Protocol):
    """The metrics of one namespace. Thread-safe.

    Every method raises :class:`~cogworker.core.errors.BrokerUnavailableError` when the
    store cannot be reached and :class:`~cogworker.core.errors.BrokerError` on any other
    failure, the driver's exception as ``__cause__``. ``ValueError`` for a negative limit
    or a step not in :data:`STEPS`.
    """

    def record(self, batch: MetricsBatch, now: float, minute_ttl: int, hour_ttl: int) -> None:
        """Add ``batch`` to the minute and the hour of ``now`` (kept ``minute_ttl`` and
        ``hour_ttl`` seconds after their last write) and to the running totals, in one
        atomic step. The cron lag is kept as the minute's maximum. An empty batch writes
        nothing. The cost grows with the series in the batch, never with its runs."""
        ...

    def top_series(self, limit: int) -> list[SeriesKey]:
        """At most ``limit`` series, most runs ever first (ties: the greater name first,
        as a reversed range of a Redis sorted set orders them)."""
        ...

    def series_of(self, job_class: str, limit: int) -> list[SeriesKey]:
        """At most ``limit`` series of ``job_class`` (one per queue it ran on), by queue."""
        ...

    def series_count(self) -> int:
        """How many series ever ran."""
        ...

    def totals(self, keys: Sequence[SeriesKey]) -> RunningTotals:
        """The running totals of ``keys`` (a series never recorded: zeros), of every series
        together, and the recovered orphans, read together."""
        ...

    def window(self, keys: Sequence[SeriesKey], step: int, first: int,
               last: int) -> list[WindowBucket]:
        """The ``step`` (:data:`MINUTE` or :data:`HOUR`) buckets numbered ``first`` to
        ``last`` (epoch seconds // step, both included, oldest first) for ``keys``, read
        together. A bucket nobody wrote or no longer kept has no series. ``last`` before
        ``first`` gives []."""
        ...

    def cron_lag(self, first_minute: int, last_minute: int) -> float | None:
        """The worst cron lag recorded in those minutes (epoch seconds // 60, both
        included), None when no slot fired in them."""
        ...


METRICS: Final = Extension[MetricsStore](
    "metrics", "per class and queue, per minute and hour: runs, failures, time, histogram")
"""The key of the metrics facet: ``broker.extension(METRICS)``."""


def check_read(limit: int | None = None, step: int | None = None) -> None:
    """The argument checks every store applies (``ValueError`` naming the argument)."""
    if limit is not None and limit < 0:
        raise ValueError(f"a series limit must be 0 or more, not {limit}")
    if step is not None and step not in STEPS:
        raise ValueError(f"a metrics step is {MINUTE} (minutes) or {HOUR} (hours), "
                         f"not {step}")
