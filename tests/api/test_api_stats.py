"""Stats: counters, enqueued over registered queues, set sizes, throughput, INFO."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
import redis

from cogworker.api import Stats
from cogworker.redis.broker import RedisBroker
from cogworker.redis.keys import KeySchema

MakeJob = Callable[..., str]


@dataclass
class FakeApp:
    broker: RedisBroker


def test_counters_are_zero_when_nothing_was_recorded(broker: RedisBroker) -> None:
    stats = Stats(broker)
    assert stats.to_dict() == {"processed": 0, "failed": 0, "enqueued": 0, "scheduled": 0,
                               "retry": 0, "dead": 0}


def test_counters_read_the_stored_values(broker: RedisBroker, redis_client: redis.Redis,
                                         keys: KeySchema, make_job: MakeJob) -> None:
    redis_client.set(keys.stats_processed, 12)
    redis_client.set(keys.stats_failed, 3)
    redis_client.zadd(keys.retry, {make_job(): 1.0, make_job(): 2.0})
    redis_client.zadd(keys.schedule, {make_job(): 1.0})
    redis_client.zadd(keys.dead, {make_job(): 1.0, make_job(): 2.0, make_job(): 3.0})

    stats = Stats(FakeApp(broker))  # an App-like object is accepted too

    assert (stats.processed, stats.failed) == (12, 3)
    assert (stats.retry_size, stats.scheduled_size, stats.dead_size) == (2, 1, 3)


def test_enqueued_sums_every_registered_queue(broker: RedisBroker, redis_client: redis.Redis,
                                             keys: KeySchema, make_job: MakeJob) -> None:
    redis_client.sadd(keys.queues, "default", "mail", "empty")
    redis_client.lpush(keys.queue("default"), make_job(), make_job())
    redis_client.lpush(keys.queue("mail"), make_job("mail"))
    redis_client.lpush(keys.queue("unregistered"), make_job("unregistered"))

    assert Stats(broker).enqueued == 3


def test_throughput_covers_every_hour_oldest_first(broker: RedisBroker,
                                                   redis_client: redis.Redis,
                                                   keys: KeySchema) -> None:
    now = 1_700_000_000.0  # 2023-11-14T22:13:20Z
    hour = int(now // 3600)
    redis_client.hset(keys.throughput(hour), mapping={"processed": 5, "failed": 1})
    redis_client.hset(keys.throughput(hour - 2), mapping={"processed": 7})

    points = Stats(broker).throughput(hours=24, now=now)

    assert len(points) == 24
    assert points[-1] == {"time": "2023-11-14T22:00:00+00:00", "processed": 5, "failed": 1}
    assert points[-2] == {"time": "2023-11-14T21:00:00+00:00", "processed": 0, "failed": 0}
    assert points[-3] == {"time": "2023-11-14T20:00:00+00:00", "processed": 7, "failed": 0}
    assert points[0]["time"] == "2023-11-13T23:00:00+00:00"


def test_throughput_needs_at_least_one_hour(broker: RedisBroker) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        Stats(broker).throughput(hours=0)


def test_redis_info_is_flat(broker: RedisBroker, redis_client: redis.Redis,
                            keys: KeySchema) -> None:
    redis_client.set(keys.stats_processed, 1)  # makes sure a keyspace section exists

    info = Stats(broker).redis_info()

    assert "redis_version" in info
    assert all(not isinstance(value, dict) for value in info.values())
    assert "keys=" in info["db0"]


def test_a_source_without_broker_is_refused() -> None:
    with pytest.raises(TypeError, match=r"or an App with a \.broker"):
        Stats(object())  # type: ignore[arg-type]
