"""RedisBroker client-side and bookkeeping writes: store, file, stats, work, reads."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from cogworker.core.broker import WorkRecord
from cogworker.core.errors import BrokerError
from cogworker.core.payload import dumps, new_jid
from cogworker.redis.broker import RedisBroker
from cogworker.redis.connection import make_client
from cogworker.redis.keys import KeySchema
from cogworker.redis.line_socket import LineSocket
from cogworker.redis.push_line import PushLine


@pytest.fixture
def broker(redis_url: str, keys: KeySchema, redis_client: redis.Redis) -> Iterator[RedisBroker]:
    broker = RedisBroker(make_client(redis_url, max_connections=4), keys)
    yield broker
    broker.close()


def job(queue: str = "default", **extra: Any) -> str:
    return dumps({"class": "Work", "args": [1], "queue": queue, "jid": new_jid(), **extra})


class RoundTrips:
    """Counts writes to the socket (one per round trip) of the client's idle connection.

    The client must have exactly one connection open (call ``ping()`` first): the pool
    hands the most recently released connection out again.
    """

    def __init__(self, monkeypatch: pytest.MonkeyPatch, client: redis.Redis) -> None:
        self.count = 0
        pool = client.connection_pool
        try:
            connection: Any = pool.get_connection()
        except TypeError:  # redis-py 5 wants a command name, which 6 on deprecates
            connection = pool.get_connection("PING")
        pool.release(connection)
        original = connection.send_packed_command

        def counting(command: Any, check_health: bool = True) -> None:
            self.count += 1
            original(command, check_health)

        monkeypatch.setattr(connection, "send_packed_command", counting)


def command_calls(client: redis.Redis) -> dict[str, int]:
    stats = client.info("commandstats")
    return {name.removeprefix("cmdstat_"): int(value["calls"]) for name, value in stats.items()}


def calls_delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {name: after[name] - before.get(name, 0) for name in after
            if after[name] != before.get(name, 0)}


def test_store_pushes_one_job_in_one_round_trip(
    broker: RedisBroker, keys: KeySchema, redis_client: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    broker.ping()  # open the connection first: its handshake is not part of the store
    listener = redis_client.pubsub()  # type: ignore[no-untyped-call, unused-ignore]
    listener.subscribe(keys.wakeup)  # a worker waiting on several queues: PUBLISH is sent
    assert listener.get_message(timeout=5.0) is not None  # the subscription is confirmed
    warm_up = job()
    broker.queues.store([("default", warm_up)], [])  # registers the queue (push.lua)
    broker.queues.store([("default", warm_up)], [])  # opens the push connection
    redis_client.lpop(keys.queue("default"))
    raw = job()
    pooled = RoundTrips(monkeypatch, broker.client)
    writes: list[bytes] = []
    original_write = PushLine._write

    def counting_write(line: PushLine, sock: LineSocket, frame: bytes) -> None:
        writes.append(frame)
        original_write(line, sock, frame)

    monkeypatch.setattr(PushLine, "_write", counting_write)
    before = command_calls(redis_client)
    broker.queues.store([("default", raw)], [])
    delta = calls_delta(before, command_calls(redis_client))
    assert len(writes) == 1  # one frame: LPUSH and PUBLISH together
    assert pooled.count == 0  # the push connection, not the pool's
    delta.pop("info", None)  # the INFO call that took the "before" numbers
    assert delta == {"lpush": 1, "publish": 1}  # the queue is known: no script, no SADD
    assert redis_client.lrange(keys.queue("default"), 0, -1) == [raw.encode(), warm_up.encode()]
    assert redis_client.smembers(keys.queues) == {b"default"}
    listener.close()


def test_store_bulk_and_scheduled_in_one_round_trip(
    broker: RedisBroker, keys: KeySchema, redis_client: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    broker.ping()
    immediate = [("a", job("a")), ("b", job("b")), ("a", job("a")), ("a", job("a"))]
    later = time.time() + 3600
    scheduled = [(later, job("c", at=later)), (later + 1, job("c", at=later + 1))]
    trips = RoundTrips(monkeypatch, broker.client)
    before = command_calls(redis_client)
    broker.queues.store(immediate, scheduled)
    delta = calls_delta(before, command_calls(redis_client))
    assert trips.count == 1
    assert delta["lpush"] == 2  # one LPUSH per distinct queue
    assert delta["zadd"] == 1
    assert delta["publish"] == 2
    assert redis_client.llen(keys.queue("a")) == 3
    assert redis_client.llen(keys.queue("b")) == 1
    stored = redis_client.zrange(keys.schedule, 0, -1, withscores=True)
    assert stored == [(raw.encode(), at) for at, raw in scheduled]
    assert redis_client.smembers(keys.queues) == {b"a", b"b"}  # scheduled queues wait


def test_store_keeps_fifo_order_for_right_pops(
    broker: RedisBroker, keys: KeySchema, redis_client: redis.Redis
) -> None:
    raws = [job() for _ in range(5)]
    broker.queues.store([("default", raw) for raw in raws[:3]], [])
    broker.queues.store([("default", raw) for raw in raws[3:]], [])
    popped = [redis_client.rpop(keys.queue("default")) for _ in raws]
    assert popped == [raw.encode() for raw in raws]


def test_store_with_nothing_sends_nothing(
    broker: RedisBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    broker.ping()
    trips = RoundTrips(monkeypatch, broker.client)
    broker.queues.store([], [])
    assert trips.count == 0


def test_store_announces_queues_on_the_wakeup_channel(broker: RedisBroker) -> None:
    with broker.queues.subscribe_wakeups() as wakeups:
        broker.queues.store([("mail", job("mail")), ("mail", job("mail"))], [])
        assert wakeups.get(5.0) == "mail"
        assert wakeups.get(0.05) is None  # once per queue, not per job


def test_file_job_adds_to_retry_without_trimming(
    redis_url: str, keys: KeySchema, redis_client: redis.Redis
) -> None:
    broker = RedisBroker(make_client(redis_url, max_connections=2), keys, dead_max_jobs=1)
    raws = [job() for _ in range(3)]
    for score, raw in enumerate(raws):
        broker.sets.file("retry", 100.0 + score, raw)
    assert redis_client.zcard(keys.retry) == 3
    broker.close()


def test_dead_is_capped_by_count_oldest_first(
    redis_url: str, keys: KeySchema, redis_client: redis.Redis
) -> None:
    broker = RedisBroker(make_client(redis_url, max_connections=2), keys, dead_max_jobs=3)
    now = time.time()
    raws = [job() for _ in range(5)]
    for offset, raw in enumerate(raws):
        broker.sets.file("dead", now + offset, raw)
    kept = redis_client.zrange(keys.dead, 0, -1)
    assert kept == [raw.encode() for raw in raws[2:]]
    broker.close()


def test_dead_is_capped_by_age(
    redis_url: str, keys: KeySchema, redis_client: redis.Redis
) -> None:
    broker = RedisBroker(make_client(redis_url, max_connections=2), keys, dead_timeout=100.0)
    old, recent, new = job(), job(), job()
    now = time.time()
    redis_client.zadd(keys.dead, {old: now - 1000, recent: now - 10})
    broker.sets.file("dead", now, new)
    assert redis_client.zrange(keys.dead, 0, -1) == [recent.encode(), new.encode()]
    broker.close()


def test_file_job_into_a_wrong_type_key_raises(
    broker: RedisBroker, keys: KeySchema, redis_client: redis.Redis
) -> None:
    redis_client.set(keys.dead, "not a sorted set")
    with pytest.raises(BrokerError) as caught:
        broker.sets.file("dead", time.time(), job())
    assert isinstance(caught.value.__cause__, redis.ResponseError)


def test_record_outcomes_counts_totals_and_this_hour(
    broker: RedisBroker, keys: KeySchema, redis_client: redis.Redis
) -> None:
    now = 1_700_000_123.0
    hour_key = keys.throughput(int(now // 3600))
    broker.stats.record_outcomes(3, 0, now)
    broker.stats.record_outcomes(1, 2, now)
    assert redis_client.get(keys.stats_processed) == b"4"
    assert redis_client.get(keys.stats_failed) == b"2"
    assert redis_client.hgetall(hour_key) == {b"processed": b"4", b"failed": b"2"}
    assert 0 < redis_client.ttl(hour_key) <= 25 * 3600


def test_record_outcomes_skips_zero_fields(
    broker: RedisBroker, keys: KeySchema, redis_client: redis.Redis
) -> None:
    now = 1_700_000_123.0
    broker.stats.record_outcomes(0, 0, now)
    broker.stats.record_outcomes(2, 0, now)
    assert redis_client.hgetall(keys.throughput(int(now // 3600))) == {b"processed": b"2"}
    assert redis_client.exists(keys.stats_failed) == 0


def test_set_and_clear_work(
    broker: RedisBroker, keys: KeySchema, redis_client: redis.Redis
) -> None:
    entry = dumps({"queue": "default", "payload": {"class": "Work"}, "run_at": 1})
    broker.processes.set_work("host:1:abc", "tid1",
                              WorkRecord("default", {"class": "Work"}, 1.0))
    assert redis_client.hgetall(keys.workers("host:1:abc")) == {b"tid1": entry.encode()}
    broker.processes.clear_work("host:1:abc", "tid1")
    assert redis_client.exists(keys.workers("host:1:abc")) == 0


def test_paused_queues_are_read_as_text(
    broker: RedisBroker, keys: KeySchema, redis_client: redis.Redis
) -> None:
    assert broker.queues.paused() == set()
    redis_client.sadd(keys.paused_queues, "mail", "reports")
    assert broker.queues.paused() == {"mail", "reports"}


def test_server_time_is_the_servers_clock(
    broker: RedisBroker, redis_client: redis.Redis
) -> None:
    seconds, micros = redis_client.time()
    assert broker.server_time() >= seconds + micros / 1_000_000


def test_server_version_is_a_tuple_of_ints(
    broker: RedisBroker, redis_client: redis.Redis
) -> None:
    expected = tuple(int(part) for part in str(redis_client.info()["redis_version"]).split("."))
    assert broker.server_version() == expected


@pytest.mark.parametrize(
    ("reported", "expected"),
    [("7.2.4", (7, 2, 4)), (7.2, (7, 2)), ("8.0.0-rc1", (8, 0, 0)), ("unknown", (99,)),
     ("", (99,))],
)
def test_server_version_parses_odd_values(
    broker: RedisBroker, monkeypatch: pytest.MonkeyPatch, reported: object,
    expected: tuple[int, ...],
) -> None:
    monkeypatch.setattr(broker.client, "info", lambda *_: {"redis_version": reported})
    assert broker.server_version() == expected


def test_the_first_push_of_a_queue_registers_it_atomically(
    broker: RedisBroker, keys: KeySchema, redis_client: redis.Redis,
) -> None:
    before = command_calls(redis_client)
    broker.queues.store([("fresh", job("fresh"))], [])
    delta = calls_delta(before, command_calls(redis_client))
    assert delta["sadd"] == 1 and delta["lpush"] == 1 and delta["publish"] == 1
    assert redis_client.smembers(keys.queues) == {b"fresh"}
    redis_client.delete(keys.queues)
    broker.queues.pusher.forget()
    broker.queues.store([("fresh", job("fresh"))], [])
    assert redis_client.smembers(keys.queues) == {b"fresh"}
    assert redis_client.llen(keys.queue("fresh")) == 2


def test_a_push_onto_a_wrong_type_key_raises_broker_error(
    broker: RedisBroker, keys: KeySchema, redis_client: redis.Redis,
) -> None:
    broker.queues.store([("q", job("q"))], [])
    redis_client.delete(keys.queue("q"))
    redis_client.set(keys.queue("q"), "not a list")
    with pytest.raises(BrokerError) as info:
        broker.queues.store([("q", job("q"))], [])
    assert "WRONGTYPE" in str(info.value)
    broker.queues.store([("other", job("other"))], [])  # the connection is still usable
    assert redis_client.llen(keys.queue("other")) == 1
