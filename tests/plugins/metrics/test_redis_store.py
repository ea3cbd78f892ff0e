"""The Redis metrics store: its layout, the flush's command count, a lost script cache."""

from __future__ import annotations

import redis

from cogworker.core.broker import MetricsBatch, SeriesKey, Timings
from cogworker.core.broker.metrics import BUCKET_COUNT
from cogworker.redis.keys import KeySchema
from cogworker.redis.metrics_store import RedisMetricsStore
from cogworker.redis.scripts import Scripts

NOW = 1_700_000_040.0
RUN = Timings(1, 0, 2.5, (0, 1) + (0,) * (BUCKET_COUNT - 2))


def test_a_lost_script_cache_is_reloaded(redis_client: redis.Redis, keys: KeySchema) -> None:
    store = RedisMetricsStore(redis_client, keys, Scripts(redis_client))
    key = SeriesKey("Mail", "default")
    store.record(MetricsBatch({key: RUN}), NOW, 60, 60)
    redis_client.script_flush()

    store.record(MetricsBatch({key: RUN}), NOW, 60, 60)

    assert store.totals([key]).series[key] == RUN + RUN


def test_keys_and_fields_follow_the_documented_layout(redis_client: redis.Redis,
                                                      keys: KeySchema) -> None:
    store = RedisMetricsStore(redis_client, keys, Scripts(redis_client))
    store.record(MetricsBatch({SeriesKey("Mail", "low"): RUN}, cron_lag=1.25), NOW, 60, 7200)
    minute = f"{keys.namespace}:metrics:m:{int(NOW // 60)}"

    stored: dict[bytes, bytes] = redis_client.hgetall(minute)  # type: ignore[assignment]
    fields = {name.decode(): value.decode() for name, value in stored.items()}

    assert fields == {"Mail\x1flow\x1fp": "1", "Mail\x1flow\x1fb1": "1",
                      "Mail\x1flow\x1fms": "2.5", "\x1ecron_lag": "1.25"}
    assert 0 < redis_client.ttl(minute) <= 60
    assert 60 < redis_client.ttl(f"{keys.namespace}:metrics:h:{int(NOW // 3600)}") <= 7200
    assert redis_client.zscore(keys.metrics_rank, "Mail\x1flow") == 1
