"""``broker.extension(METRICS)`` on Redis: per-minute and per-hour hashes, running totals.

Layout (see ``docs/reference/redis-keys.md``): ``<ns>:metrics:m:<epoch minute>`` and
``<ns>:metrics:h:<epoch hour>`` hashes whose fields are ``<class>\\x1f<queue>\\x1f<name>``
(``p`` processed, ``f`` failed, ``ms`` total milliseconds, ``b0``...``b19`` the histogram,
``x`` expired and ``c`` cancelled jobs;
only the non-zero ones are written), ``<ns>:metrics:totals`` with the same fields since the
start plus every series together, and two sorted sets of the series: ``metrics:rank`` by
runs ever (the exporter's top N), ``metrics:names`` by name (the series of one class).
One Lua script writes a batch (``metrics_record.lua``); each read is one pipeline of
``HMGET``s naming exactly the fields of the series asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import redis

from cogworker.core.broker.metrics import (
    BUCKET_COUNT,
    EMPTY,
    HOUR,
    MINUTE,
    MetricsBatch,
    RunningTotals,
    SeriesKey,
    Timings,
    WindowBucket,
    check_read,
)
from cogworker.redis.errors import translate_errors
from cogworker.redis.keys import KeySchema
from cogworker.redis.replies import as_text
from cogworker.redis.scripts import KeyOrArg, Scripts

SEPARATOR = "\x1f"
EVERYTHING = "\x1e"
ORPHANS_FIELD = "\x1eorphans"
CRON_LAG_FIELD = "\x1ecron_lag"
COUNT_NAMES = ("p", "f", *(f"b{i}" for i in range(BUCKET_COUNT)), "x", "c")
FIELD_NAMES = ("ms", *COUNT_NAMES)


def member_of(key: SeriesKey) -> str:
    return f"{key.job_class}{SEPARATOR}{key.queue}"


def key_of(member: bytes | str) -> SeriesKey:
    job_class, _, queue = as_text(member).partition(SEPARATOR)
    return SeriesKey(job_class, queue)


def fields_of(member: str) -> list[str]:
    return [f"{member}{SEPARATOR}{name}" for name in FIELD_NAMES]


def _number(value: bytes | str | None) -> float:
    if value is None:
        return 0.0
    try:
        return float(as_text(value))
    except ValueError:
        return 0.0


def timings_from(values: Sequence[bytes | str | None]) -> Timings:
    """A series' fields, in :data:`FIELD_NAMES` order, as :class:`Timings`."""
    ms, processed, failed, *rest = (_number(value) for value in values)
    buckets, (expired, cancelled) = rest[:BUCKET_COUNT], rest[BUCKET_COUNT:]
    return Timings(int(processed), int(failed), ms, tuple(int(count) for count in buckets),
                   int(expired), int(cancelled))


def batch_arguments(batch: MetricsBatch) -> list[KeyOrArg]:
    """The script's per-series arguments: member, runs, ms, K and K (name, count) pairs."""
    arguments: list[KeyOrArg] = [len(batch.series)]
    for key, timings in sorted(batch.series.items()):
        counts = [("p", timings.processed), ("f", timings.failed),
                  *((f"b{i}", count) for i, count in enumerate(timings.buckets)),
                  ("x", timings.expired), ("c", timings.cancelled)]
        nonzero = [(name, count) for name, count in counts if count]
        arguments += [member_of(key), timings.runs, repr(round(timings.total_ms, 3)),
                      len(nonzero)]
        for name, count in nonzero:
            arguments += [name, count]
    return arguments


class RedisMetricsStore:
    """:class:`cogworker.core.broker.metrics.MetricsStore` on one client and key schema."""

    def __init__(self, client: redis.Redis, keys: KeySchema, scripts: Scripts) -> None:
        self._client = client
        self._keys = keys
        self._scripts = scripts

    def record(self, batch: MetricsBatch, now: float, minute_ttl: int, hour_ttl: int) -> None:
        if not batch:
            return
        keys = [self._keys.metrics_bucket(MINUTE, int(now // MINUTE)),
                self._keys.metrics_bucket(HOUR, int(now // HOUR)),
                self._keys.metrics_totals, self._keys.metrics_rank, self._keys.metrics_names]
        lag = "" if batch.cron_lag is None else repr(round(batch.cron_lag, 3))
        args: list[KeyOrArg] = [max(int(minute_ttl), 1), max(int(hour_ttl), 1), lag,
                                max(batch.orphans_recovered, 0), *batch_arguments(batch)]
        self._scripts.run("cogworker.redis", "metrics_record", keys, args)

    def top_series(self, limit: int) -> list[SeriesKey]:
        check_read(limit)
        if limit == 0:
            return []
        with translate_errors():
            members: list[Any] = self._client.zrange(self._keys.metrics_rank, 0, limit - 1,
                                                     desc=True)
        return [key_of(member) for member in members]

    def series_of(self, job_class: str, limit: int) -> list[SeriesKey]:
        check_read(limit)
        if limit == 0:
            return []
        prefix = f"{job_class}{SEPARATOR}"
        with translate_errors():
            members: list[Any] = self._client.zrangebylex(
                self._keys.metrics_names, f"[{prefix}", f"({job_class}\x20", 0, limit)
        return [key_of(member) for member in members if as_text(member).startswith(prefix)]

    def series_count(self) -> int:
        with translate_errors():
            return int(self._client.zcard(self._keys.metrics_rank))

    def totals(self, keys: Sequence[SeriesKey]) -> RunningTotals:
        members = [member_of(key) for key in keys]
        fields = [field for member in members for field in fields_of(member)]
        fields += [*fields_of(EVERYTHING), ORPHANS_FIELD]
        with translate_errors():
            values: list[Any] = self._client.hmget(self._keys.metrics_totals, fields)
        width = len(FIELD_NAMES)
        series = {key: timings_from(values[i * width:(i + 1) * width])
                  for i, key in enumerate(keys)}
        everything = timings_from(values[len(keys) * width:(len(keys) + 1) * width])
        return RunningTotals(series, everything, int(_number(values[-1])))

    def window(self, keys: Sequence[SeriesKey], step: int, first: int,
               last: int) -> list[WindowBucket]:
        check_read(step=step)
        numbers = range(first, last + 1)
        if not numbers:
            return []
        if not keys:
            return [WindowBucket(number * step, {}) for number in numbers]
        fields = [field for key in keys for field in fields_of(member_of(key))]
        pipe = self._client.pipeline(transaction=False)
        for number in numbers:
            pipe.hmget(self._keys.metrics_bucket(step, number), fields)
        with translate_errors():
            replies: list[Any] = pipe.execute()
        width = len(FIELD_NAMES)
        buckets = []
        for number, values in zip(numbers, replies, strict=True):
            series = {}
            for i, key in enumerate(keys):
                timings = timings_from(values[i * width:(i + 1) * width])
                if timings != EMPTY:
                    series[key] = timings
            buckets.append(WindowBucket(number * step, series))
        return buckets

    def cron_lag(self, first_minute: int, last_minute: int) -> float | None:
        minutes = range(first_minute, last_minute + 1)
        if not minutes:
            return None
        pipe = self._client.pipeline(transaction=False)
        for minute in minutes:
            pipe.hget(self._keys.metrics_bucket(MINUTE, minute), CRON_LAG_FIELD)
        with translate_errors():
            replies: list[Any] = pipe.execute()
        lags = [_number(reply) for reply in replies if reply is not None]
        return max(lags) if lags else None

