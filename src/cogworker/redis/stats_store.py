"""``broker.stats`` on Redis: ``<ns>:stats:processed``/``failed`` and hourly hashes.

The hour of ``now`` is the hash ``<ns>:throughput:<epoch hour>`` with ``processed`` and
``failed`` fields, kept :data:`THROUGHPUT_TTL` seconds after its last write.
"""

from __future__ import annotations

from typing import Any

import redis

from cogworker.core.broker import THROUGHPUT_HOURS_KEPT, HourlyCount, StatsTotals
from cogworker.redis.errors import translate_errors
from cogworker.redis.keys import KeySchema
from cogworker.redis.replies import as_text

THROUGHPUT_TTL = THROUGHPUT_HOURS_KEPT * 3600


def count_of(value: bytes | str | None) -> int:
    """A stored counter as an int; 0 for one never written or unreadable."""
    if value is None:
        return 0
    try:
        return int(as_text(value))
    except ValueError:
        return 0


class RedisStatsStore:
    """:class:`cogworker.core.broker.StatsStore` on one client and key schema."""

    def __init__(self, client: redis.Redis, keys: KeySchema) -> None:
        self._client = client
        self._keys = keys

    def record_outcomes(self, processed: int, failed: int, now: float) -> None:
        """INCRBY the totals and HINCRBY the hour's counts (kept 25 h), one MULTI."""
        counts = {name: count for name, count in (("processed", processed),
                                                  ("failed", failed)) if count}
        if not counts:
            return
        hour_key = self._keys.throughput(int(now // 3600))
        totals = {"processed": self._keys.stats_processed, "failed": self._keys.stats_failed}
        pipe = self._client.pipeline(transaction=True)
        for name, count in counts.items():
            pipe.incrby(totals[name], count)
            pipe.hincrby(hour_key, name, count)
        pipe.expire(hour_key, THROUGHPUT_TTL)
        with translate_errors():
            pipe.execute()

    def totals(self) -> StatsTotals:
        with translate_errors():
            processed, failed = self._client.mget([self._keys.stats_processed,
                                                   self._keys.stats_failed])
        return StatsTotals(count_of(processed), count_of(failed))

    def throughput(self, first_hour: int, last_hour: int) -> list[HourlyCount]:
        hours = range(first_hour, last_hour + 1)
        if not hours:
            return []
        pipe = self._client.pipeline(transaction=False)
        for hour in hours:
            pipe.hmget(self._keys.throughput(hour), ["processed", "failed"])
        with translate_errors():
            replies: list[Any] = pipe.execute()
        return [HourlyCount(hour, count_of(processed), count_of(failed))
                for hour, (processed, failed) in zip(hours, replies, strict=True)]
