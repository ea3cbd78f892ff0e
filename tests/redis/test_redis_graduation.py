"""Graduation of the schedule and retry sets: due entries move once, bad ones are handled."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any, cast

import pytest
import redis

from cogworker.core.broker import DEFER_DELAY, GraduationReport
from cogworker.core.errors import BrokerUnavailableError
from cogworker.core.payload import UNPARSEABLE_CLASS, dumps, new_jid
from cogworker.redis.broker import RedisBroker
from cogworker.redis.connection import make_client
from cogworker.redis.keys import KeySchema
from cogworker.redis.server_process import free_port


@pytest.fixture
def broker(redis_url: str, keys: KeySchema, redis_client: redis.Redis) -> Iterator[RedisBroker]:
    broker = RedisBroker(make_client(redis_url, max_connections=4), keys)
    yield broker
    broker.close()


def job(queue: str = "default", **extra: Any) -> str:
    return dumps({"class": "Work", "args": [2**70], "queue": queue, "jid": new_jid(), **extra})


def test_due_entries_move_and_future_ones_stay(
    broker: RedisBroker, keys: KeySchema, redis_client: redis.Redis
) -> None:
    now = time.time()
    due = [job(), job("mail")]
    future = job()
    redis_client.zadd(keys.schedule, {due[0]: now - 10, due[1]: now, future: now + 60})
    report = broker.sets.graduate("schedule", now, 50)
    assert report == GraduationReport(moved=2)
    assert redis_client.zrange(keys.schedule, 0, -1) == [future.encode()]
    assert redis_client.llen(keys.queue("default")) == 1
    assert redis_client.llen(keys.queue("mail")) == 1
    assert redis_client.smembers(keys.queues) == {b"default", b"mail"}


def test_graduated_payload_is_restamped_and_otherwise_unchanged(
    broker: RedisBroker, keys: KeySchema, redis_client: redis.Redis
) -> None:
    now = time.time()
    raw = job("default", retry_count=2, enqueued_at=1.5)
    redis_client.zadd(keys.retry, {raw: now - 1})
    broker.sets.graduate("retry", now, 50)
    moved = json.loads(redis_client.lindex(keys.queue("default"), 0) or b"null")
    original = json.loads(raw)
    assert moved["enqueued_at"] == now
    assert {k: v for k, v in moved.items() if k != "enqueued_at"} == {
        k: v for k, v in original.items() if k != "enqueued_at"}
    assert moved["args"] == [2**70]  # big integers survive


def test_graduation_respects_the_limit_oldest_first(
    broker: RedisBroker, keys: KeySchema, redis_client: redis.Redis
) -> None:
    now = time.time()
    raws = [job() for _ in range(5)]
    redis_client.zadd(keys.schedule, {raw: now - 100 + i for i, raw in enumerate(raws)})
    assert broker.sets.graduate("schedule", now, 2).moved == 2
    assert redis_client.zrange(keys.schedule, 0, -1) == [raw.encode() for raw in raws[2:]]


def test_graduation_wakes_up_the_queue(broker: RedisBroker, keys: KeySchema,
                                       redis_client: redis.Redis) -> None:
    redis_client.zadd(keys.schedule, {job("mail"): 1.0})
    with broker.queues.subscribe_wakeups() as wakeups:
        broker.sets.graduate("schedule", time.time(), 50)
        assert wakeups.get(5.0) == "mail"


def test_two_concurrent_graduators_push_every_entry_exactly_once(
    redis_url: str, keys: KeySchema, redis_client: redis.Redis
) -> None:
    now = time.time()
    raws = [job() for _ in range(300)]
    redis_client.zadd(keys.schedule, dict.fromkeys(raws, now - 1))
    brokers = [RedisBroker(make_client(redis_url, max_connections=2), keys) for _ in range(3)]
    reports: list[GraduationReport] = []
    start = threading.Barrier(len(brokers))

    def graduate_all(broker: RedisBroker) -> None:
        start.wait()
        while redis_client.zcard(keys.schedule):
            reports.append(broker.sets.graduate("schedule", now, 50))

    threads = [threading.Thread(target=graduate_all, args=(b,)) for b in brokers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    for broker in brokers:
        broker.close()
    queued = [json.loads(raw)["jid"] for raw in redis_client.lrange(keys.queue("default"), 0, -1)]
    assert sorted(queued) == sorted(json.loads(raw)["jid"] for raw in raws)
    assert sum(report.moved for report in reports) == 300


def test_entry_whose_queue_key_has_the_wrong_type_is_deferred(
    broker: RedisBroker, keys: KeySchema, redis_client: redis.Redis
) -> None:
    now = time.time()
    blocked, fine = job("broken"), job("default")
    redis_client.set(keys.queue("broken"), "a string, not a list")
    redis_client.zadd(keys.schedule, {blocked: now - 2, fine: now - 1})
    report = broker.sets.graduate("schedule", now, 50)
    assert report == GraduationReport(moved=1, deferred=1)
    assert redis_client.zscore(keys.schedule, blocked) == now + DEFER_DELAY
    assert redis_client.llen(keys.queue("default")) == 1
    assert redis_client.get(keys.queue("broken")) == b"a string, not a list"


@pytest.mark.parametrize(
    "raw",
    [b"not json at all", b"[1, 2]", b'{"class": "Work", "args": []}', b'{"queue": ""}',
     b'{"queue": "q", "bad": "\xff\xfe"}'],
    ids=["not-json", "array", "no-queue", "empty-queue", "invalid-utf8"],
)
def test_invalid_entry_is_buried_in_dead_with_its_bytes(
    broker: RedisBroker, keys: KeySchema, redis_client: redis.Redis, raw: bytes
) -> None:
    now = time.time()
    redis_client.zadd(keys.retry, {raw: now - 1})
    report = broker.sets.graduate("retry", now, 50)
    assert report == GraduationReport(buried=1)
    assert redis_client.zcard(keys.retry) == 0
    [(wrapper_raw, score)] = cast("list[tuple[bytes, float]]",
                                  redis_client.zrange(keys.dead, 0, -1, withscores=True))
    wrapper = json.loads(wrapper_raw)
    assert score == now
    assert wrapper["class"] == UNPARSEABLE_CLASS
    assert wrapper["raw_payload"] == raw.decode("utf-8", "replace")
    assert wrapper["retry"] is False
    assert wrapper["queue"] is None
    assert redis_client.get(keys.stats_failed) == b"1"
    assert redis_client.hget(keys.throughput(int(now // 3600)), "failed") == b"1"


def test_entry_gone_before_the_claim_is_skipped(
    broker: RedisBroker, keys: KeySchema, redis_client: redis.Redis
) -> None:
    raw = job()
    redis_client.zadd(keys.retry, {raw: 1.0})
    assert broker.sets.requeue("retry", raw, job(), "default") is True
    assert broker.sets.requeue("retry", raw, job(), "default") is False
    assert redis_client.llen(keys.queue("default")) == 1


def test_unavailable_redis_propagates(keys: KeySchema) -> None:
    broker = RedisBroker(make_client(f"redis://127.0.0.1:{free_port()}/0",
                                     max_connections=1), keys)
    with pytest.raises(BrokerUnavailableError):
        broker.sets.graduate("schedule", time.time(), 50)
    broker.close()
