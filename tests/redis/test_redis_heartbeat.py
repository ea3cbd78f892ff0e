"""Heartbeat records: presence, registries, live queues, last beat, clean removal."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import cast

import pytest
import redis

from cogworker.core.broker import WorkRecord
from cogworker.core.errors import BrokerError
from cogworker.redis.broker import RedisBroker
from cogworker.redis.connection import make_client
from cogworker.redis.heartbeat_store import LIVE_QUEUES_KEPT
from cogworker.redis.keys import KeySchema

IDENTITY = "host:123:abcdefabcdef"
INFO = '{"hostname":"host","pid":123}'
WORK = WorkRecord("default", {"class": "Work"}, 1.0)


@pytest.fixture
def broker(redis_url: str, keys: KeySchema, redis_client: redis.Redis) -> Iterator[RedisBroker]:
    broker = RedisBroker(make_client(redis_url, max_connections=4), keys)
    yield broker
    broker.close()


def beat(broker: RedisBroker, *, reliable: bool = True, quiet: bool = False) -> None:
    broker.processes.beat(IDENTITY, {"hostname": "host", "pid": 123}, 3, quiet,
                          ["default", "mail", "default"], 60, holds_jobs=reliable)


def test_beat_writes_presence_and_registries(
    broker: RedisBroker, keys: KeySchema, redis_client: redis.Redis
) -> None:
    broker.processes.set_work(IDENTITY, "tid", WORK)
    beat(broker)
    redis_now = int(redis_client.time()[0])
    presence = keys.process(IDENTITY)
    assert redis_client.hgetall(presence) == {
        b"info": INFO.encode(), b"busy": b"3", b"quiet": b"false"}
    assert 0 < redis_client.ttl(presence) <= 60
    assert 0 < redis_client.ttl(keys.workers(IDENTITY)) <= 60
    assert redis_client.smembers(keys.processes) == {IDENTITY.encode()}
    assert redis_client.smembers(keys.queues) == {b"default", b"mail"}
    live = dict(cast("list[tuple[bytes, float]]",
                     redis_client.zrange(keys.live_queues, 0, -1, withscores=True)))
    assert set(live) == {b"default", b"mail"}
    assert all(redis_now - 5 <= score <= redis_now for score in live.values())
    assert redis_client.smembers(keys.inprogress_identities) == {IDENTITY.encode()}
    last_beat = int(redis_client.hget(keys.last_beat, IDENTITY) or 0)
    assert redis_now - 5 <= last_beat <= redis_now


def test_quiet_basic_process_beat(
    broker: RedisBroker, keys: KeySchema, redis_client: redis.Redis
) -> None:
    beat(broker, reliable=False, quiet=True)
    assert redis_client.hget(keys.process(IDENTITY), "quiet") == b"true"
    assert redis_client.exists(keys.inprogress_identities, keys.last_beat) == 0


def test_beat_prunes_live_queues_older_than_a_day(
    broker: RedisBroker, keys: KeySchema, redis_client: redis.Redis
) -> None:
    redis_now = int(redis_client.time()[0])
    redis_client.zadd(keys.live_queues, {"abandoned": redis_now - LIVE_QUEUES_KEPT - 10,
                                         "recent": redis_now - 60})
    beat(broker)
    members = set(redis_client.zrange(keys.live_queues, 0, -1))
    assert members == {b"recent", b"default", b"mail"}


def test_a_failing_secondary_write_is_logged_and_the_beat_counts(
    broker: RedisBroker, keys: KeySchema, redis_client: redis.Redis,
    caplog: pytest.LogCaptureFixture,
) -> None:
    redis_client.set(keys.processes, "wrong type")
    with caplog.at_level(logging.ERROR, logger="cogworker.redis.heartbeat_store"):
        beat(broker)
    assert "could not register the process" in caplog.text
    assert redis_client.exists(keys.process(IDENTITY)) == 1
    assert redis_client.hexists(keys.last_beat, IDENTITY)  # the later writes still happened


def test_a_failing_presence_write_fails_the_beat(
    broker: RedisBroker, keys: KeySchema, redis_client: redis.Redis
) -> None:
    redis_client.set(keys.process(IDENTITY), "wrong type")
    with pytest.raises(BrokerError) as caught:
        beat(broker)
    assert isinstance(caught.value.__cause__, redis.ResponseError)
    assert redis_client.exists(keys.processes) == 0


def test_remove_process_forgets_everything_when_nothing_is_in_progress(
    broker: RedisBroker, keys: KeySchema, redis_client: redis.Redis
) -> None:
    broker.processes.set_work(IDENTITY, "tid", WORK)
    beat(broker)
    broker.processes.remove(IDENTITY)
    assert redis_client.exists(keys.process(IDENTITY), keys.workers(IDENTITY)) == 0
    assert redis_client.sismember(keys.processes, IDENTITY) == 0
    assert redis_client.sismember(keys.inprogress_identities, IDENTITY) == 0
    assert redis_client.hexists(keys.last_beat, IDENTITY) == 0


def test_remove_process_keeps_the_registry_while_jobs_are_in_progress(
    broker: RedisBroker, keys: KeySchema, redis_client: redis.Redis
) -> None:
    beat(broker)
    redis_client.lpush(keys.inprogress(IDENTITY), '{"queue":"default"}')
    broker.processes.remove(IDENTITY)
    assert redis_client.exists(keys.process(IDENTITY)) == 0
    assert redis_client.sismember(keys.processes, IDENTITY) == 0
    assert redis_client.sismember(keys.inprogress_identities, IDENTITY) == 1
    assert redis_client.hexists(keys.last_beat, IDENTITY) == 1
